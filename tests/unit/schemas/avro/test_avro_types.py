"""Every CQL type maps to an Avro type, and its values survive fastavro's writer and reader."""
import decimal
import uuid

import pytest

from schemas.avro import ChangeEncoder, NameClash
from schemas.avro.names import avro_name, define_once, field, record
from schemas.avro.types import avro_type
from schemas.cql import NATIVE_TYPES, parse_type
from schemas.tables import parse_ddl
from tests.unit.schemas.avro.support import (PROCESSED_MS, SOURCE, decode_segment, frozen_list, frozen_map, read,
                                             restore, round_trip, write)
from tests.unit.connector.commitlog.segment_builder import cell, mutation, partition_update, row
from tests.unit.schemas.cql.samples import SAMPLES, elements, i32

UUID = {"type": "string", "logicalType": "uuid"}
NATIVE_MAPPING = {
    "ascii": "string", "text": "string", "varchar": "string", "blob": "bytes", "boolean": "boolean",
    "tinyint": "int", "smallint": "int", "int": "int", "bigint": "long", "counter": "long",
    "float": "float", "double": "double", "varint": "string", "decimal": "string", "inet": "string",
    "uuid": UUID, "timeuuid": UUID, "time": "long",
    "timestamp": {"type": "long", "logicalType": "timestamp-millis"},
    "date": {"type": "int", "logicalType": "date"},
    "duration": {"type": "record", "name": "Duration", "namespace": "ns", "fields": [
        {"name": "months", "type": "int"}, {"name": "days", "type": "int"},
        {"name": "nanoseconds", "type": "long"}]},
}
USER_TYPES = parse_ddl("CREATE TYPE ks.addr (street text, zip int);").types_of("ks")


def avro(cql: str):
    return avro_type(parse_type(cql, USER_TYPES, "ks"), "ns")


def test_every_native_type_is_mapped():
    assert set(NATIVE_MAPPING) == set(NATIVE_TYPES)
    assert {cql: avro(cql).schema for cql in NATIVE_MAPPING} == NATIVE_MAPPING


@pytest.mark.parametrize("cql, schema", [
    # Elements that may be Cassandra's empty value (None once decoded) are nullable; text is ''.
    ("frozen<list<int>>", {"type": "array", "items": ["null", "int"]}),
    ("frozen<set<text>>", {"type": "array", "items": "string"}),
    ("vector<float, 3>", {"type": "array", "items": "float"}),  # fixed-size elements are never empty
    ("vector<varint, 2>", {"type": "array", "items": ["null", "string"]}),
    ("frozen<map<text, int>>", {"type": "map", "values": ["null", "int"]}),
    ("frozen<map<ascii, blob>>", {"type": "map", "values": "bytes"}),
    ("frozen<map<int, text>>", {"type": "array", "items": record("Entry", "ns", [
        field("key", ["null", "int"]), field("value", "string")])}),
    ("frozen<tuple<int, text>>", record("Tuple", "ns", [
        field("field1", ["null", "int"]), field("field2", ["null", "string"])])),
    ("frozen<addr>", record("Udt", "ns", [field("street", ["null", "string"]), field("zip", ["null", "int"])])),
    ("frozen<list<frozen<tuple<int, frozen<addr>>>>>", {"type": "array", "items": ["null", record(
        "Tuple", "ns.element", [field("field1", ["null", "int"]), field("field2", ["null", record(
            "Udt", "ns.element.field2", [field("street", ["null", "string"]), field("zip", ["null", "int"])])])])]}),
])
def test_parameterized_types(cql, schema):
    assert avro(cql).schema == schema


BEYOND_PYTHON = [i for i, s in enumerate(SAMPLES) if s[0] in ("timestamp", "date") and isinstance(s[2], int)]
IN_RANGE = [i for i in range(len(SAMPLES)) if i not in BEYOND_PYTHON]
TS = 1700000000000000
SAMPLES_ID = uuid.UUID("5a3c0de0-e700-11f1-8000-000000000001")
SAMPLES_SCHEMA = parse_ddl(f"""
CREATE TYPE ks.addr (street text, zip int);
CREATE TABLE ks.samples (k int PRIMARY KEY, {", ".join(f"c{i} {SAMPLES[i][0]}" for i in IN_RANGE)})
    WITH ID = {SAMPLES_ID};
""")


@pytest.fixture(scope="module")
def samples_event(tmp_path_factory):
    """A real change with one cell per sample value, encoded and read back through fastavro."""
    table = SAMPLES_SCHEMA.table(SAMPLES_ID)
    fixed = {c.name for c in table.columns if parse_type(c.type, USER_TYPES, "ks").fixed_length}
    names = tuple(f"c{i}" for i in IN_RANGE)
    cells = b"".join(cell(SAMPLES[i][1], fixed=f"c{i}" in fixed) for i in IN_RANGE)
    update = partition_update(SAMPLES_ID, i32(1), row(b"", cells, timestamp=TS, min_timestamp=TS), regulars=names,
                              min_timestamp=TS)
    (change,) = decode_segment(tmp_path_factory.mktemp("samples"), SAMPLES_SCHEMA, mutation(update))
    encoder = ChangeEncoder(SOURCE, SAMPLES_SCHEMA)
    _, value = encoder.encode(change, "CommitLog-7-1.log", PROCESSED_MS)
    return change, round_trip(encoder.table(table).value_schema, value)


