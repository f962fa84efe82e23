"""The streaming query: Kafka → decoded log rows → (replica copies removed) → stream ids → sink.

Exactly once: Spark's checkpoint records each micro-batch's Kafka offsets before the batch
runs and its completion after the sink write; a batch cut short is replayed with the same id
and the same offsets, and every sink makes a replayed write a no-op. Rows are decided the same
way on replay (the acceptance window is judged against Kafka time, and the generations of a
past write never change: new ones start later than any row already logged).
"""
from __future__ import annotations

import logging
import os
import sys
import threading

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from spark.streams.generations import MICROS_PER_SECOND

from . import rows as R
from .assign import assign_partition
from .config import JobSettings
from .events import decode_partition
from .generations import GenerationKeeper
from .sinks import Sink

log = logging.getLogger(__name__)

# Identifies one change's log row whatever node's connector sent it.
REPLICA_KEY = ["keyspace", "table", "partition_key", "change_id", "cdc$batch_seq_no"]
# Columns added by `remove_replica_copies`, and its observed metric in the query progress
# (`observedMetrics["late"]["late_rows"]`).
LATE = "late"
DEDUP_TIME = "dedup_time"
LATE_METRICS, LATE_ROWS = "late", "late_rows"


def spark_session(settings: JobSettings) -> SparkSession:
    builder = SparkSession.builder.appName(f"ringtail-{settings.app_id}")
    if settings.spark_master:
        builder = builder.master(settings.spark_master)
    conf = {
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "4",
    }
    if settings.spark_master and settings.spark_master.startswith("local"):
        # Delta rebuilds table snapshots in 50 tasks by default: seconds of overhead per batch on one machine.
        conf["spark.databricks.delta.snapshotPartitions"] = "2"
        # Python workers run ringtail's code: the driver's interpreter has it (PATH's python3 may not).
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conf.update(settings.spark_conf)
    if settings.spark_jars:
        conf["spark.jars"] = ",".join(settings.spark_jars)
    if settings.spark_packages:
        conf["spark.jars.packages"] = ",".join(settings.spark_packages)
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def read_changes(spark: SparkSession, settings: JobSettings) -> DataFrame:
    """The connector's events as `DECODED` rows, replica copies removed when configured."""
    reader = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", settings.kafka_bootstrap_servers)
              .option("subscribePattern", settings.topic_pattern)
              .option("startingOffsets", settings.starting_offsets)
              # Lost offsets (retention passed before the job read them) must stop the job, not be skipped.
              .option("failOnDataLoss", "true")
              # New tables' topics are found within seconds, not Kafka's default 5 minutes.
              .option("kafka.metadata.max.age.ms", "5000"))
    if settings.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", settings.max_offsets_per_trigger)
    decoded = (reader.load().select("topic", "partition", "offset", "timestamp", "key", "value")
               .mapInArrow(decode_partition(settings.registry_url), R.DECODED))
    return remove_replica_copies(decoded, settings.dedup_watermark) if settings.dedup else decoded


def remove_replica_copies(decoded: DataFrame, window: str) -> DataFrame:
    """`decoded` without the replica copies of a change that reached Kafka within `window` of each
    other, plus a `LATE` column: true for a row read more than `window` after it reached Kafka.

    No row is ever dropped for being late: `dropDuplicatesWithinWatermark` would silently discard
    rows older than its watermark (a Kafka partition read late after an outage), so the event time
    it sees is the Kafka time held within [now - window, now]; the watermark trails the newest event
    time by `window` and so never passes a row. A late row is delivered rather than sent to dead
    letters, because a dead letter keeps the change out of the log until someone replays it, while
    delivering loses nothing. At worst it repeats a change whose copy from another replica was
    delivered more than `window` earlier (copies share a Kafka partition, keyed by partition key, so
    a late partition brings its copies together): PostgreSQL and Cassandra absorb the repeat (rows
    keyed by the change), Delta (idempotent per batch only) holds it twice. "Now" is the micro-batch's
    time, recorded in the checkpoint, so a replayed batch decides the same way."""
    now = F.current_timestamp()
    window_ago = now - F.expr(f"INTERVAL {window}")
    event_time = F.least(F.greatest(F.col("kafka_time"), window_ago), now)
    return (decoded.withColumn(LATE, F.col("kafka_time") < window_ago)
            .withColumn(DEDUP_TIME, event_time)
            .withWatermark(DEDUP_TIME, window)
            .dropDuplicatesWithinWatermark(REPLICA_KEY)
            .observe(LATE_METRICS, F.count_if(F.col(LATE)).alias(LATE_ROWS)))


