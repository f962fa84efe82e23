"""Shared by the Avro tests: fastavro round trips, and real Change objects decoded from segments."""
from __future__ import annotations

import decimal
import io
import ipaddress
from pathlib import Path

from fastavro import parse_schema, schemaless_reader, schemaless_writer
from fastavro.validation import validate

from connector.commitlog import SegmentReader
from schemas.avro import SourceInfo
from schemas.avro.names import avro_name
from schemas.cql import Duration, ListType, MapType, SetType, TupleType, UserType, VectorType, hashable
from schemas.tables import SchemaSnapshot, parse_ddl_file
from tests.unit.connector.commitlog.segment_builder import segment
from tests.unit.schemas.cql.samples import elements, i32

ROOT = Path(__file__).resolve().parents[4]
EXAMPLE_DDL = ROOT / "schemas" / "example.cql"
EXAMPLE = parse_ddl_file(EXAMPLE_DDL)
EVERYTHING = EXAMPLE.table_by_name("ringtail_decoder_check", "everything")
SOURCE = SourceInfo(name="demo", cluster="Test Cluster", node="4f7e9a3c-0000-4000-8000-000000000001")
PROCESSED_MS = 1795323700000


def write(schema: dict, datum) -> bytes:
    """`datum` validated against `schema` and written with fastavro."""
    parsed = parse_schema(schema)
    validate(datum, parsed, raise_errors=True)
    out = io.BytesIO()
    schemaless_writer(out, parsed, datum)
    return out.getvalue()


def read(data: bytes, writer_schema: dict, reader_schema: dict | None = None):
    return schemaless_reader(io.BytesIO(data), parse_schema(writer_schema),
                             parse_schema(reader_schema) if reader_schema else None)


def round_trip(schema: dict, datum, reader_schema: dict | None = None):
    return read(write(schema, datum), schema, reader_schema)


def frozen_list(*values: bytes) -> bytes:
    """A serialized frozen list or set."""
    return i32(len(values)) + elements(*values)


def frozen_map(*entries: tuple[bytes, bytes]) -> bytes:
    return i32(len(entries)) + elements(*(blob for entry in entries for blob in entry))


def decode_segment(directory: Path, schema: SchemaSnapshot, *mutations: bytes, segment_id: int = 1795400000000):
    """The changes of a segment holding `mutations`, read by the commit log reader."""
    path = directory / f"CommitLog-7-{segment_id}.log"
    path.write_bytes(segment(segment_id, [list(mutations)]))
    with SegmentReader(path, schema) as reader:
        return list(reader.changes())


def record_names(schema) -> list[str]:
    """Full names of the records a schema defines, in order."""
    names = []

    def walk(node):
        if isinstance(node, list):
            for branch in node:
                walk(branch)
        elif isinstance(node, dict):
            if node.get("type") == "record":
                names.append(f"{node['namespace']}.{node['name']}")
                for f in node["fields"]:
                    walk(f["type"])
            else:
                walk(node.get("items"))
                walk(node.get("values"))

    walk(schema)
    return names


def restore(cql, datum):
    """The decoder's Python value back from what fastavro reads: proves the mapping lossless."""
    if datum is None:
        return None
    if isinstance(cql, (ListType, SetType, VectorType)):
        return [restore(cql.element, d) for d in datum]
    if isinstance(cql, MapType):
        pairs = datum.items() if isinstance(datum, dict) else ((e["key"], e["value"]) for e in datum)
        return {hashable(restore(cql.key, k)): restore(cql.value, v) for k, v in pairs}
    if isinstance(cql, TupleType):
        return tuple(restore(t, datum[f"field{i}"]) for i, t in enumerate(cql.elements, 1))
    if isinstance(cql, UserType):
        return {n: restore(t, datum[avro_name(n)]) for n, t in zip(cql.field_names, cql.field_types)}
    back = {"varint": int, "decimal": decimal.Decimal, "inet": ipaddress.ip_address,
            "duration": lambda d: Duration(**d)}.get(cql.cql)
    return datum if back is None else back(datum)

