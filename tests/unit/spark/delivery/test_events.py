"""Change events of the changes Cassandra 5.0 wrote into tests/unit/connector/commitlog/data, framed as the
connector frames them, decoded into CDC log rows."""
import json
import uuid

import pytest
from fastavro import parse_schema

from schemas.avro import ChangeEncoder, SourceInfo, TableEncoder
from schemas.avro import RegistryError
from schemas.avro.wire import frame
from spark import rows as R
from spark.delivery.events import decode_records, log_time
from tests.unit.schemas.avro.support import PROCESSED_MS, SOURCE
from tests.unit.spark.delivery.decoding import KAFKA_TIME, framed_events, preloaded_cache, records


@pytest.fixture(scope="module")
def decoded():
    schemas, payloads = framed_events()
    return decode_records(records(payloads), preloaded_cache(schemas)).to_pylist()


def test_operations_follow_scylla_codes(decoded):
    assert [r["cdc$operation"] for r in decoded] == [
        R.ROW_UPDATE, R.ROW_INSERT, R.ROW_UPDATE, R.ROW_UPDATE, R.ROW_UPDATE, R.ROW_UPDATE, R.ROW_UPDATE,
        R.ROW_DELETE, R.RANGE_DELETE_START_EXCLUSIVE, R.RANGE_DELETE_END_INCLUSIVE, R.PARTITION_DELETE,
        R.ROW_INSERT, R.ROW_UPDATE, R.ROW_UPDATE, R.ROW_UPDATE]
    assert all(r["failure"] is None for r in decoded)


def test_insert_of_every_type_as_json(decoded):
    insert = decoded[1]
    assert json.loads(insert["key"]) == {"p1": 1, "p2": "a", "c1": 10, "c2": "x"}
    values = {name: json.loads(v) for name, v in insert["columns"]}
    assert values == {
        "f_list": [1, 2], "f_map": [["k", 1]], "f_set": ["a", "b"], "f_tuple": [1, None],
        "l": {"c6ca9ff0-e631-11f1-b597-43589d361815": "x", "c6ca9ffa-e631-11f1-b597-43589d361815": "y"},
        "m": [["k", 9]], "st": [3, 4], "v_ascii": "asc", "v_bigint": -5, "v_blob": "0x00ff", "v_boolean": True,
        "v_date": 19724, "v_decimal": "-12.345", "v_double": 1.5,
        "v_duration": {"months": 14, "days": 3, "nanoseconds": 3723004005006}, "v_float": 0.25,
        "v_inet": "10.0.0.1", "v_int": -7, "v_smallint": -2, "v_text": "héllo", "v_time": 48654234000000,
        "v_timestamp": 1699285479123, "v_timeuuid": "c6c9faaa-e631-11f1-8986-02fc00000001", "v_tinyint": -1,
        "v_uuid": "3d4f0a6c-58c3-4c5e-9e0b-4b8f9e2a7f11", "v_varint": str(2 ** 70), "v_vector": [1.0, 2.0, 3.0],
        "v_vtext": ["a", "bc"]}
    # An INSERT overwrites its non-frozen collections: ScyllaDB marks them deleted, then written.
    assert insert["deleted_columns"] == ["l", "m", "st"]
    assert insert["cdc$ttl"] is None and insert["cdc$end_of_batch"] and insert["cdc$batch_seq_no"] == 0


def test_static_row_has_the_partition_key_only(decoded):
    assert json.loads(decoded[0]["key"]) == {"p1": 1, "p2": "a"}
    assert decoded[0]["columns"] == [("s", '"static!"')]


def test_collection_elements_added_and_removed(decoded):
    update = decoded[4]
    assert {n: json.loads(v) for n, v in update["columns"]} == {
        "l": {"c6cb8a50-e631-11f1-b597-43589d361815": "z"}, "m": [["n", 2]], "u": {"zip": 777}}
    assert [(n, json.loads(v)) for n, v in update["deleted_elements"]] == [("st", [3])]
    assert update["deleted_columns"] == []
    assert [(n, json.loads(v)) for n, v in decoded[5]["deleted_elements"]] == [("m", ["k"])]


