"""Events of the changes Cassandra 5.0 wrote into tests/unit/connector/commitlog/data, and of a row with
every nested type, through fastavro's writer and reader."""
import datetime
import struct
import uuid

import pytest

from schemas.avro import ChangeEncoder
from schemas.change import write_time
from schemas.cql import ListType, SetType, hashable, parse_type
from tests.unit.schemas.avro.support import (EVERYTHING, EXAMPLE, PROCESSED_MS, SOURCE, decode_segment, frozen_list,
                                     frozen_map, restore, round_trip)
from tests.unit.connector.commitlog.segment_builder import (cell, clustering, complex_cells, mutation,
                                                           partition_update, row, svint, uvint)
from tests.unit.connector.commitlog.testdata import SCHEMA_50 as SCHEMA, SEGMENT_50 as SEGMENT, changes_50 as changes
from tests.unit.schemas.cql.samples import TIMEUUID, UUID4, elements, i32

T = 1700000000000000


@pytest.fixture(scope="module")
def events():
    """(change, key, value) of every change of the segment's tables, each read back by fastavro."""
    encoder = ChangeEncoder(SOURCE, SCHEMA)
    out = []
    for change in changes():
        if change.table.keyspace != "ringtail_decoder_check":
            continue
        key, value = encoder.encode(change, str(SEGMENT), PROCESSED_MS)
        table = encoder.table(change.table)
        assert round_trip(table.key_schema, key) == key
        assert round_trip(table.value_schema, value) == value
        out.append((change, key, value))
    return out


def event(events, index):
    return events[index][2]


def test_kinds_and_debezium_ops(events):
    assert [(v["kind"], v["op"]) for _, _, v in events] == [
        ("update", "u"), ("insert", "c"), ("update", "u"), ("update", "u"), ("update", "u"), ("update", "u"),
        ("update", "u"), ("row_delete", "d"), ("range_delete", "d"), ("partition_delete", "d"), ("insert", "c"),
        ("update", "u"), ("update", "u"), ("update", "u")]


def test_key_is_the_partition_key(events):
    assert [k for _, k, _ in events][:10] == [{"p1": 1, "p2": "a"}] * 9 + [{"p1": 2, "p2": "b"}]
    assert events[-1][1] == {"k": 1}


def test_source_block(events):
    change, _, value = events[1]
    assert value["ts_ms"] == PROCESSED_MS
    assert value["source"] == {
        "version": SOURCE.version, "connector": "cassandra", "name": "demo", "cluster": "Test Cluster",
        "node": SOURCE.node, "keyspace": "ringtail_decoder_check", "table": "everything",
        "file": SEGMENT.name, "position": change.position._asdict(),
        "ts_ms": (T + 1) // 1000, "ts_us": T + 1,
        # (p1 int 1, p2 text 'a'): a composite key, each component length-prefixed and 0-terminated
        "partition_key": bytes.fromhex("0004 00000001 00 0001 61 00")}
    for change, _, value in events:
        assert value["source"]["ts_us"] == write_time(change)


def test_insert_of_every_type(events):
    value = event(events, 1)
    after = value["after"]
    assert value["liveness"] == {"timestamp": T + 1, "ttl": 0, "local_deletion_time": None}
    assert (after["p1"], after["p2"], after["c1"], after["c2"]) == (1, "a", 10, "x")
    assert after["s"] is None  # not touched by this change
    assert "dropme" not in after  # dropped from the table: its cells are dead data
    values = {name: c["value"] for name, c in after.items() if isinstance(c, dict) and "value" in c}
    assert values == {
        "v_ascii": "asc", "v_bigint": -5, "v_blob": b"\x00\xff", "v_boolean": True,
        "v_date": datetime.date(2024, 1, 2), "v_decimal": "-12.345", "v_double": 1.5,
        "v_duration": {"months": 14, "days": 3, "nanoseconds": 3723004005006}, "v_float": 0.25,
        "v_inet": "10.0.0.1", "v_int": -7, "v_smallint": -2, "v_text": "héllo", "v_time": 48654234000000,
        "v_timestamp": datetime.datetime(2023, 11, 6, 15, 44, 39, 123000, tzinfo=datetime.timezone.utc),
        "v_timeuuid": uuid.UUID("c6c9faaa-e631-11f1-8986-02fc00000001"), "v_tinyint": -1,
        "v_uuid": uuid.UUID("3d4f0a6c-58c3-4c5e-9e0b-4b8f9e2a7f11"), "v_varint": str(2 ** 70),
        "v_vector": [1.0, 2.0, 3.0], "v_vtext": ["a", "bc"], "f_list": [1, 2], "f_set": ["a", "b"],
        "f_map": {"k": 1}, "f_tuple": {"field1": 1, "field2": None},
    }
    assert after["v_int"] == {"value": -7, "timestamp": T + 1, "ttl": 0, "local_deletion_time": None,
                              "tombstone": False}
    # INSERT of a non-frozen collection deletes it (1 µs earlier), then adds the elements.
    lst = after["l"]
    assert lst["deletion"]["timestamp"] == T
    assert [e["value"] for e in lst["added"]] == ["x", "y"] and lst["removed"] == []
    assert all(isinstance(e["key"], uuid.UUID) for e in lst["added"])
    assert [e["key"] for e in after["st"]["added"]] == [3, 4]
    assert [(e["key"], e["value"]) for e in after["m"]["added"]] == [("k", 9)]


