"""A segment written by a real Cassandra 5.0 node (storage_compatibility_mode CASSANDRA_4).

data/CommitLog-7-1795323511297.log is a cdc_raw segment cut after its zero marker (only
zeros followed). It holds, besides system tables, these statements on the tables below:

    INSERT (every type, static s, list/set/map) USING TIMESTAMP 1700000000000001
    UPDATE ... USING TIMESTAMP 1700000000000002 SET f_udt = {...}, u = {street: 'S', zip: 1}
    UPDATE ... USING TTL 600 SET v_text = 'ttl' (row 11, 'y')
    UPDATE SET l = l + ['z'], st = st - {3}, m['n'] = 2, u.zip = 777
    DELETE m['k'] / DELETE v_int / DELETE row (12, 'q') / DELETE c1 > 20 AND c1 <= 30
    DELETE partition (2, 'b') / INSERT (3, 'c', 1, '') v_text = '' USING TTL 100
    UPDATE SET l = ['fresh'] / counter n + 5, then n - 2 / ALTER TABLE DROP dropme
"""
import datetime
import hashlib
import decimal
import ipaddress
import uuid

from connector.commitlog import Op, SegmentReader
from connector.commitlog.render import ChangeRenderer
from schemas.cql import Duration
from tests.unit.connector.commitlog.testdata import SCHEMA_50, SEGMENT_50, changes_50


def test_every_type_written_by_cassandra():
    static, row = changes_50()[:2]
    assert static.static and static.cells["s"].value == "static!"
    assert row.op is Op.INSERT and row.partition_key == (1, "a") and row.clustering == (10, "x")
    values = {name: cell.value for name, cell in row.cells.items() if name not in ("l", "st", "m")}
    assert values == {
        "v_ascii": "asc", "v_bigint": -5, "v_blob": b"\x00\xff", "v_boolean": True,
        "v_date": datetime.date(2024, 1, 2), "v_decimal": decimal.Decimal("-12.345"), "v_double": 1.5,
        "v_duration": Duration(14, 3, 3723004005006), "v_float": 0.25, "v_inet": ipaddress.ip_address("10.0.0.1"),
        "v_int": -7, "v_smallint": -2, "v_text": "héllo", "v_time": 48654234000000,
        "v_timestamp": datetime.datetime(2023, 11, 6, 15, 44, 39, 123000, tzinfo=datetime.timezone.utc),
        "v_timeuuid": uuid.UUID("c6c9faaa-e631-11f1-8986-02fc00000001"), "v_tinyint": -1,
        "v_uuid": uuid.UUID("3d4f0a6c-58c3-4c5e-9e0b-4b8f9e2a7f11"), "v_varint": 2**70,
        "v_vector": [1.0, 2.0, 3.0], "v_vtext": ["a", "bc"], "f_list": [1, 2], "f_set": ["a", "b"],
        "f_map": {"k": 1}, "f_tuple": (1, None), "dropme": 5,
    }
    assert {c.timestamp for c in row.cells.values() if hasattr(c, "timestamp")} == {1700000000000001}
    # INSERT of a non-frozen collection first deletes it, one microsecond before the write.
    assert row.cells["l"].deletion.marked_for_delete_at == 1700000000000000
    assert [c.value for c in row.cells["l"].cells] == ["x", "y"]
    assert [c.path for c in row.cells["st"].cells] == [3, 4]
    assert [(c.path, c.value) for c in row.cells["m"].cells] == [("k", 9)]


def test_json_of_the_changes_after_the_insert():
    ours = [c for c in changes_50() if c.table.keyspace == "ringtail_decoder_check"]
    renderer = ChangeRenderer(SCHEMA_50)
    rendered = [renderer.render(c, "s") for c in ours]
    assert [(r["table"], r["op"]) for r in rendered] == [
        ("everything", "update"), ("everything", "insert"), ("everything", "update"), ("everything", "update"),
        ("everything", "update"), ("everything", "update"), ("everything", "update"), ("everything", "row_delete"),
        ("everything", "range_delete"), ("everything", "partition_delete"), ("everything", "insert"),
        ("everything", "update"), ("counters", "update"), ("counters", "update")]
    udts, ttl, appends, map_delete, cell_delete, row_delete, range_delete, partition_delete, insert_ttl, \
        overwrite, counter_up, counter_down = rendered[2:]
    assert udts["cells"]["f_udt"]["value"] == {"street": "Main", "zip": 12345}
    assert udts["cells"]["u"]["value"] == {"street": "S", "zip": 1}
    assert udts["cells"]["u"]["deletion"]["timestamp"] == 1700000000000001
    assert ttl["clustering"] == [11, "y"] and ttl["cells"]["v_text"]["ttl"] == 600
    assert ttl["cells"]["v_text"]["expires_at"] - ttl["cells"]["v_text"]["timestamp"] // 1_000_000 == 600
    assert {k: v.get("value") for k, v in appends["cells"].items()} == {
        "l": ["z"], "m": {"n": 2}, "st": None, "u": {"zip": 777}}
    assert appends["cells"]["st"]["removed"] == [3]
    assert map_delete["cells"]["m"]["removed"] == ["k"]
    assert cell_delete["cells"]["v_int"]["value"] is None and "deletion" in cell_delete["cells"]["v_int"]
    assert row_delete["clustering"] == [12, "q"] and row_delete["deletion"]["timestamp"] > 0
    assert range_delete["range"] == {"start": {"clustering": [20], "inclusive": False},
                                     "end": {"clustering": [30], "inclusive": True}}
    assert partition_delete["partition_key"] == {"p1": 2, "p2": "b"}
    assert insert_ttl["clustering"] == [1, ""] and insert_ttl["liveness"]["ttl"] == 100
    assert insert_ttl["cells"]["v_text"]["value"] == ""
    assert overwrite["cells"]["l"]["value"] == ["fresh"]
    assert overwrite["cells"]["l"]["deletion"]["timestamp"] == overwrite["cells"]["l"]["timestamp"] - 1
    assert (counter_up["cells"]["n"]["value"], counter_down["cells"]["n"]["value"]) == (5, 3)


def system_table_id(keyspace: str, table: str) -> uuid.UUID:
    """TableId.forSystemTable: a name-based (MD5) UUID of keyspace + table."""
    return uuid.UUID(bytes=hashlib.md5((keyspace + table).encode()).digest(), version=3)


def test_unknown_system_tables_are_reported_and_skipped():
    skipped = []
    with SegmentReader(SEGMENT_50, SCHEMA_50, on_schema_miss=lambda unknown: skipped.append(unknown)) as reader:
        positions = [c.position for c in reader.changes()]
    assert positions == sorted(positions) and len(positions) == 14
    assert system_table_id("system", "local") == uuid.UUID("7ad54392-bcdd-35a6-8417-4e047860b377")
    assert system_table_id("system_schema", "keyspaces") in {u.table_id for u in skipped}
    assert all(u.segment == str(SEGMENT_50) and u.position > 0 for u in skipped)
