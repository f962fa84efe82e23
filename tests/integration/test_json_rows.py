"""The JSON text of a log row that the Kafka and HTTP sinks send (`log_row_texts`, made from the Arrow batch a
task holds: in the native core, and in Python without it) against the reference (`log_row_json`): equal as
JSON for every shape of value, on the Arrow batches a local Spark makes of log rows."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from spark.rows import LATE, ROW_UPDATE
from spark.sinks.json_rows import NotJsonError, log_row_json, log_row_texts
from tests.integration.micro_batches import ODD_COLUMNS, WRITE_US, log_row, micro_batch
from tests.support import micros

pytestmark = pytest.mark.integration


def test_the_json_of_a_log_row_is_python_s_for_every_shape_of_value(spark, json_texts_by) -> None:
    rich = log_row(1, operation=ROW_UPDATE, columns=ODD_COLUMNS, deleted=["a,b", 'q"', "é", "\n"],
                   elements={"items": '["k"]', "m": "{\"x\": Infinity}"}, ttl=3600)
    rows = [rich, log_row(2, columns={}), log_row(3)]
    frame = micro_batch(spark, 0, rows, late=True).rows
    second, third = F.col("key").contains('"id": 2'), F.col("key").contains('"id": 3')
    whole = F.lit(micros(WRITE_US - WRITE_US % 1_000_000))  # a time without microseconds
    frame = (frame.withColumn("write_time", F.when(second, whole).otherwise(F.col("write_time")))
             .withColumn("generation", F.when(third, F.lit(None)).otherwise(F.col("generation")))
             .withColumn("token", F.when(third, F.lit(None)).otherwise(F.col("token")))
             .withColumn("source", F.when(second, F.lit(None)).otherwise(F.col("source")))
             .orderBy("key"))
    expected_rows = frame.collect()
    batch = pa.concat_batches(frame.toArrow().to_batches())  # as a task holds them
    for names in (batch.schema.names, [n for n in batch.schema.names if n != LATE]):
        for start in (0, 1):  # a task's batch may be a slice of one (the Kafka sink's slots)
            made = log_row_texts(batch.select(names).slice(start)).to_pylist()
            assert len(made) == 3 - start
            for text, row in zip(made, expected_rows[start:]):
                expected = log_row_json({name: row[name] for name in names})
                # Equal as JSON, NaN and the infinities included (Python writes them as its JSON reads them).
                assert json.dumps(json.loads(text), sort_keys=True) == json.dumps(expected, sort_keys=True)
                assert list(json.loads(text)) == list(expected)  # the columns in the rows' order
    assert json.loads(made[0])["source"] is None and json.loads(made[1])["generation"] is None


def test_a_value_whose_text_is_not_json_fails_naming_its_change(spark, json_texts_by) -> None:
    frame = micro_batch(spark, 0, [log_row(2), log_row(1, columns={"broken": "{not json"})]).rows.orderBy("key")
    bad = frame.collect()[0].change_id
    with pytest.raises(NotJsonError, match=f"change {bad} holds a value whose text is not JSON"):
        log_row_texts(pa.concat_batches(frame.toArrow().to_batches()))