def split(assigned: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(log rows, dead letters) of assigned `DECODED` rows."""
    rows = assigned.where(F.col("failure").isNull()).select(*(F.col(f"`{f.name}`") for f in R.LOG_ROW.fields))
    dead = assigned.where(F.col("failure").isNotNull()).select(
        F.col("failure").alias("reason"), F.col("failure_detail").alias("detail"),
        F.col("source.topic").alias("topic"), F.col("source.partition").alias("partition"),
        F.col("source.offset").alias("offset"), "kafka_time", F.col("raw_key").alias("key"),
        F.col("raw_value").alias("value"), "keyspace", "table", "write_time_us", "change_id")
    return rows, dead


class BatchWriter:
    """The `foreachBatch` function: stream ids with the current generations, then the sink."""

    def __init__(self, settings: JobSettings, sink: Sink, keeper: GenerationKeeper | None) -> None:
        self.settings = settings
        self.sink = sink
        self.keeper = keeper
        self.idle = threading.Event()  # set while no micro-batch is in the sink: a stop then cuts none short
        self.idle.set()

    def publish_generations(self) -> None:
        if self.keeper is not None and self.keeper.refresh():
            self.sink.publish_generations(self.keeper.generations)

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        self.idle.clear()
        try:
            self.write(batch, batch_id)
        finally:
            self.idle.set()

    def write(self, batch: DataFrame, batch_id: int) -> None:
        self.publish_generations()
        s = self.settings
        if self.keeper is not None:
            batch = batch.mapInArrow(
                assign_partition(self.keeper.generations, int(s.leeway * MICROS_PER_SECOND),
                                 None if s.max_age is None else int(s.max_age * MICROS_PER_SECOND)),
                batch.schema)
        batch = batch.persist()
        try:
            rows, dead = split(batch)
            self.sink.write(rows, dead, batch_id)
            logged = F.col("failure").isNull()
            late = F.col(LATE) if LATE in batch.columns else F.lit(False)
            counts = batch.agg(F.count_if(logged).alias("rows"), F.count_if(~logged).alias("dead_letters"),
                               F.count_if(late).alias("late")).first()
            late_note = (f"; {counts.late} of them late (read more than {self.settings.dedup_watermark} after they"
                         f" reached Kafka), delivered all the same" if counts.late else "")
            log.info("batch %d written: %d rows, %d dead letters%s", batch_id, counts.rows, counts.dead_letters,
                     late_note)
        finally:
            batch.unpersist()


class Job:
    """A started query, its generation keeper and its writer."""

    def __init__(self, query: StreamingQuery, keeper: GenerationKeeper | None, writer: BatchWriter) -> None:
        self.query, self.keeper, self.writer = query, keeper, writer

    def run(self, stop: threading.Event, poll: float = 0.5) -> None:
        """Await the query until it ends (raising its failure) or `stop` is set; then stop it between
        micro-batches. A stop during a batch would be safe too — the checkpoint replays the batch with
        the same id, a no-op in every sink — waiting only spares the replay."""
        query = self.query
        while not query.awaitTermination(poll):
            if stop.is_set():
                self.writer.idle.wait()
                query.stop()
                progress = query.lastProgress
                log.info("stopped after micro-batch %s; the next start resumes after it",
                         progress["batchId"] if progress else "none")
                return

    def close(self) -> None:
        if self.keeper is not None:
            self.keeper.close()


def start(spark: SparkSession, settings: JobSettings, sink: Sink, *, available_now: bool = False) -> Job:
    """Start the query; the caller runs (or awaits, or stops) it and closes the job. With
    `available_now` it processes what the topics hold and stops."""
    sink.prepare()
    keeper = GenerationKeeper(settings) if settings.assign_streams else None
    writer = BatchWriter(settings, sink, keeper)
    writer.publish_generations()
    stream = (read_changes(spark, settings).writeStream
              .queryName(settings.app_id)
              .foreachBatch(writer)
              .option("checkpointLocation", str(settings.checkpoint_dir)))
    stream = stream.trigger(availableNow=True) if available_now else stream.trigger(
        processingTime=settings.trigger_interval)
    return Job(stream.start(), keeper, writer)
