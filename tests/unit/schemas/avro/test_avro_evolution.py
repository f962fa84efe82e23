"""Schema evolution: what ALTER TABLE / ALTER TYPE do to the value schema, checked the way the
registry's BACKWARD level means it: a reader on the new schema reads data written with the old."""
import uuid

import pytest
from fastavro.read import SchemaResolutionError

from schemas.avro import ChangeEncoder, TableEncoder
from schemas.tables import parse_ddl
from tests.unit.schemas.avro.support import (EVERYTHING, EXAMPLE, PROCESSED_MS, SOURCE, decode_segment, read,
                                             record_names, write)
from tests.unit.connector.commitlog.segment_builder import (cell, clustering, complex_cells, mutation,
                                                           partition_update, row)
from tests.unit.schemas.cql.samples import elements, i32

TABLE_ID = uuid.UUID("7e0a1b00-e700-11f1-8000-000000000002")
T = 1700000000000000
BASE = f"""
CREATE TYPE ks.addr (street text, zip int);
CREATE TABLE ks.t (k int, c int, v text, a frozen<addr>, u addr, PRIMARY KEY (k, c)) WITH ID = {TABLE_ID};
"""


def snapshot(ddl: str = BASE):
    return parse_ddl(ddl)


def value_schema(schema):
    table = schema.table(TABLE_ID)
    return TableEncoder(table, schema.types_of("ks")).value_schema


@pytest.fixture
def old_event(tmp_path):
    """An event of the base table: v, a frozen UDT and a non-frozen UDT field written."""
    schema = snapshot()
    cells = cell(b"hello") + cell(elements(b"Main", i32(1))) + complex_cells(cell(i32(7), path=b"\x00\x01"))
    update = partition_update(TABLE_ID, i32(1), row(clustering(i32(2), fixed=(True,)), cells, timestamp=T,
                                                    min_timestamp=T), regulars=("v", "a", "u"), min_timestamp=T)
    (change,) = decode_segment(tmp_path, schema, mutation(update))
    _, value = ChangeEncoder(SOURCE, schema).encode(change, "CommitLog-7-1.log", PROCESSED_MS)
    return write(value_schema(schema), value)


def test_added_column_is_backward_compatible(old_event):
    new = snapshot(BASE + "ALTER TABLE ks.t ADD w map<int, frozen<addr>>;\nALTER TABLE ks.t ADD x text;")
    after = read(old_event, value_schema(snapshot()), value_schema(new))["after"]
    assert after["v"]["value"] == "hello" and after["w"] is None and after["x"] is None


def test_dropped_column_is_backward_compatible(old_event):
    new = snapshot(BASE + "ALTER TABLE ks.t DROP v USING TIMESTAMP 1700000000000005;")
    after = read(old_event, value_schema(snapshot()), value_schema(new))["after"]
    assert "v" not in after and after["a"]["value"] == {"street": "Main", "zip": 1}


def test_field_added_to_a_udt_is_backward_compatible(old_event):
    new = snapshot(BASE.replace("(street text, zip int)", "(street text, zip int, country text)"))
    after = read(old_event, value_schema(snapshot()), value_schema(new))["after"]
    assert after["a"]["value"] == {"street": "Main", "zip": 1, "country": None}
    assert after["u"]["added"]["zip"]["value"] == 7 and after["u"]["added"]["country"] is None


def test_column_readded_with_another_type_is_not_backward_compatible(old_event):
    new = snapshot(BASE.replace("v text", "v int"))
    with pytest.raises(SchemaResolutionError):
        read(old_event, value_schema(snapshot()), value_schema(new))


def test_encoder_follows_table_and_type_changes():
    old = snapshot()
    encoder = ChangeEncoder(SOURCE, old)
    table = old.table(TABLE_ID)
    first = encoder.table(table)
    assert encoder.table(table) is first
    encoder.schema = snapshot(BASE.replace("(street text, zip int)", "(street text, zip int, country text)"))
    rebuilt = encoder.table(table)
    assert rebuilt is not first and "country" in str(rebuilt.value_schema)
    encoder.schema = encoder.schema  # the same snapshot keeps the encoders
    assert encoder.table(table) is rebuilt


def test_record_names_are_unique_per_column():
    table = TableEncoder(EVERYTHING, EXAMPLE.types_of(EVERYTHING.keyspace))
    names = record_names(table.value_schema)
    assert len(names) == len(set(names))
    namespace = "ringtail.ringtail_decoder_check.everything"
    cells = [n for n in names if n.endswith(".Cell")]
    columns = [c.name for c in (*EVERYTHING.static_columns, *EVERYTHING.regular_columns)]
    assert cells == [f"{namespace}.{c}.Cell" for c in columns]
    assert record_names(table.key_schema) == [f"{namespace}.Key"]


def test_quoted_identifiers_get_valid_unique_names():
    schema = parse_ddl(f"""
        CREATE TABLE ks."Mixed Case" (k int, "odd-name" text, "odd_name" int, "Élan" frozen<tuple<int, int>>,
            PRIMARY KEY (k)) WITH ID = {TABLE_ID};""")
    table = TableEncoder(schema.table(TABLE_ID), schema.types_of("ks"))
    fields = {f.get("cql_name", f["name"]): f["name"] for f in table.value_schema["fields"][4]["type"]["fields"]}
    assert fields["odd_name"] == "odd_name" and fields["odd-name"] != "odd_name"
    assert len(set(fields.values())) == len(fields)
    assert table.value_schema["namespace"].startswith("ringtail.ks._Mixed_Case_")
