"""The Cassandra sink's INSERT requests made natively from an Arrow batch, held byte for byte to the reference:
`LogRowEncoder.encode`, each value then serialized by the driver's own type of its column (what `bind` does),
the statements as the driver's own BATCH message lays them out."""
from __future__ import annotations

import io
import json
import uuid
from types import SimpleNamespace

import pyarrow as pa
import pytest
from cassandra import ConsistencyLevel, cqltypes
from cassandra.protocol import BatchMessage
from cassandra.query import UNSET_VALUE, BatchType

from schemas.cql import parse_type
from schemas.cql.tree import type_tree
from schemas.tables.model import ClusteringOrder, Column, ColumnKind, Table, UserType
from spark.sinks.cassandra.native import EncodedBatch, _encode, encoded_batches, native_insert
from spark.sinks.log_table import LogLayout, LogRowEncoder

KS = "shop"
UDTS = {"addr": UserType(KS, "addr", ("street", "zip"), ("text", "int"))}
E1, E2 = "657e5210-7cbb-11ee-9858-c9aa1eb53e69", "757e5210-7cbb-11ee-9858-c9aa1eb53e69"
U4 = "3d4f0a6c-58c3-4c5e-9e0b-4b8f9e2a7f11"


def col(name: str, type_: str, kind: ColumnKind = ColumnKind.REGULAR, position: int = -1) -> Column:
    order = ClusteringOrder.ASC if kind is ColumnKind.CLUSTERING else ClusteringOrder.NONE
    return Column(name, type_, kind, position, order)


TYPES = {
    "name": "text", "code": "ascii", "tiny": "tinyint", "small": "smallint", "n": "int", "lng": "bigint",
    "big": "varint", "amount": "decimal", "f": "float", "dbl": "double", "at": "timestamp", "day": "date",
    "t": "time", "d": "duration", "ip": "inet", "u": "uuid", "tu": "timeuuid", "data": "blob", "flag": "boolean",
    "items": "list<int>", "tags": "set<text>", "attrs": "map<text, int>", "counts": "frozen<map<int, text>>",
    "home": "addr", "work": "frozen<addr>", "spots": "frozen<list<frozen<addr>>>",
    "pair": "frozen<tuple<int, text, boolean>>", "nested": "frozen<map<int, frozen<set<timeuuid>>>>",
    "Odd \"Col\"": "text", "v": "vector<float, 2>",
}
LAYOUT = LogLayout.of_table(Table(KS, "orders", uuid.uuid4(), (
    col("id", "int", ColumnKind.PARTITION_KEY, 0), col("seq", "bigint", ColumnKind.CLUSTERING, 0),
    *(col(name, type_) for name, type_ in TYPES.items()))), UDTS)

EVERY_VALUE = {
    "name": "é \"q\"\n", "code": "plain", "tiny": -128, "small": "32767", "n": -2, "lng": -(2 ** 63),
    "big": "-123456789012345678901234567890", "amount": "-12.340", "f": 1.5, "dbl": "NaN", "at": 1_699_284_279_123,
    "day": -719_162, "t": 86_399_999_999_999, "d": {"months": -14, "days": -3, "nanoseconds": -3_723_004_005_006},
    "ip": "2001:db8::1", "u": U4, "tu": E1.upper(), "data": "0x00ff10", "flag": False,
    "items": {E1: 5, E2: -1}, "tags": ["b", "a"], "attrs": {"k": 1, "l": 2}, "counts": [[3, "c"], [-1, "d"]],
    "home": {"zip": 75001, "street": "rue"}, "work": {"street": "avenue", "zip": None},
    "spots": [{"street": "s1"}, {"zip": 2}], "pair": [7, "seven"], "nested": [[2, [E1, E2]], [1, []]],
    "Odd \"Col\"": "",
}
OTHER_FORMS = {
    "small": -1, "n": "7", "big": 2 ** 70, "amount": "-98765432109876543210.98765432109876543210e-7",
    "f": "-Infinity", "dbl": 1e300, "at": "-5",
    "d": [1, 2, 3], "ip": "10.0.0.1", "u": U4.replace("-", ""), "data": "0X", "flag": True, "items": {},
    "tags": [], "attrs": [["k", 1]], "counts": [{"key": 1, "value": "x"}], "pair": [None, None, True],
    "name": "", "lng": "-1",
}
# Values the native core leaves to the reference, whose rows it leaves whole.
LEFT = {
    "at": "2023-11-06T15:24:39.123Z", "v": [1.0, 2.0], "big": "1e3", "attrs": {"k": None},
    "amount": 1.5, "n": "1_000", "day": "2020-01-01", "counts": [[1, "a"], [1, "b"]], "f": "inf",
    "ip": "010.0.0.1", "tiny": 200, "dbl": "1e5 ",
}


