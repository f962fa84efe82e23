"""The ScyllaDB-style log table of a base table: layout, DDL, and LOG_ROW rows as INSERT values."""
from __future__ import annotations

import json
import pickle
import uuid

import pytest
from cassandra.query import UNSET_VALUE

from schemas.tables.model import ClusteringOrder, Column, ColumnKind, Table, UserType
from spark.sinks.log_table import (
    DataColumn,
    LogLayout,
    LogRowEncoder,
    LogRowValues,
    UnknownColumn,
    data_column,
    other_columns,
    quote,
    typed_log_layout,
)

KS = "shop"
UDTS = {"addr": UserType(KS, "addr", ("street", "zip"), ("text", "int")),
        "Odd Type": UserType(KS, "Odd Type", ("a",), ("int",))}
STREAM = bytes(range(16))
TIME = "657e5210-7cbb-11ee-9858-c9aa1eb53e69"
ELEMENT = "757e5210-7cbb-11ee-9858-c9aa1eb53e69"


def table(*columns: Column, name: str = "orders") -> Table:
    return Table(KS, name, uuid.uuid4(), columns)


def col(name: str, type_: str, kind: ColumnKind = ColumnKind.REGULAR, position: int = -1) -> Column:
    order = ClusteringOrder.ASC if kind is ColumnKind.CLUSTERING else ClusteringOrder.NONE
    return Column(name, type_, kind, position, order)


ORDERS = table(
    col("id", "int", ColumnKind.PARTITION_KEY, 0),
    col("region", "text", ColumnKind.PARTITION_KEY, 1),
    col("seq", "timeuuid", ColumnKind.CLUSTERING, 0),
    col("note", "text", ColumnKind.STATIC),
    col("items", "list<int>"),
    col("tags", "set<frozen<list<text>>>"),
    col("attrs", "map<text, frozen<addr>>"),
    col("home", "addr"),
    col("work", "frozen<addr>"),
    col("pair", "frozen<tuple<int, text>>"),
    col("Odd, Col", '"Odd Type"'),
)


@pytest.mark.parametrize("type_text, log_type, elements", [
    ("int", "int", None),
    ("frozen<list<int>>", "frozen<list<int>>", None),
    ("list<int>", "frozen<map<timeuuid, int>>", "frozen<set<timeuuid>>"),
    ("list<frozen<addr>>", "frozen<map<timeuuid, frozen<addr>>>", "frozen<set<timeuuid>>"),
    ("set<frozen<list<text>>>", "frozen<set<frozen<list<text>>>>", "frozen<set<frozen<list<text>>>>"),
    ("map<frozen<tuple<int, text>>, blob>", "frozen<map<frozen<tuple<int, text>>, blob>>",
     "frozen<set<frozen<tuple<int, text>>>>"),
    ("addr", "frozen<addr>", "frozen<set<smallint>>"),
    ('"Odd Type"', 'frozen<"Odd Type">', "frozen<set<smallint>>"),
    ("frozen<addr>", "frozen<addr>", None),
    ("vector<float, 3>", "vector<float, 3>", None),
])
def test_log_types_as_scylladb_lays_them_out(type_text: str, log_type: str, elements: str | None) -> None:
    column = data_column("x", type_text, UDTS, KS)
    assert (column.type, column.elements_type) == (log_type, elements)


def test_udt_columns_remember_their_field_names() -> None:
    assert data_column("h", "addr", UDTS, KS).udt_fields == ("street", "zip")
    assert data_column("h", "frozen<addr>", UDTS, KS).udt_fields is None


