"""schemas/*.avsc are the generator's output for schemas/example.cql, which uses every CQL type."""
import json

from fastavro import parse_schema

from schemas.avro.cli import avsc_files, main
from schemas.cql import NATIVE_TYPES, CqlType, ListType, MapType, SetType, TupleType, UserType, VectorType, parse_type
from tests.unit.schemas.avro.support import EXAMPLE, EXAMPLE_DDL

SCHEMAS = EXAMPLE_DDL.parent


def test_checked_in_schemas_match_the_generator():
    generated = avsc_files(EXAMPLE)
    assert sorted(p.name for p in SCHEMAS.glob("*.avsc")) == sorted(generated)
    for name, text in generated.items():
        assert (SCHEMAS / name).read_text(encoding="utf-8") == text, "run: python -m schemas.avro schemas/example.cql"
        parse_schema(json.loads(text))


def test_command_writes_the_same_files(tmp_path, capsys):
    assert main([str(EXAMPLE_DDL), "--out", str(tmp_path)]) == 0
    assert {p.name: p.read_text(encoding="utf-8") for p in tmp_path.iterdir()} == avsc_files(EXAMPLE)
    assert main([str(tmp_path / "missing.cql")]) == 2
    assert "error:" in capsys.readouterr().err


def kinds(cql: CqlType) -> set[str]:
    """Every type inside `cql`: native names, and the parameterized kinds, non-frozen ones marked."""
    prefix = "non-frozen " if cql.multi_cell else ""
    if isinstance(cql, TupleType):
        return {"tuple"}.union(*map(kinds, cql.elements))
    if isinstance(cql, UserType):
        return {prefix + "udt"}.union(*map(kinds, cql.field_types))
    if isinstance(cql, MapType):
        return {prefix + "map"} | kinds(cql.key) | kinds(cql.value)
    if isinstance(cql, (ListType, SetType, VectorType)):
        return {prefix + type(cql).__name__.removesuffix("Type").lower()} | kinds(cql.element)
    return {cql.cql}


def test_example_uses_every_cql_type():
    used = set()
    for table in EXAMPLE.tables.values():
        for column in table.columns:
            used |= kinds(parse_type(column.type, EXAMPLE.types_of(table.keyspace), table.keyspace))
    assert set(NATIVE_TYPES) - {"varchar"} <= used  # varchar is text
    assert {"list", "set", "map", "non-frozen list", "non-frozen set", "non-frozen map", "tuple", "udt",
            "non-frozen udt", "vector"} <= used
