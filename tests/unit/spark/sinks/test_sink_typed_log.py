"""A base table's typed log for Spark: each CQL type's Spark type, and LOG_ROW rows as Arrow rows of it."""
from __future__ import annotations

import datetime as dt
import json
import uuid

import pyarrow as pa
import pytest
from pyspark.sql.types import (ArrayType, BinaryType, ByteType, DateType, IntegerType, LongType, MapType, ShortType,
                               StringType, StructField, StructType, TimestampType)

from schemas.cql import parse_type
from schemas.tables.model import ClusteringOrder, Column, ColumnKind, Table, UserType
from spark.rows import arrow_schema
from spark.sinks.log_table import LogLayout, LogRowEncoder
from spark.sinks.typed_log import CQL_TYPE, OTHER_COLUMNS, TypedLog, TypedLogError, spark_type

KS = "shop"
UDTS = {"addr": UserType(KS, "addr", ("street", "zip code"), ("text", "int"))}
STREAM = bytes(range(16))
TIME = "657e5210-7cbb-11ee-9858-c9aa1eb53e69"
FIRST, SECOND = "157e5210-7cbb-11ee-9858-c9aa1eb53e69", "257e5210-7cbb-11ee-9858-c9aa1eb53e69"
DURATION = StructType([StructField("months", IntegerType()), StructField("days", IntegerType()),
                       StructField("nanoseconds", LongType())])


def col(name: str, type_: str, kind: ColumnKind = ColumnKind.REGULAR, position: int = -1) -> Column:
    order = ClusteringOrder.ASC if kind is ColumnKind.CLUSTERING else ClusteringOrder.NONE
    return Column(name, type_, kind, position, order)


ORDERS = Table(KS, "orders", uuid.uuid4(), (
    col("id", "int", ColumnKind.PARTITION_KEY, 0),
    col("at", "timestamp", ColumnKind.CLUSTERING, 0),
    col("note", "text", ColumnKind.STATIC),
    col("day", "date"), col("since", "time"), col("big", "varint"), col("price", "decimal"), col("raw", "blob"),
    col("took", "duration"), col("ip", "inet"), col("small", "smallint"), col("tiny", "tinyint"),
    col("items", "list<int>"), col("tags", "set<text>"), col("home", "addr"),
    col("pair", "frozen<tuple<int, text>>"), col("Odd Name-1", "map<text, bigint>"),
    col("nested", "frozen<map<frozen<map<int, int>>, text>>"), col("hits", "counter"),
))


@pytest.mark.parametrize("type_text, expected", [
    ("text", StringType()), ("tinyint", ByteType()), ("smallint", ShortType()), ("bigint", LongType()),
    ("blob", BinaryType()), ("timestamp", TimestampType()), ("date", DateType()), ("time", LongType()),
    ("varint", StringType()), ("decimal", StringType()), ("timeuuid", StringType()), ("duration", DURATION),
    ("vector<float, 3>", ArrayType(spark_type(parse_type("float")))),
    ("frozen<map<text, frozen<list<int>>>>", MapType(StringType(), ArrayType(IntegerType()))),
    ("frozen<tuple<int, blob>>", StructType([StructField("_1", IntegerType()), StructField("_2", BinaryType())])),
    ("frozen<addr>", StructType([StructField("street", StringType()), StructField("zip code", IntegerType())])),
    # Spark cannot key a map by a map: such a map is its entries.
    ("frozen<map<frozen<map<int, int>>, text>>", ArrayType(StructType([
        StructField("key", MapType(IntegerType(), IntegerType())), StructField("value", StringType())]))),
])
def test_each_cql_type_has_a_spark_type(type_text, expected):
    assert spark_type(parse_type(type_text, UDTS, KS)) == expected


def log_row(**overrides) -> dict:
    base = {
        "keyspace": KS, "table": "orders", "cdc$stream_id": STREAM, "cdc$time": TIME, "cdc$batch_seq_no": 0,
        "cdc$operation": 1, "cdc$ttl": 60, "cdc$end_of_batch": True,
        "key": json.dumps({"id": 7, "at": 1_699_284_279_123}),
        "columns": [("day", "-1"), ("since", "49530000000000"), ("big", json.dumps("1180591620717411303424")),
                    ("price", json.dumps("-12.345")), ("raw", json.dumps("0x00ff")),
                    ("took", json.dumps({"months": 14, "days": 3, "nanoseconds": 5})), ("ip", json.dumps("::1")),
                    ("small", "-2"), ("tiny", "-1"), ("items", json.dumps({FIRST: 5, SECOND: 6})),
                    ("tags", json.dumps(["a", "b"])), ("home", json.dumps({"zip code": 1})),
                    ("pair", json.dumps([1, "t"])), ("Odd Name-1", json.dumps([["k", 2 ** 40]])),
                    ("nested", json.dumps([[[[1, 2]], "x"]])), ("hits", "3")],
        "deleted_columns": ["note"],
        "deleted_elements": [("home", json.dumps(["street"])), ("tags", json.dumps(["c"]))],
        "write_time_us": 1_699_284_279_123_456,
    }
    return {**base, **overrides}


