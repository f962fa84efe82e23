"""A micro-batch as the job hands it to a sink, built from rows given in the test (the sink tests' input)."""
from __future__ import annotations

from spark.job.rows import DEAD_LETTER, LOG_ROW
from spark.job.sinks import MicroBatch


def micro_batch(spark, batch_id: int, rows: list[tuple], letters: list[tuple] = ()) -> MicroBatch:
    return MicroBatch(batch_id, spark.createDataFrame(rows, LOG_ROW), spark.createDataFrame(list(letters), DEAD_LETTER),
                      lambda: len(letters))