def test_layout_columns_in_table_order() -> None:
    layout = LogLayout.of_table(ORDERS, UDTS)
    assert layout.table == "orders_scylla_cdc_log"
    assert layout.columns() == {
        "cdc$stream_id": "blob", "cdc$time": "timeuuid", "cdc$batch_seq_no": "int", "cdc$operation": "tinyint",
        "cdc$ttl": "bigint", "cdc$end_of_batch": "boolean",
        "id": "int", "region": "text", "seq": "timeuuid",
        "Odd, Col": 'frozen<"Odd Type">', "attrs": "frozen<map<text, frozen<addr>>>", "home": "frozen<addr>",
        "items": "frozen<map<timeuuid, int>>", "note": "text", "pair": "frozen<tuple<int, text>>",
        "tags": "frozen<set<frozen<list<text>>>>", "work": "frozen<addr>",
        "cdc$deleted_Odd, Col": "boolean", "cdc$deleted_attrs": "boolean", "cdc$deleted_home": "boolean",
        "cdc$deleted_items": "boolean", "cdc$deleted_note": "boolean", "cdc$deleted_pair": "boolean",
        "cdc$deleted_tags": "boolean", "cdc$deleted_work": "boolean",
        "cdc$deleted_elements_Odd, Col": "frozen<set<smallint>>", "cdc$deleted_elements_attrs": "frozen<set<text>>",
        "cdc$deleted_elements_home": "frozen<set<smallint>>", "cdc$deleted_elements_items": "frozen<set<timeuuid>>",
        "cdc$deleted_elements_tags": "frozen<set<frozen<list<text>>>>",
    }


def test_counters_are_not_logged() -> None:
    counters = table(col("id", "int", ColumnKind.PARTITION_KEY, 0), col("hits", "counter"), name="hits")
    layout = LogLayout.of_table(counters, {})
    assert layout.data_columns == () and list(layout.columns())[-1] == "id"


def test_create_statement() -> None:
    statement = LogLayout.of_table(ORDERS, UDTS).create_statement()
    assert statement.startswith('CREATE TABLE IF NOT EXISTS "shop"."orders_scylla_cdc_log" ("cdc$stream_id" blob,')
    assert '"Odd, Col" frozen<"Odd Type">' in statement
    assert '"cdc$deleted_elements_items" frozen<set<timeuuid>>' in statement
    assert 'PRIMARY KEY (("cdc$stream_id"), "cdc$time", "cdc$batch_seq_no"))' in statement
    assert "default_time_to_live" not in statement
    with_ttl = LogLayout.of_table(ORDERS, UDTS).create_statement(ttl=86400)
    assert "default_time_to_live = 86400 AND gc_grace_seconds = 0" in with_ttl
    assert "'compaction_window_size': 60" in with_ttl  # 86400/24 s = 60 min


def test_add_statement_adds_only_what_is_missing() -> None:
    layout = LogLayout.of_table(ORDERS, UDTS)
    assert layout.add_statement(layout.columns()) is None
    existing = [n for n in layout.columns() if n not in ("note", "cdc$deleted_note")]
    assert layout.add_statement(existing) == (
        'ALTER TABLE "shop"."orders_scylla_cdc_log" ADD IF NOT EXISTS ("note" text, "cdc$deleted_note" boolean)'
    )


def test_insert_statement_binds_every_column_and_the_write_time() -> None:
    layout = LogLayout.of_table(ORDERS, UDTS)
    statement = layout.insert_statement()
    assert statement.count("?") == len(layout.columns()) + 1 and statement.endswith("USING TIMESTAMP ?")
    assert quote('a"b') == '"a""b"'


def test_layout_read_back_from_the_log_table() -> None:
    layout = LogLayout.of_table(ORDERS, UDTS)
    again = LogLayout.of_log_table(KS, "orders", layout.columns(), UDTS)
    assert set(again.key_columns) == set(layout.key_columns)
    assert set(again.data_columns) == set(layout.data_columns)
    assert again.columns().keys() == layout.columns().keys()


def test_layouts_pickle_and_hash() -> None:
    layout = LogLayout.of_table(ORDERS, UDTS)
    assert pickle.loads(pickle.dumps(layout)) == layout
    assert hash(LogLayout.of_table(ORDERS, UDTS)) == hash(layout)


def row(**overrides) -> dict:
    base = {
        "keyspace": KS, "table": "orders", "cdc$stream_id": STREAM, "cdc$time": TIME, "cdc$batch_seq_no": 0,
        "cdc$operation": 2, "cdc$ttl": None, "cdc$end_of_batch": True,
        "key": json.dumps({"id": 7, "region": "eu", "seq": ELEMENT}),
        "columns": [("items", json.dumps({ELEMENT: 5})), ("home", json.dumps({"zip": 1})),
                    ("note", json.dumps("n")), ("pair", "null")],
        "deleted_columns": ["pair"],
        "deleted_elements": [("home", json.dumps(["street"])), ("tags", json.dumps([["a"]]))],
        "write_time_us": 1_699_284_279_123_456,
    }
    base.update(overrides)
    return base


