"""A micro-batch as the job hands it to a sink, built from rows given in the test (the sink tests' input)."""
from __future__ import annotations

from pyspark.sql import functions as F

from spark.job.rows import DEAD_LETTER, LATE, LOG_ROW
from spark.job.sinks import MicroBatch


def micro_batch(spark, batch_id: int, rows: list[tuple], letters: list[tuple] = (),
                offsets: str | None = None, late: bool = False) -> MicroBatch:
    """`offsets`: the batch's offset digest, by default one per batch id (as one checkpoint gives);
    `late`: every row read late, as the replica-copy step marks it."""
    logged = spark.createDataFrame(rows, LOG_ROW).withColumn(LATE, F.lit(late))
    return MicroBatch(batch_id, logged, spark.createDataFrame(list(letters), DEAD_LETTER),
                      lambda: len(letters), offsets or f"offsets-of-{batch_id}")