def driver_type(tree: tuple) -> type:
    """The driver's type of a type tree: what a prepared statement's column metadata holds."""
    match tree:
        case ("list", element, _):
            return cqltypes.ListType.apply_parameters([driver_type(element)])
        case ("set", element, _):
            return cqltypes.SetType.apply_parameters([driver_type(element)])
        case ("map", key, value, _):
            return cqltypes.MapType.apply_parameters([driver_type(key), driver_type(value)])
        case ("tuple", elements):
            return cqltypes.TupleType.apply_parameters([driver_type(e) for e in elements])
        case ("udt", names, fields, _):
            return cqltypes.UserType.make_udt_class(KS, "addr", names, [driver_type(f) for f in fields])
        case ("vector", element, dimension):
            return cqltypes.VectorType.apply_parameters([driver_type(element), dimension], names=None)
        case ("native", kind, bits, _, time_ordered, ascii):
            return {
                ("TEXT", True): cqltypes.AsciiType, ("TEXT", False): cqltypes.UTF8Type,
                ("INTEGER", 8): cqltypes.ByteType, ("INTEGER", 16): cqltypes.ShortType,
                ("INTEGER", 32): cqltypes.Int32Type, ("INTEGER", 64): cqltypes.LongType,
                ("FLOAT", 32): cqltypes.FloatType, ("FLOAT", 64): cqltypes.DoubleType,
                ("UUID", True): cqltypes.TimeUUIDType, ("UUID", False): cqltypes.UUIDType,
            }.get((kind, ascii if kind == "TEXT" else time_ordered if kind == "UUID" else bits)) or {
                "BLOB": cqltypes.BytesType, "BOOLEAN": cqltypes.BooleanType, "VARINT": cqltypes.IntegerType,
                "DECIMAL": cqltypes.DecimalType, "TIMESTAMP": cqltypes.DateType, "DATE": cqltypes.SimpleDateType,
                "TIME": cqltypes.TimeType, "INET": cqltypes.InetAddressType, "DURATION": cqltypes.DurationType,
            }[kind]
    raise ValueError(tree)


DRIVER_TYPES = [driver_type(type_tree(parse_type(t, UDTS, KS))) for t in LAYOUT.columns().values()] \
    + [cqltypes.LongType]  # the write time


def reference(row: dict) -> list:
    """What `bind` makes of the reference encoder's values."""
    return [v if v is UNSET_VALUE or v is None else t.serialize(v, 4)
            for v, t in zip(LogRowEncoder(LAYOUT).encode(row), DRIVER_TYPES)]


def log_row(n: int, key: dict, columns: dict, *, deleted=(), elements=None, ttl=None, texts=None) -> dict:
    return {
        "keyspace": KS, "table": "orders", "cdc$stream_id": bytes([n]) * 16,
        "cdc$time": f"{n:08x}-7cbb-11ee-9858-c9aa1eb53e69", "cdc$batch_seq_no": n, "cdc$operation": n % 8,
        "cdc$ttl": ttl, "cdc$end_of_batch": n % 2 == 0, "key": json.dumps(key),
        "columns": [(name, json.dumps(value)) for name, value in columns.items()] + list((texts or {}).items()),
        "deleted_columns": list(deleted),
        "deleted_elements": [(name, json.dumps(value)) for name, value in (elements or {}).items()],
        "write_time_us": 1_699_284_279_123_456 + n,
    }


