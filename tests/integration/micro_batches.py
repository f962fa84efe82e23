"""A micro-batch as the job hands it to a sink, built from rows given in the test (the sink tests' input)."""
from __future__ import annotations

from spark.job.rows import DEAD_LETTER, LOG_ROW
from spark.job.sinks import MicroBatch


def micro_batch(spark, batch_id: int, rows: list[tuple], letters: list[tuple] = (),
                offsets: str | None = None) -> MicroBatch:
    """`offsets`: the batch's offset digest, by default one per batch id (as one checkpoint gives)."""
    return MicroBatch(batch_id, spark.createDataFrame(rows, LOG_ROW), spark.createDataFrame(list(letters), DEAD_LETTER),
                      lambda: len(letters), offsets or f"offsets-of-{batch_id}")