@pytest.mark.parametrize("index", IN_RANGE, ids=[f"{SAMPLES[i][0]}-{i}" for i in IN_RANGE])
def test_sample_values_round_trip(samples_event, index):
    change, event = samples_event
    cql = parse_type(SAMPLES[index][0], USER_TYPES, "ks")
    read = event["after"][f"c{index}"]
    assert read["tombstone"] is False and read["timestamp"] == TS
    assert restore(cql, read["value"]) == change.cells[f"c{index}"].value == SAMPLES[index][2]


def without_logical_types(schema):
    if isinstance(schema, list):
        return [without_logical_types(s) for s in schema]
    if isinstance(schema, dict):
        if "logicalType" in schema:
            return schema["type"]
        return {k: without_logical_types(v) for k, v in schema.items()}
    return schema


@pytest.mark.parametrize("index", BEYOND_PYTHON, ids=[SAMPLES[i][0] for i in BEYOND_PYTHON])
def test_values_beyond_python_dates_are_written_exactly(index):
    """Python cannot hold these as date/datetime; the decoder keeps the count, Avro writes it as
    it is, and a reader ignoring logical types (or a JVM one) gets it back."""
    cql, _, value, _ = SAMPLES[index]
    schema = record("R", "ns", [field("v", avro(cql).schema)])
    assert read(write(schema, {"v": value}), without_logical_types(schema)) == {"v": value}


def test_varints_beyond_python_digit_limit_stay_exact():
    huge = 7 ** 20000  # more than Python's default 4300 digits for int -> str
    text = avro("varint").convert(huge)
    assert decimal.Decimal(text) == huge


def test_decimal_keeps_its_scale():
    to_text = avro("decimal").convert
    assert [to_text(decimal.Decimal(s)) for s in ("1.50", "1.5", "-0.000001", "1E+3", "0E-8")] == [
        "1.50", "1.5", "-0.000001", "1E+3", "0E-8"]


def test_map_keys_in_their_hashable_form():
    """The decoder turns collection and UDT map keys into tuples; they come out as Avro data."""
    cql = parse_type("frozen<map<frozen<addr>, frozen<map<frozen<list<int>>, text>>>>", USER_TYPES, "ks")
    value = {(("street", "Main"), ("zip", 1)): {(7,): "v"}}
    assert cql.decode(frozen_map((elements(b"Main", i32(1)), frozen_map((frozen_list(i32(7)), b"v"))))) == value
    avro_map = avro_type(cql, "ns")
    datum = avro_map.convert(value)
    assert datum == [{"key": {"street": "Main", "zip": 1}, "value": [{"key": [7], "value": "v"}]}]
    read = round_trip(record("R", "ns0", [field("m", avro_map.schema)]), {"m": datum})["m"]
    assert restore(cql, read) == value


def test_empty_and_null_elements_are_representable():
    cql = parse_type("frozen<tuple<int, frozen<list<int>>, text, blob>>", USER_TYPES, "ks")
    # Empty int element (0 bytes) and null tuple field (-1) both decode to None; '' and b'' stay.
    value = cql.decode(elements(b"", frozen_list(i32(1), b""), None, b""))
    assert value == (None, [1, None], None, b"")
    tuple_type = avro_type(cql, "ns")
    read = round_trip(record("R", "ns0", [field("t", tuple_type.schema)]), {"t": tuple_type.convert(value)})
    assert restore(cql, read["t"]) == value


def test_names_of_quoted_identifiers():
    assert avro_name("v_int") == "v_int"
    odd = avro_name("Spaced Name-1")
    assert odd.startswith("_Spaced_Name_1_") and avro_name("Spaced Name_1") != odd
    assert avro_name("1st") != avro_name("_1st") and avro_name("1st")[0] == "_"
    assert field("été", "int") == {"name": avro_name("été"), "type": "int", "cql_name": "été"}


def test_a_name_defined_twice_with_different_shapes_is_refused():
    cell_int = record("Cell", "ns.a", [field("value", "int")])
    cell_text = record("Cell", "ns.a", [field("value", "string")])
    same = define_once(record("R", "ns", [field("x", cell_int), field("y", cell_int)]))
    assert same["fields"][1]["type"] == "ns.a.Cell"
    with pytest.raises(NameClash, match="ns.a.Cell"):
        define_once(record("R", "ns", [field("x", cell_int), field("y", cell_text)]))


def test_colliding_field_names_are_refused():
    with pytest.raises(NameClash, match="several fields"):
        record("R", "ns", [field("a", "int"), field("a", "long")])


def test_udt_fields_missing_at_the_end_are_null():
    cql = parse_type("frozen<addr>", USER_TYPES, "ks")
    value = cql.decode(elements(b"Main"))  # written before `zip` was added to the type
    assert value == {"street": "Main"}
    assert avro_type(cql, "ns").convert(value) == {"street": "Main", "zip": None}