SCHEMA = pa.schema([
    ("keyspace", pa.string()), ("table", pa.string()), ("cdc$stream_id", pa.binary()), ("cdc$time", pa.string()),
    ("cdc$batch_seq_no", pa.int32()), ("cdc$operation", pa.int8()), ("cdc$ttl", pa.int64()),
    ("cdc$end_of_batch", pa.bool_()), ("key", pa.string()), ("columns", pa.map_(pa.string(), pa.string())),
    ("deleted_columns", pa.list_(pa.string())), ("deleted_elements", pa.map_(pa.string(), pa.string())),
    ("write_time_us", pa.int64()),
])

NATIVE_ROWS = [
    log_row(1, {"id": 1, "seq": 10}, EVERY_VALUE, ttl=600),
    log_row(2, {"id": 1, "seq": "11"}, OTHER_FORMS),
    log_row(3, {"id": 2}, {}, deleted=["name", "home", "gone"], elements={
        "tags": ["a"], "items": [E2], "home": ["zip", 0], "attrs": ["k"], "gone": ["x"]}),
    log_row(4, {"id": 3, "seq": None, "other": 1}, {"name": None, "gone": 5}, texts={"n": None, "code": "null"}),
    log_row(5, {"id": 4, "seq": 1}, {"name": "first", "n": 1}, texts={"name": '"last"', "n": "null"}),
]


