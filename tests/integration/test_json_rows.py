"""The JSON of a log row that Spark makes on the executors for the Kafka and HTTP sinks (`log_row_json_text`)
against the Python encoding it replaced (`log_row_json`): equal as JSON for every shape of value, with a
local Spark."""
from __future__ import annotations

import json

import pytest
from pyspark.sql import Row
from pyspark.sql import functions as F

from spark.rows import LATE, ROW_UPDATE
from spark.sinks.json_rows import is_json, log_row_json, log_row_json_text
from tests.integration.micro_batches import ODD_COLUMNS, WRITE_US, log_row, micro_batch
from tests.support import micros

pytestmark = pytest.mark.integration


def test_spark_s_json_of_a_log_row_is_python_s_for_every_shape_of_value(spark) -> None:
    rich = log_row(1, operation=ROW_UPDATE, columns=ODD_COLUMNS, deleted=["a,b", 'q"', "é"],
                   elements={"items": '["k"]', "m": "{\"x\": Infinity}"}, ttl=3600)
    rows = [rich, log_row(2, columns={}), log_row(3)]
    frame = micro_batch(spark, 0, rows, late=True).rows
    second, third = F.col("key").contains('"id": 2'), F.col("key").contains('"id": 3')
    whole = F.lit(micros(WRITE_US - WRITE_US % 1_000_000))  # a time without microseconds
    frame = (frame.withColumn("write_time", F.when(second, whole).otherwise(F.col("write_time")))
             .withColumn("generation", F.when(third, F.lit(None)).otherwise(F.col("generation")))
             .withColumn("token", F.when(third, F.lit(None)).otherwise(F.col("token"))))
    for omit in (None, LATE):
        made = frame.select(log_row_json_text(frame.schema, omit).alias("json"), "*").collect()
        assert len(made) == 3 and all(is_json(row.json) for row in made)
        for row in made:
            source = row.asDict()
            source.pop("json")
            expected = log_row_json(Row(**source), omit)
            # Equal as JSON, NaN and the infinities included (Python writes them as its JSON reads them).
            assert json.dumps(json.loads(row.json), sort_keys=True) == json.dumps(expected, sort_keys=True)
            assert list(json.loads(row.json)) == list(expected)  # the columns in the rows' order


def test_a_value_whose_text_is_not_json_makes_the_row_not_json(spark) -> None:
    frame = micro_batch(spark, 0, [log_row(1, columns={"broken": "{not json"}), log_row(2)]).rows
    texts = frame.select(log_row_json_text(frame.schema).alias("json")).collect()
    assert sorted(is_json(r.json) for r in texts) == [False, True]