def test_static_row(events):
    value = event(events, 0)
    assert value["static"] is True
    assert value["after"]["c1"] is None and value["after"]["c2"] is None
    assert value["after"]["s"]["value"] == "static!"


def test_udts_frozen_and_not(events):
    after = event(events, 2)["after"]
    assert after["f_udt"]["value"] == {"street": "Main", "zip": 12345}
    u = after["u"]
    assert u["deletion"]["timestamp"] == T + 1  # `u = {...}` overwrites the whole value
    assert {name: e and e["value"] for name, e in u["added"].items()} == {"street": "S", "zip": 1}


def test_ttl_cell(events):
    v_text = event(events, 3)["after"]["v_text"]
    assert v_text["ttl"] == 600 and v_text["tombstone"] is False
    assert v_text["local_deletion_time"] - v_text["timestamp"] // 1_000_000 == 600


def test_collection_appends_and_removals(events):
    after = event(events, 4)["after"]
    assert after["v_text"] is None  # untouched
    assert [e["value"] for e in after["l"]["added"]] == ["z"] and after["l"]["deletion"] is None
    st = after["st"]
    assert st["added"] == [] and [e["key"] for e in st["removed"]] == [3]
    assert st["removed"][0]["local_deletion_time"] > 0
    assert [(e["key"], e["value"]) for e in after["m"]["added"]] == [("n", 2)]
    assert after["u"]["added"]["street"] is None and after["u"]["added"]["zip"]["value"] == 777
    assert [e["key"] for e in event(events, 5)["after"]["m"]["removed"]] == ["k"]


def test_column_set_to_null_is_a_tombstone_not_a_missing_column(events):
    after = event(events, 6)["after"]
    assert after["v_int"]["tombstone"] is True and after["v_int"]["value"] is None
    assert after["v_int"]["local_deletion_time"] > 0
    assert [name for name, c in after.items() if isinstance(c, dict)] == ["v_int"]


def test_row_deletion(events):
    value = event(events, 7)
    assert (value["after"]["c1"], value["after"]["c2"]) == (12, "q")
    assert value["deletion"]["timestamp"] > 0 and value["deletion"]["local_deletion_time"] > 0
    assert value["range"] is None
    assert all(v is None for k, v in value["after"].items() if k not in ("p1", "p2", "c1", "c2"))


def test_range_deletion(events):
    value = event(events, 8)
    assert value["range"] == {"start": {"clustering": {"c1": 20, "c2": None}, "inclusive": False},
                              "end": {"clustering": {"c1": 30, "c2": None}, "inclusive": True}}
    assert value["after"]["c1"] is None and value["deletion"]["timestamp"] > 0


def test_partition_deletion(events):
    change, key, value = events[9]
    assert key == {"p1": 2, "p2": "b"} and value["after"]["c1"] is None
    assert value["deletion"]["timestamp"] == change.deletion.marked_for_delete_at
    assert value["range"] is None


def test_insert_with_ttl_and_empty_text(events):
    value = event(events, 10)
    assert value["liveness"]["ttl"] == 100 and value["liveness"]["local_deletion_time"] > 0
    assert value["after"]["c2"] == "" and value["after"]["v_text"]["value"] == ""


def test_collection_overwrite(events):
    lst = event(events, 11)["after"]["l"]
    assert [e["value"] for e in lst["added"]] == ["fresh"]
    assert lst["deletion"]["timestamp"] == lst["added"][0]["timestamp"] - 1


def test_counters(events):
    assert [v["after"]["n"]["value"] for _, _, v in events[-2:]] == [5, 3]
    assert "range" not in events[-1][2]  # no clustering columns, no range deletions


# A row of `everything` (schemas/example.cql) with every nested column, written with the
# segment builder and decoded by the commit log reader.
NOW = 1795400000
PLACE = elements(b"Home", elements(struct.pack(">d", 1.5), struct.pack(">d", -2.0)), frozen_list(b"x"),
                 elements(b"Main", i32(1)), frozen_map((b"mon", frozen_list(struct.pack(">q", 36 * 10 ** 12)))))