def test_a_log_row_becomes_a_row_of_spark_values_as_arrow_takes_them():
    typed = TypedLog(LogLayout.of_table(ORDERS, UDTS, counters=True))
    got = typed.row(log_row(), LogRowEncoder(typed.layout))
    assert got["cdc$stream_id"] == STREAM and got["cdc$time"] == TIME and got["cdc$operation"] == 1
    assert got["id"] == 7 and got["at"] == 1_699_284_279_123_000  # µs for Arrow's timestamp
    assert got["day"] == -1 and got["since"] == 49_530_000_000_000
    assert got["big"] == "1180591620717411303424" and got["price"] == "-12.345" and got["raw"] == b"\x00\xff"
    assert got["took"] == {"months": 14, "days": 3, "nanoseconds": 5} and got["ip"] == "::1"
    assert got["small"] == -2 and got["tiny"] == -1
    assert sorted(got["items"]) == [(FIRST, 5), (SECOND, 6)]  # a non-frozen list: by element timeuuid
    assert sorted(got["tags"]) == ["a", "b"]
    assert got["home"] == {"street": None, "zip code": 1} and got["pair"] == {"_1": 1, "_2": "t"}
    assert got["Odd Name-1"] == [("k", 2 ** 40)]
    assert got["nested"] == [{"key": [(1, 2)], "value": "x"}]
    assert got["cdc$deleted_note"] is True and got["cdc$deleted_day"] is None
    assert got["cdc$deleted_elements_home"] == [0] and got["cdc$deleted_elements_tags"] == ["c"]
    assert got["hits"] == 3  # a counter column: unlike a Cassandra log table, a Delta table can hold it

    batch = pa.RecordBatch.from_pylist([got, typed.row(log_row(columns=[], deleted_elements=[]),
                                                       LogRowEncoder(typed.layout))],
                                       schema=arrow_schema(typed.schema))
    first = batch.slice(0, 1).to_pylist()[0]
    assert first["at"] == dt.datetime(2023, 11, 6, 15, 24, 39, 123_000, tzinfo=dt.timezone.utc)
    assert first["day"] == dt.date(1969, 12, 31) and first["nested"] == [{"key": [(1, 2)], "value": "x"}]
    assert batch.slice(1, 1).to_pylist()[0]["items"] is None


def test_each_column_keeps_its_cql_type_so_a_log_outlives_its_base_table():
    typed = TypedLog(LogLayout.of_table(ORDERS, UDTS))
    assert typed.schema["items"].metadata == {CQL_TYPE: "frozen<map<timeuuid, int>>"}
    again = TypedLog.of_schema(KS, "orders", typed.schema, UDTS)
    assert again.schema == typed.schema
    row = log_row()
    assert again.row(row, LogRowEncoder(again.layout)) == typed.row(row, LogRowEncoder(typed.layout))


def test_columns_the_base_table_no_longer_lists_are_kept_as_json():
    typed = TypedLog(LogLayout.of_table(ORDERS, UDTS, counters=True))
    got = typed.row(log_row(columns=[("small", "1"), ("gone", json.dumps("v"))], deleted_columns=["was"],
                            deleted_elements=[("old", json.dumps(["x"]))]), LogRowEncoder(typed.layout))
    assert got["small"] == 1
    assert sorted(got[OTHER_COLUMNS], key=str) == [("cdc$deleted_elements_old", '["x"]'), ("gone", '"v"'),
                                                   ("was", None)]
    assert typed.row(log_row(deleted_columns=[], deleted_elements=[]), LogRowEncoder(typed.layout))[OTHER_COLUMNS] \
        is None


def test_a_value_that_does_not_fit_its_type_names_the_change():
    typed = TypedLog(LogLayout.of_table(ORDERS, UDTS))
    with pytest.raises(TypedLogError, match=r"shop\.orders: change c0ffee \(cdc\$time .*\).*ValueError: .*'many'"):
        typed.row(log_row(columns=[("small", json.dumps("many"))], change_id="c0ffee"), LogRowEncoder(typed.layout))