def batch(rows: list[dict]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist(rows, schema=SCHEMA)


QUERY_ID = b"\x01prepared-insert"


def driver_statements(values: list[list]) -> bytes:
    """The count and statements of the driver's BATCH message of the INSERT bound to each row's `values`."""
    body = io.BytesIO()
    BatchMessage(BatchType.UNLOGGED, [(True, QUERY_ID, v) for v in values], ConsistencyLevel.ONE).send_body(body, 4)
    return body.getvalue()[1:-3]  # the type before; the consistency and flags after


def requests(rows: pa.RecordBatch, limit: int = 1 << 20) -> tuple[list[tuple[bytes, bytes, list[int]]], list[int]]:
    return encoded_batches(native_insert(LAYOUT), rows, QUERY_ID, limit)


def test_each_rows_statement_holds_the_bytes_bind_makes_of_the_reference_encoders() -> None:
    made, left = requests(batch(NATIVE_ROWS), limit=0)
    assert left == []
    assert [(key, rows) for key, _, rows in made] == [(row["cdc$stream_id"], [i]) for i, row in enumerate(NATIVE_ROWS)]
    for row, (_, statements, _) in zip(NATIVE_ROWS, made):
        assert statements == driver_statements([reference(row)]), row["cdc$batch_seq_no"]
    full = reference(NATIVE_ROWS[0])
    assert full[LAYOUT_POSITION["name"]] == "é \"q\"\n".encode() and full[LAYOUT_POSITION["cdc$ttl"]] == (
        600).to_bytes(8, "big")
    assert reference(NATIVE_ROWS[3])[LAYOUT_POSITION["seq"]] is UNSET_VALUE


LAYOUT_POSITION = {name: i for i, name in enumerate(LAYOUT.columns())}


def test_a_partitions_rows_go_together_up_to_the_limit_as_the_reference_groups_them() -> None:
    """Two stream ids' rows interleaved: each stream's rows in batches of at most the limit's bytes of values,
    streams in the order of their first row, each batch the driver's statements of the reference's values."""
    rows = [{**row, "cdc$stream_id": bytes([i % 2]) * 16} for i, row in enumerate(NATIVE_ROWS * 2)]
    sizes = [sum(len(v) for v in reference(row) if isinstance(v, bytes)) for row in rows]
    limit = sizes[0] + sizes[2]
    made, left = requests(batch(rows), limit)
    assert left == []
    expected, open_ = [], {}
    for i, (row, size) in enumerate(zip(rows, sizes)):  # `_requests`' rule
        stream = row["cdc$stream_id"]
        group = open_.get(stream)
        if group is None or group[1] + size > limit:
            group = open_[stream] = [[], 0]
            expected.append((stream, group))
        group[0].append(i)
        group[1] += size
    expected.sort(key=lambda e: e[0] != rows[0]["cdc$stream_id"])  # stable: each stream's batches in order
    assert [(key, indices) for key, _, indices in made] == [(stream, group[0]) for stream, group in expected]
    assert any(len(indices) > 1 for _, _, indices in made) and len(made) > 2
    for _, statements, indices in made:
        assert statements == driver_statements([reference(rows[i]) for i in indices])


def test_the_message_sent_is_the_drivers_batch_of_the_same_values() -> None:
    """An `EncodedBatch`'s message: the driver's own BATCH body, its options (consistency, timestamp) included,
    on protocol 4 and 5."""
    (made,), _ = requests(batch(NATIVE_ROWS[:2]).slice(0, 1))
    routing_key, statements, _ = made
    query = EncodedBatch(statements, routing_key, KS, ConsistencyLevel.LOCAL_QUORUM)
    assert query.routing_key == routing_key and query.keyspace == KS
    for version in (4, 5):
        made_by_driver = BatchMessage(BatchType.UNLOGGED, [], ConsistencyLevel.LOCAL_QUORUM, timestamp=1_700_000_000)
        future = SimpleNamespace(query=query, message=made_by_driver)
        _encode(future)
        _encode(future)  # a second listener of the same session changes nothing
        sent, expected = io.BytesIO(), io.BytesIO()
        future.message.send_body(sent, version)
        BatchMessage(BatchType.UNLOGGED, [(True, QUERY_ID, reference(NATIVE_ROWS[0]))], ConsistencyLevel.LOCAL_QUORUM,
                     timestamp=1_700_000_000).send_body(expected, version)
        assert sent.getvalue() == expected.getvalue(), version


def test_an_encoded_batch_whose_session_has_no_listener_fails_rather_than_going_out_empty() -> None:
    (made,), _ = requests(batch(NATIVE_ROWS[:1]))
    query = EncodedBatch(made[1], made[0], KS, ConsistencyLevel.ONE)
    message = BatchMessage(query.batch_type, query._statements_and_parameters, ConsistencyLevel.ONE)  # as the driver
    with pytest.raises(RuntimeError, match="send_encoded_batches"):
        message.send_body(io.BytesIO(), 4)


def test_a_slice_of_a_batch_is_read_from_its_offset() -> None:
    made, _ = requests(batch(NATIVE_ROWS).slice(2, 2))
    expected = [driver_statements([reference(row)]) for row in NATIVE_ROWS[2:4]]
    assert [statements for _, statements, _ in made] == expected
    assert [rows for _, _, rows in made] == [[0], [1]]


@pytest.mark.parametrize("column", sorted(LEFT))
def test_a_row_with_a_value_the_native_core_leaves_is_left_whole_to_the_reference(column: str) -> None:
    rows = [NATIVE_ROWS[0], log_row(6, {"id": 5, "seq": 1}, {**OTHER_FORMS, column: LEFT[column]})]
    made, left = requests(batch(rows))
    expected = [(driver_statements([reference(rows[0])]), [0])]
    assert [(statements, indices) for _, statements, indices in made] == expected
    assert left == [1]


def test_a_map_given_as_an_object_holds_the_same_entries_in_key_order() -> None:
    row = log_row(7, {"id": 1, "seq": 1}, {"attrs": {"z": 1, "a": 2, "m": 3}})
    ((_, statements, _),), _ = requests(batch([row]))
    at, attrs = LAYOUT_POSITION["attrs"], DRIVER_TYPES[LAYOUT_POSITION["attrs"]]
    in_key_order = reference(row)
    in_key_order[at] = attrs.serialize({"a": 2, "m": 3, "z": 1}, 4)
    assert statements == driver_statements([in_key_order])
    assert dict(attrs.deserialize(reference(row)[at], 4)) == {"z": 1, "a": 2, "m": 3}


def test_a_batch_with_a_null_where_none_may_be_is_left_to_the_reference() -> None:
    rows = batch(NATIVE_ROWS[:2])
    nulled = rows.set_column(rows.schema.get_field_index("write_time_us"), "write_time_us",
                             pa.array([1, None], pa.int64()))
    assert requests(nulled) == ([], [0, 1])