def test_encode_a_row() -> None:
    layout = LogLayout.of_table(ORDERS, UDTS)
    names = list(layout.columns())
    values = LogRowEncoder(layout).encode(row())
    assert len(values) == len(names) + 1
    got = {n: v for n, v in zip(names, values) if v is not UNSET_VALUE}
    assert got == {
        "cdc$stream_id": STREAM, "cdc$time": uuid.UUID(TIME), "cdc$batch_seq_no": 0, "cdc$operation": 2,
        "cdc$end_of_batch": True, "id": 7, "region": "eu", "seq": uuid.UUID(ELEMENT),
        "items": {uuid.UUID(ELEMENT): 5}, "home": (None, 1), "note": "n",
        "cdc$deleted_pair": True, "cdc$deleted_elements_home": [0], "cdc$deleted_elements_tags": [["a"]],
    }
    assert values[-1] == 1_699_284_279_123_456
    # A Spark Row's maps come as dicts; the TTL is bound when set.
    as_dicts = row(columns={"note": '"m"'}, deleted_elements={}, deleted_columns=[], **{"cdc$ttl": 60})
    values = LogRowEncoder(layout).encode(as_dicts)
    assert values[names.index("note")] == "m" and values[names.index("cdc$ttl")] == 60


def test_a_row_as_change_events_carry_values() -> None:
    # What PostgreSQL's and MySQL's typed logs convert from: each value in its log column type's event form.
    values = LogRowValues(LogLayout.of_table(ORDERS, UDTS)).values(row())
    assert values == {
        "cdc$stream_id": "0x" + STREAM.hex(), "cdc$time": TIME, "cdc$batch_seq_no": 0, "cdc$operation": 2,
        "cdc$ttl": None, "cdc$end_of_batch": True, "id": 7, "region": "eu", "seq": ELEMENT,
        "items": [[ELEMENT, 5]],  # a non-frozen list, logged as frozen<map<timeuuid, int>>
        "home": {"zip": 1}, "note": "n", "pair": None, "cdc$deleted_pair": True,
        "cdc$deleted_elements_home": [0], "cdc$deleted_elements_tags": [["a"]],
    }


def test_columns_a_typed_log_lacks_are_kept_aside() -> None:
    extra = row(columns=[("gone", "1"), ("note", '"n"')], deleted_columns=["pair", "gone", "also"],
                deleted_elements=[("old", '["k"]')])
    assert other_columns(extra, LogLayout.of_table(ORDERS, UDTS).data_names) == {
        "gone": "1", "also": None, "cdc$deleted_elements_old": '["k"]'}


def test_a_typed_log_keeps_the_columns_its_table_dropped() -> None:
    logged = LogLayout.of_table(ORDERS, UDTS)
    dropped = table(*[c for c in ORDERS.columns if c.name != "note"], col("added", "bigint"))
    layout = typed_log_layout(dropped, UDTS, logged)
    assert {c.name for c in layout.data_columns} == logged.data_names | {"added"}
    assert typed_log_layout(None, UDTS, logged) == logged
    assert typed_log_layout(None, UDTS, None) is None


def test_unknown_columns_are_skipped_or_refused() -> None:
    layout = LogLayout.of_table(ORDERS, UDTS)
    encoder = LogRowEncoder(layout)
    extra = row(columns=[("gone", "1")], deleted_columns=["gone"], deleted_elements=[])
    assert encoder.encode(extra)[len(layout.columns()) - 1] is UNSET_VALUE
    with pytest.raises(UnknownColumn):
        encoder.encode(extra, skip_unknown=False)


def test_bad_values_raise() -> None:
    encoder = LogRowEncoder(LogLayout.of_table(ORDERS, UDTS))
    with pytest.raises(TypeError):
        encoder.encode(row(columns=[("note", "5")]))
    with pytest.raises(ValueError):
        encoder.encode(row(**{"cdc$stream_id": None}))


def test_data_column_names() -> None:
    column = DataColumn("x", "int")
    assert (column.deleted, column.deleted_elements) == ("cdc$deleted_x", "cdc$deleted_elements_x")
