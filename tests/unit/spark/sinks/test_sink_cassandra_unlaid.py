"""What a write task of the Cassandra sink finds its rows name that the job gave it no layout for: tables, and
the columns their cells, deleted columns and deleted elements name (`spark.sinks.cassandra.sink._unlaid`)."""
from __future__ import annotations

import pyarrow as pa

from spark.sinks.cassandra.sink import _tables, _unlaid

SCHEMA = pa.schema([
    ("keyspace", pa.string()), ("table", pa.string()), ("columns", pa.map_(pa.string(), pa.string())),
    ("deleted_columns", pa.list_(pa.string())), ("deleted_elements", pa.map_(pa.string(), pa.string())),
])


def rows(*items: tuple) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([
        {"keyspace": "ks", "table": table, "columns": list(cells.items()), "deleted_columns": list(deleted),
         "deleted_elements": list(elements.items())}
        for table, cells, deleted, elements in items], schema=SCHEMA)


BATCH = rows(
    ("a", {"x": "1"}, [], {}),
    ("b", {"y": "2"}, ["z"], {"w": "[1]"}),
    ("a", {}, ["v"], {"u": '["k"]'}),
    ("c", {}, [], {}),  # a partition deletion: the table, and no column
)


def test_known_tables_and_columns_leave_nothing() -> None:
    known = {("ks", "a"): frozenset("xvu"), ("ks", "b"): frozenset("yzw"), ("ks", "c"): frozenset()}
    assert _unlaid(_tables(BATCH), known) == set()


def test_each_unknown_column_is_named_by_its_table_and_an_unknown_table_alone() -> None:
    known = {("ks", "a"): frozenset("x"), ("ks", "b"): frozenset("yzw")}
    assert _unlaid(_tables(BATCH), known) == {("ks", "a", "v"), ("ks", "a", "u"), ("ks", "c", None)}


def test_a_slice_names_only_its_own_rows_columns() -> None:
    known = {("ks", "a"): frozenset(), ("ks", "b"): frozenset(), ("ks", "c"): frozenset()}
    assert _unlaid(_tables(BATCH.slice(1, 1)), known) == {("ks", "b", "y"), ("ks", "b", "z"), ("ks", "b", "w")}
    assert _unlaid(_tables(BATCH.slice(3, 1)), known) == set()