def test_ttl_and_cell_deletion(decoded):
    assert decoded[3]["cdc$ttl"] == 600
    assert decoded[6]["deleted_columns"] == ["v_int"] and decoded[6]["columns"] == []
    assert decoded[11]["cdc$ttl"] == 100 and decoded[11]["columns"] == [("v_text", '""')]


def test_range_deletion_is_two_bound_rows_of_one_batch(decoded):
    start, end = decoded[8], decoded[9]
    assert json.loads(start["key"]) == {"p1": 1, "p2": "a", "c1": 20}
    assert json.loads(end["key"]) == {"p1": 1, "p2": "a", "c1": 30}
    assert (start["cdc$batch_seq_no"], start["cdc$end_of_batch"]) == (0, False)
    assert (end["cdc$batch_seq_no"], end["cdc$end_of_batch"]) == (1, True)
    assert start["cdc$time"] == end["cdc$time"]


def test_log_time_is_a_timeuuid_of_the_write_time(decoded):
    for row in decoded:
        time = uuid.UUID(row["cdc$time"])
        assert time.version == 1 and time.variant == uuid.RFC_4122
        assert (time.time - 0x01B21DD213814000) // 10 == row["write_time_us"]
    assert len({(r["cdc$time"], r["cdc$batch_seq_no"]) for r in decoded}) == len(decoded)


def test_replica_copies_get_the_same_identity():
    """The same changes read from another node's commit log: only `source` differs."""
    schemas, payloads = framed_events()
    _, copies = framed_events(SourceInfo(name="demo", cluster="Test Cluster", node="another-node"))
    cache = preloaded_cache(schemas)
    first = decode_records(records(payloads), cache).to_pylist()
    second = decode_records(records(copies), cache).to_pylist()
    identity = [(r["change_id"], r["cdc$time"], r["cdc$batch_seq_no"]) for r in first]
    assert identity == [(r["change_id"], r["cdc$time"], r["cdc$batch_seq_no"]) for r in second]
    assert {r["source"]["node"] for r in second} == {"another-node"}


def test_partition_key_and_source(decoded):
    assert decoded[1]["partition_key"] == bytes.fromhex("0004 00000001 00 0001 61 00")
    assert decoded[1]["source"]["offset"] == 1 and decoded[1]["source"]["schema_id"] == 1
    assert decoded[1]["kafka_time"] == KAFKA_TIME
    assert decoded[-1]["table"] == "counters" and decoded[-1]["source"]["schema_id"] == 2


def test_undecodable_records_are_kept_with_their_bytes():
    schemas, payloads = framed_events()
    bad = [b"\x01garbage", payloads[1][:-3], payloads[1] + b"\x00"]
    out = decode_records(records([payloads[0], *bad]), preloaded_cache(schemas)).to_pylist()
    assert out[0]["failure"] is None
    assert [r["raw_value"] for r in out[1:]] == bad
    assert [r["failure"] for r in out[1:]] == [R.UNDECODABLE] * 3
    assert "magic byte 1" in out[1]["failure_detail"]
    assert "1 bytes follow the datum" in out[3]["failure_detail"]
    assert [r["change_id"] for r in out[1:]] == [f"undecodable:{out[1]['source']['topic']}:0:{i}" for i in (1, 2, 3)]


def test_an_unreachable_registry_fails_the_batch_instead_of_dead_lettering():
    schemas, payloads = framed_events()
    unknown_id = b"\x00\x00\x00\x00\x63" + payloads[1][5:]
    with pytest.raises(RegistryError, match="unreachable"):
        decode_records(records([unknown_id]), preloaded_cache(schemas))


