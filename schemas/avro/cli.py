"""`python -m schemas.avro SCHEMA.cql [--out DIR]`: write the key and value schemas of every
table in a DDL file as `<keyspace>.<table>.key.avsc` and `<keyspace>.<table>.value.avsc`."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from schemas.cql import CqlTypeError
from schemas.tables import DdlError, SchemaSnapshot, parse_ddl_file

from .errors import AvroError
from .table import TableEncoder


def avsc_files(schema: SchemaSnapshot) -> dict[str, str]:
    """File name -> text of the schemas of every table in `schema`."""
    files = {}
    for table in sorted(schema.tables.values(), key=lambda t: (t.keyspace, t.name)):
        encoder = TableEncoder(table, schema.types_of(table.keyspace))
        for part, avro in (("key", encoder.key_schema), ("value", encoder.value_schema)):
            files[f"{table.keyspace}.{table.name}.{part}.avsc"] = json.dumps(avro, indent=2, ensure_ascii=False) + "\n"
    return files


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m schemas.avro",
                                     description="write the Avro key and value schemas of a DDL file's tables")
    parser.add_argument("ddl", type=Path, help="CQL DDL as printed by DESCRIBE ... WITH INTERNALS")
    parser.add_argument("--out", type=Path, help="directory for the .avsc files (default: the DDL's)")
    args = parser.parse_args(argv)
    out = args.out or args.ddl.parent
    try:
        files = avsc_files(parse_ddl_file(args.ddl))
        out.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (out / name).write_text(text, encoding="utf-8")
    except (OSError, DdlError, CqlTypeError, AvroError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for name in files:
        print(out / name)
    return 0
