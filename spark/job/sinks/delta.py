"""Delta Lake tables on any Hadoop-compatible path (local disk by default).

`cdc_log` (partitioned by keyspace and table) and `dead_letters` are appended to with Delta's
idempotent writes: the transaction carries (app id, batch id), and Delta skips a write whose
version it has already committed for that app id, so a replayed batch adds nothing.
"""
from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import ArrayType, BinaryType, LongType, StructField, StructType, TimestampType

from spark.streams.generations import Generations

from . import utc_time

TIMESTAMPS = StructType([StructField("time", TimestampType(), False), StructField("expired", TimestampType())])
STREAMS = StructType([StructField("time", TimestampType(), False), StructField("range_end", LongType(), False),
                      StructField("streams", ArrayType(BinaryType()), False)])


class DeltaSink:
    def __init__(self, spark: SparkSession, path: Path | str, app_id: str = "ringtail") -> None:
        self.spark = spark
        self.path = str(path).rstrip("/")
        self.app_id = app_id

    def table(self, name: str) -> str:
        return f"{self.path}/{name}"

    def prepare(self) -> None:
        pass  # Delta creates a table with its first write

    def close(self) -> None:
        pass  # nothing is held between batches

    def _append(self, frame: DataFrame, name: str, batch_id: int, *partitioning: str) -> None:
        (frame.write.format("delta").mode("append").partitionBy(*partitioning)
         .option("txnAppId", f"{self.app_id}:{name}").option("txnVersion", batch_id)
         .save(self.table(name)))

    def write(self, rows: DataFrame, dead_letters: DataFrame, batch_id: int) -> None:
        self._append(rows, "cdc_log", batch_id, "keyspace", "table")
        self._append(dead_letters, "dead_letters", batch_id)

    def publish_generations(self, generations: Generations) -> None:
        known = generations.generations
        timestamps = [(utc_time(g.timestamp), None if g.expired is None else utc_time(g.expired)) for g in known]
        streams = [(utc_time(g.timestamp), e.token_range_end, [s.value for s in e.streams])
                   for g in known if g.description is not None for e in g.description.entries]
        # Small tables rewritten whole: a repeated publication leaves the same content.
        for name, data, schema in (("cdc_generation_timestamps", timestamps, TIMESTAMPS),
                                   ("cdc_streams_descriptions_v2", streams, STREAMS)):
            (self.spark.createDataFrame(data, schema).write.format("delta").mode("overwrite")
             .option("overwriteSchema", "true").save(self.table(name)))