def test_log_time_layout():
    time = uuid.UUID(log_time(1_700_000_000_123_456, bytes(range(16))))
    assert time.version == 1
    assert (time.time - 0x01B21DD213814000) // 10 == 1_700_000_000_123_456


ODD_TABLE_ID = uuid.UUID("0dd0dd00-0000-11ee-8000-000000000001")
ODD_DDL = f"""
CREATE TYPE ks."My Type" ("first-name" text, plain int);
CREATE TABLE ks."Odd Table" ("Key-1" int, "Clust Col" int, "N" "My Type", "Odd Col" text,
    "U" frozen<"My Type">, PRIMARY KEY ("Key-1", "Clust Col")) WITH ID = {ODD_TABLE_ID};
"""


def test_columns_and_udt_fields_keep_their_cql_names(tmp_path):
    """Names that are not valid Avro names reach the log rows as CQL spells them (the writer records
    them as `cql_name`), so no sink has to guess or drops the column."""
    from schemas.tables import parse_ddl
    from tests.unit.schemas.avro.support import decode_segment
    from tests.unit.connector.commitlog.segment_builder import (cell, clustering, complex_cells, mutation,
                                                               partition_update, row)
    from tests.unit.schemas.cql.samples import elements, i32

    schema = parse_ddl(ODD_DDL)
    table = schema.table(ODD_TABLE_ID)
    ts = 1_795_400_000_000_000
    cells = (complex_cells(cell(b"Bo", path=b"\x00\x00"))  # "N"."first-name"
             + cell(b"odd") + cell(elements(b"Ann", i32(7))))
    body = row(clustering(i32(2), fixed=(True,)), cells, timestamp=ts, min_timestamp=ts)
    update = partition_update(ODD_TABLE_ID, i32(1), body, regulars=("N", "Odd Col", "U"), min_timestamp=ts)
    (change,) = decode_segment(tmp_path, schema, mutation(update))
    encoder = ChangeEncoder(SOURCE, schema)
    _, value = encoder.encode(change, "CommitLog-7-1795400000000.log", PROCESSED_MS)
    value_schema = encoder.table(table).value_schema
    (decoded,) = decode_records(records([frame(3, parse_schema(value_schema), value)]),
                                preloaded_cache({3: value_schema})).to_pylist()

    assert decoded["failure"] is None
    assert json.loads(decoded["key"]) == {"Key-1": 1, "Clust Col": 2}
    assert {name: json.loads(v) for name, v in decoded["columns"]} == {
        "N": {"first-name": "Bo"}, "Odd Col": "odd", "U": {"first-name": "Ann", "plain": 7}}


def test_removed_elements_of_a_set_of_tuples_read_as_the_elements_added():
    """The writer defines the element's record once and names it where the removed keys use it again:
    a removed element reads as the element itself ([1, "0x01"]), not as the raw record (which a mirror
    would never match to the element it removes, and whose bytes the log's JSON cannot hold)."""
    from schemas.avro.reader import EventReader
    from schemas.tables import parse_ddl

    schema = parse_ddl("CREATE TABLE ks.t (k int PRIMARY KEY, s set<frozen<tuple<int, blob>>>) "
                       "WITH ID = 657e5210-7cbb-11ee-9858-c9aa1eb53e69;")
    (column,) = EventReader(TableEncoder(next(iter(schema.tables.values())), {}).value_schema).cell_columns
    element = {"field1": 1, "field2": b"\x01"}
    cell = {"deletion": None, "added": [{"key": element, "timestamp": 4, "ttl": 0, "local_deletion_time": None}],
            "removed": [{"key": element, "timestamp": 5, "local_deletion_time": 7}]}
    assert column.read(cell) == ([[1, "0x01"]], False, [[1, "0x01"]], None)
    assert column.cells(cell) == [None, [[[1, "0x01"], 4, 0, None, 0, None], [[1, "0x01"], 5, 0, None, 1, None]]]
