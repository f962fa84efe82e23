"""Log rows and dead letters as Avro records (the Kafka sink's `format=avro`)."""
from __future__ import annotations

import datetime as dt

import pytest
from fastavro import parse_schema
from pyspark.sql import Row
from pyspark.sql.types import IntegerType, MapType, StructField, StructType

from schemas.avro.wire import frame, unframe
from spark import rows as R
from spark.sinks.kafka.avro_rows import avro_datum, record_schema

UTC = dt.timezone.utc
WRITTEN = dt.datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)


def test_the_log_row_record_follows_the_spark_layout():
    schema = record_schema(R.LOG_ROW, "LogRow")
    parse_schema(schema)
    names = [f["name"] for f in schema["fields"]]
    assert names == [f.name.replace("$", "_") for f in R.LOG_ROW.fields]
    renamed = {f["name"]: f["cql_name"] for f in schema["fields"] if "cql_name" in f}
    assert renamed["cdc_stream_id"] == "cdc$stream_id" and set(renamed) == {n for n in names if n.startswith("cdc_")}
    by_name = {f["name"]: f for f in schema["fields"]}
    assert by_name["keyspace"]["type"] == "string"  # not nullable in the layout: no union
    assert by_name["cdc_ttl"]["type"] == ["null", "long"] and by_name["cdc_ttl"]["default"] is None
    assert by_name["write_time"]["type"] == {"type": "long", "logicalType": "timestamp-micros"}


def test_a_dead_letter_goes_through_the_wire_unchanged():
    parsed = parse_schema(record_schema(R.DEAD_LETTER, "DeadLetter"))
    row = Row(reason=R.UNDECODABLE, detail="MalformedPayload: magic byte 1", topic="t", partition=0, offset=5,
              kafka_time=WRITTEN, key=None, value=b"\x01junk", keyspace=None, table=None, write_time_us=None,
              change_id="undecodable:t:0:5")
    assert unframe(frame(1, parsed, avro_datum(row)), parsed) == row.asDict()


def test_a_layout_avro_cannot_hold_is_refused():
    with pytest.raises(TypeError, match="m: an Avro map needs string keys"):
        record_schema(StructType([StructField("m", MapType(IntegerType(), IntegerType()))]), "Bad")