NESTED_CELLS = {
    "v_int": cell(b"", fixed=True),  # Cassandra's empty value of an int
    "f_list": cell(frozen_list(i32(1), b"")),  # an empty element
    "n_int_keys": complex_cells(cell(frozen_list(b"a", b""), path=i32(5)),
                                cell(None, path=i32(6), deleted_at=NOW)),
    "n_tuple_keys": cell(frozen_map((elements(i32(1), b"t"), frozen_map((b"k", frozen_list(UUID4.bytes)))))),
    "n_udt_list": complex_cells(cell(elements(b"Main", i32(1)), path=TIMEUUID.bytes)),
    "n_tuple_set": complex_cells(cell(b"", path=elements(i32(1), struct.pack(">q", 1699285479123))),
                                 cell(None, path=elements(i32(2), struct.pack(">q", 0)), deleted_at=NOW)),
    "n_udt_values": complex_cells(cell(PLACE, path=TIMEUUID.bytes)),
    "n_place": complex_cells(cell(b"Office", path=struct.pack(">h", 0)),
                             cell(None, path=struct.pack(">h", 2), deleted_at=NOW),
                             cell(elements(b"Main", i32(2)), path=struct.pack(">h", 3))),
    "n_nested": cell(elements(
        PLACE, frozen_map((struct.pack(">I", (1 << 31) + 19724), svint(1) + svint(-2) + svint(3))),
        (2 ** 70).to_bytes(10, "big", signed=True),
        frozen_list(frozen_list(i32(2) + (150).to_bytes(2, "big", signed=True), i32(0) + b"\x00")))),
    "n_vectors": cell(uvint(12) + frozen_list(bytes([10, 0, 0, 1])) + uvint(4) + frozen_list()),
    "n_udt_keys": complex_cells(cell(i32(3), path=elements(b"Main", i32(1)))),
    "n_list_keys": cell(frozen_map((frozen_list(i32(7)), b""))),
}


@pytest.fixture(scope="module")
def nested(tmp_path_factory):
    key = struct.pack(">H", 4) + i32(1) + b"\x00" + struct.pack(">H", 1) + b"a" + b"\x00"
    body = row(clustering(i32(1), b"a", fixed=(True, False)), b"".join(NESTED_CELLS.values()), timestamp=T,
               min_timestamp=T)
    update = partition_update(EVERYTHING.id, key, body, regulars=tuple(NESTED_CELLS), min_timestamp=T)
    (change,) = decode_segment(tmp_path_factory.mktemp("nested"), EXAMPLE, mutation(update))
    encoder = ChangeEncoder(SOURCE, EXAMPLE)
    _, value = encoder.encode(change, "CommitLog-7-1795400000000.log", PROCESSED_MS)
    return change, round_trip(encoder.table(EVERYTHING).value_schema, value)["after"]


def column_type(name: str):
    return parse_type(EVERYTHING.column(name).type, EXAMPLE.types_of(EVERYTHING.keyspace), EVERYTHING.keyspace)


MULTI_CELL = [n for n in NESTED_CELLS if column_type(n).multi_cell and n != "n_place"]


@pytest.mark.parametrize("name", [n for n in NESTED_CELLS if not column_type(n).multi_cell])
def test_nested_frozen_values_round_trip(nested, name):
    change, after = nested
    assert restore(column_type(name), after[name]["value"]) == change.cells[name].value


def test_empty_values_are_representable(nested):
    change, after = nested
    assert after["v_int"] == {"value": None, "timestamp": T, "ttl": 0, "local_deletion_time": None,
                              "tombstone": False}  # live, empty: not a deletion
    assert after["f_list"]["value"] == [1, None]
    assert after["n_list_keys"]["value"] == [{"key": [7], "value": b""}]


def element_readers(cql):
    """Functions restoring a multi-cell column's element keys and values as the decoder gives them."""
    if isinstance(cql, ListType):  # keyed by timeuuid
        return (lambda k: k), (lambda v: restore(cql.element, v))
    if isinstance(cql, SetType):  # the element is the key
        return (lambda k: restore(cql.element, k)), (lambda v: None)
    return (lambda k: hashable(restore(cql.key, k))), (lambda v: restore(cql.value, v))


@pytest.mark.parametrize("name", MULTI_CELL)
def test_nested_collection_elements_round_trip(nested, name):
    change, after = nested
    key, value = element_readers(column_type(name))
    cells = change.cells[name].cells
    assert [(key(e["key"]), value(e.get("value"))) for e in after[name]["added"]] == [
        (c.path, c.value) for c in cells if not c.tombstone]
    assert [key(e["key"]) for e in after[name]["removed"]] == [c.path for c in cells if c.tombstone]


def test_non_frozen_udt_fields(nested):
    change, after = nested
    place = after["n_place"]
    assert place["deletion"] is None
    assert place["added"]["name"]["value"] == "Office"
    assert place["added"]["home"]["value"] == {"street": "Main", "zip": 2}
    assert place["added"]["at"] is None and place["added"]["opened"] is None
    assert [(e["key"], e["local_deletion_time"]) for e in place["removed"]] == [("tags", NOW)]
