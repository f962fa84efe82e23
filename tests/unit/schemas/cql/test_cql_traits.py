"""Each native type's traits, and each target's mapping of them: the column types a native type gets in
PostgreSQL, MySQL, Avro and Spark, and what a filter casts it to, as the targets promise in their docs."""
from __future__ import annotations

import pytest
from pyspark.sql.types import (BinaryType, BooleanType, ByteType, DateType, DoubleType, FloatType, IntegerType,
                               LongType, ShortType, StringType, StructType, TimestampType)

from schemas.avro.types import avro_type
from schemas.cql import NATIVE_TYPES, Kind
from spark.delivery.selection import _FILTER_TYPES
from spark.mirror.order import UnorderedType, sort_key
from spark.sinks.mysql.types import mysql_column
from spark.sinks.postgres.types import pg_column
from spark.sinks.typed_log import spark_type

TS = {"type": "long", "logicalType": "timestamp-millis"}
UUID = {"type": "string", "logicalType": "uuid"}
# name: (kind, bits, PostgreSQL, MySQL, Avro, Spark, filter cast)
EXPECTED = {
    "ascii": (Kind.TEXT, 0, "text", "LONGTEXT", "string", StringType(), None),
    "text": (Kind.TEXT, 0, "text", "LONGTEXT", "string", StringType(), None),
    "varchar": (Kind.TEXT, 0, "text", "LONGTEXT", "string", StringType(), None),
    "tinyint": (Kind.INTEGER, 8, "smallint", "TINYINT", "int", ByteType(), "bigint"),
    "smallint": (Kind.INTEGER, 16, "smallint", "SMALLINT", "int", ShortType(), "bigint"),
    "int": (Kind.INTEGER, 32, "integer", "INT", "int", IntegerType(), "bigint"),
    "bigint": (Kind.INTEGER, 64, "bigint", "BIGINT", "long", LongType(), "bigint"),
    "counter": (Kind.INTEGER, 64, "jsonb", "JSON", "long", LongType(), "bigint"),
    "varint": (Kind.VARINT, 0, "numeric", "LONGTEXT", "string", StringType(), "decimal(38,0)"),
    "decimal": (Kind.DECIMAL, 0, "numeric", "LONGTEXT", "string", StringType(), "double"),
    "float": (Kind.FLOAT, 32, "real", "DOUBLE", "float", FloatType(), "double"),
    "double": (Kind.FLOAT, 64, "double precision", "DOUBLE", "double", DoubleType(), "double"),
    "boolean": (Kind.BOOLEAN, 0, "boolean", "BOOLEAN", "boolean", BooleanType(), "boolean"),
    "blob": (Kind.BLOB, 0, "bytea", "LONGBLOB", "bytes", BinaryType(), None),
    "timestamp": (Kind.TIMESTAMP, 0, "timestamp with time zone", "DATETIME(3)", TS, TimestampType(), None),
    "date": (Kind.DATE, 0, "date", "DATE", {"type": "int", "logicalType": "date"}, DateType(), "bigint"),
    "time": (Kind.TIME, 0, "bigint", "BIGINT", "long", LongType(), "bigint"),
    "uuid": (Kind.UUID, 0, "uuid", "CHAR(36)", UUID, StringType(), None),
    "timeuuid": (Kind.UUID, 0, "uuid", "CHAR(36)", UUID, StringType(), None),
    "inet": (Kind.INET, 0, "inet", "VARCHAR(45)", "string", StringType(), None),
    "duration": (Kind.DURATION, 0, "jsonb", "JSON", None, StructType, None),
}


def test_every_native_type_is_described():
    assert set(EXPECTED) == set(NATIVE_TYPES)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_native_type_s_traits_and_its_column_in_each_target(name):
    cql = NATIVE_TYPES[name]
    kind, bits, postgres, mysql, avro, spark, cast = EXPECTED[name]
    assert (cql.kind, cql.bits) == (kind, bits)
    assert pg_column("c", cql).type == postgres
    assert mysql_column("c", cql).type == mysql
    if avro is not None:
        assert avro_type(cql, "ns").schema == avro
    assert spark_type(cql) == spark if not isinstance(spark, type) else isinstance(spark_type(cql), spark)
    assert _FILTER_TYPES.get(cql.kind) == cast


def test_the_flags_tell_the_types_of_one_kind_apart():
    assert [n for n, t in NATIVE_TYPES.items() if t.counter] == ["counter"]
    assert [n for n, t in NATIVE_TYPES.items() if t.time_ordered] == ["timeuuid"]
    assert [n for n, t in NATIVE_TYPES.items() if t.ascii] == ["ascii"]
    assert {n for n, t in NATIVE_TYPES.items() if t.json_is_string} == {
        "ascii", "text", "varchar", "blob", "uuid", "timeuuid", "inet", "varint", "decimal"}


def test_uuids_and_timeuuids_order_apart_and_durations_not_at_all():
    early, late = "00000000-0000-1000-8000-000000000000", "ffffffff-0000-1000-8000-000000000000"
    assert sort_key(NATIVE_TYPES["uuid"])(early) < sort_key(NATIVE_TYPES["uuid"])(late)
    assert sort_key(NATIVE_TYPES["timeuuid"]) is not sort_key(NATIVE_TYPES["uuid"])
    with pytest.raises(UnorderedType):
        sort_key(NATIVE_TYPES["duration"])
