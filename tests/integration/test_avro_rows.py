"""The Avro record of a log row that Spark makes on the executors for the Kafka sink's `format=avro`
(`log_row_avro`) against fastavro's encoding of the same row: the same bytes for every shape of value, with
a local Spark."""
from __future__ import annotations

import datetime as dt
import json

import pytest
from fastavro import parse_schema
from pyspark.sql import functions as F

from schemas.avro.wire import frame, unframe
from spark.rows import LOG_ROW, ROW_UPDATE
from spark.sinks.kafka.avro_rows import avro_field_name, log_row_avro, record_schema
from tests.integration.micro_batches import ODD_COLUMNS, log_row, micro_batch

pytestmark = pytest.mark.integration

SCHEMA_ID = 70_000  # beyond a short varint, and beyond one byte of the header


def test_spark_s_avro_of_a_log_row_is_fastavro_s_for_every_shape_of_value(spark) -> None:
    record = record_schema(LOG_ROW, "LogRow")
    parsed = parse_schema(record)
    rich = log_row(1, operation=ROW_UPDATE, columns={**ODD_COLUMNS, "ü": json.dumps("ß" * 200)},
                   deleted=["a,b", 'q"', "é"], elements={"items": '["k"]', "m": "{\"x\": Infinity}"}, ttl=3600)
    rows = [rich, log_row(2, columns={}), log_row(3, stream=None)]
    frame_ = micro_batch(spark, 0, rows, late=True).rows
    third = F.col("key").contains('"id": 3')
    for name in ("generation", "token", "cdc$ttl"):  # every nullable column null in one row
        frame_ = frame_.withColumn(name, F.when(third, F.lit(None)).otherwise(F.col(f"`{name}`")))
    made = frame_.select(log_row_avro(SCHEMA_ID, record).alias("avro"),
                         *(F.col(f"`{n}`") for n in LOG_ROW.fieldNames()))
    checked = 0
    for row in made.collect():
        values = row.asDict(recursive=True)
        avro = bytes(values.pop("avro"))
        # Spark collects a timestamp as the local time, naive: as the instant it is.
        datum = {avro_field_name(name): value.astimezone(dt.timezone.utc) if isinstance(value, dt.datetime) else value
                 for name, value in values.items()}
        assert avro == frame(SCHEMA_ID, parsed, datum)
        assert unframe(avro, parsed) == datum
        checked += 1
    assert checked == len(rows)


def test_a_null_inside_a_map_or_array_is_what_the_record_can_hold(spark) -> None:
    """The record's maps and arrays hold no null (Spark's layout would let them): a JSON text's null is the
    JSON null, and a null among the deleted columns' names names none."""
    record = record_schema(LOG_ROW, "LogRow")
    rows = [log_row(1, columns={"qty": None, "name": '"x"'}, deleted=["a", None], elements={"tags": None})]
    frame_ = micro_batch(spark, 0, rows).rows
    (made,) = frame_.select(log_row_avro(SCHEMA_ID, record).alias("avro")).collect()
    datum = unframe(bytes(made.avro), parse_schema(record))
    assert datum["columns"] == {"qty": "null", "name": '"x"'}
    assert datum["deleted_columns"] == ["a"] and datum["deleted_elements"] == {"tags": "null"}
