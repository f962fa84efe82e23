"""The streaming query: Kafka → decoded log rows with their stream ids → (replica copies removed) → sink.

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
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from schemas.runtime.session import STATEMENTS_ONLY, connect
from spark import rows as R
from spark.location import Location, S3Access
from spark.sinks.contract import MicroBatch, Resolved, Sink, utc_time
from spark.streams.generations import MICROS_PER_SECOND
from spark.streams.ring import copies_per_change

from .assign import StreamAssigner
from .checkpoint import planned_batch
from .settings import StreamSettings
from .events import decode_partition
from .generations import GenerationKeeper
from .native_events import EventDecoder
from .publications import Publications
from .resolved import FrontierFeed, Resolver, RingNodes
from .selection import Selection
from .stopping import request_end
from .tally import BatchCounts, Tally

log = logging.getLogger(__name__)

# Identifies one change's log row whatever node's connector sent it.
REPLICA_KEY = ["keyspace", "table", "partition_key", "change_id", "cdc$batch_seq_no"]
# The event-time column `remove_replica_copies` adds.
DEDUP_TIME = "dedup_time"


# Columns of the log tables whose values nearly all differ (keys, times, digests, offsets). Parquet's dictionary
# encoding collects each page's values in a dictionary before it falls back to plain encoding, once the
# dictionary outgrows a page: for these, a tenth of the job's JVM time for nothing. Other columns keep it.
UNIQUE_COLUMNS = ("cdc$time", "key", "columns.key_value.value", "partition_key", "change_id", "write_time",
                  "write_time_us", "token", "kafka_time", "source.entry_offset", "source.offset")


def use_utc() -> None:
    """Put this process in UTC. PySpark hands a collected timestamp to Python as a naive time in the
    process's zone, whatever `spark.sql.session.timeZone` says; the sinks read naive times as UTC."""
    os.environ["TZ"] = "UTC"
    time.tzset()


def spark_master(settings: StreamSettings) -> tuple[str | None, str]:
    """(The master the session is built with, the master it runs on): the settings', else spark-submit's
    (whose --master stands: the session sets none), else local[*]."""
    if settings.spark_master:
        return settings.spark_master, settings.spark_master
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # spark-submit started the JVM, which holds its master
        from pyspark import SparkConf

        return None, SparkConf().get("spark.master", "local[*]")
    return "local[*]", "local[*]"


def spark_session(settings: StreamSettings) -> SparkSession:
    use_utc()
    builder = SparkSession.builder.appName(f"ringtail-{settings.app_id}")
    master, runs_on = spark_master(settings)
    if master:
        builder = builder.master(master)
    conf = {
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "4",
        # Progress bars overwrite log lines; ringtail logs each micro-batch itself.
        "spark.ui.showConsoleProgress": "false",
        # Without new records a micro-batch would only move the replica-copy removal's watermark (its state
        # is evicted at the next batch all the same), and cost the sink an empty commit.
        "spark.sql.streaming.noDataMicroBatches.enabled": "false",
        # The replica-copy removal keeps the keys of the last `dedup_watermark` of reading: millions while a
        # backlog is read. RocksDB keeps them off the JVM heap; Spark's default store keeps them on it, in
        # several versions (reading 400,000 records in two batches, its garbage collection made a 10 s run
        # take up to 31 s).
        # Its changelog keeps each batch's commit small. A checkpoint keeps the store it was started with.
        "spark.sql.streaming.stateStore.providerClass":
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        # Counting the state's keys makes RocksDB read each key before writing it (Spark documents the cost), for
        # a figure the job does not use: without the count the job took 0.95× the time (bench/job.py).
        "spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows": "false",
        # A Python function's input goes in Arrow batches of at most `maxRecordsPerBatch` records. Spark 4 bounds
        # them in bytes too, measuring the batch after each row it adds: 8 % of the decoding stage's JVM samples
        # for Kafka records of a few hundred bytes. Int.MaxValue is the value Spark reads as no bound.
        "spark.sql.execution.arrow.maxBytesPerBatch": str(2**31 - 1),
        # ringtail caches a micro-batch (or a mirror's merge result) for the one or two reads that follow, then
        # drops it: compressing the cache (dictionary statistics per column) was a tenth of the job's JVM time,
        # and the job 1.1× as fast without it (bench/job.py), its peak memory no higher.
        "spark.sql.inMemoryColumnarStorage.compressed": "false",
        # A micro-batch into Delta mirrors (the states' read and two MERGEs per table) generates more classes
        # than the 100 Spark keeps compiled by default: each batch evicted others and compiled them again, a
        # fifth of the JVM's samples over eleven batches. With room for 1,000 the compiling ends after the
        # first batches: a cold driver merging 2,000 changes took 0.77× the CPU, and bench/sinks.py's Delta
        # mirror ran 1.1× as fast.
        "spark.sql.codegen.cache.maxEntries": "1000",
        # A Kafka source's SASL configuration and PEM key are options: shown as *** in plans and the UI.
        # So is a snapshot's plan, which holds the Cassandra password (`spark.snapshot.source.SnapshotPlan`).
        "spark.sql.redaction.options.regex": r"(?i)url|jaas|password|keystore\.key|^plan$",
        # Python workers without a re-read of every zip on their path before each task (spark.python_daemon).
        "spark.python.daemon.module": "spark.python_daemon",
    }
    conf.update({f"spark.hadoop.parquet.enable.dictionary#{column}": "false" for column in UNIQUE_COLUMNS})
    local = runs_on.startswith("local")
    if local and "PYSPARK_GATEWAY_PORT" not in os.environ:
        # The driver's JVM (started here, so its options still apply) runs the tasks. With G1's 1 MB regions on
        # Spark's default 1 GB heap, nearly half of its collections were for allocations of half a region or
        # more, each starting a marking cycle; 4 MB regions make them ordinary (with the dictionaries above off,
        # the job took 0.94× the time: bench/job.py).
        conf["spark.driver.extraJavaOptions"] = "-XX:G1HeapRegionSize=4m"
    if local:
        # Delta rebuilds table snapshots in 50 tasks by default: seconds of overhead per batch on one machine.
        conf["spark.databricks.delta.snapshotPartitions"] = "2"
        # Python workers run ringtail's code: the driver's interpreter has it (PATH's python3 may not).
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # S3 as the environment reaches it (spark.location.S3Access); what spark_conf says overrides it.
    conf.update(S3Access.from_environment().hadoop_conf())
    conf.update(settings.spark_conf)
    if settings.ship == "always" or (settings.ship == "auto" and not local):
        conf.update(shipped(settings, conf))
    if not local and "PYSPARK_GATEWAY_PORT" not in os.environ:
        python_beside_driver(conf)
    if settings.spark_jars:
        conf["spark.jars"] = ",".join(settings.spark_jars)
    if settings.spark_packages:
        conf["spark.jars.packages"] = ",".join(settings.spark_packages)
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def python_beside_driver(conf: Mapping[str, str]) -> None:
    """Set, before the driver's JVM starts, what spark-submit would: the Python Spark runs (PySpark takes it
    from PYSPARK_PYTHON, on the executors and beside the driver) from `spark.pyspark.python`; and, for the
    processes beside the driver, where it finds ringtail: Spark plans a Python data source (a snapshot) in a
    Python process there, which the shipped archive does not reach. So this driver's packages go on the
    JVM's PYTHONPATH, which Spark gives the Python processes it starts on this machine; an interpreter of
    the same minor version imports them."""
    import site

    import spark

    if conf.get("spark.pyspark.python") and "PYSPARK_PYTHON" not in os.environ:
        os.environ["PYSPARK_PYTHON"] = conf["spark.pyspark.python"]
    ours = [str(Path(spark.__file__).resolve().parents[1]), *site.getsitepackages()]
    given = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys([*ours, *given]))


def shipped(settings: StreamSettings, conf: dict[str, str]) -> dict[str, str]:
    """The configuration that ships ringtail to the executors (`spark.ship`), beside archives and a
    Python path the configuration has already."""
    from spark import ship

    archive = ship.pack(settings.ship_dir or ship.default_directory())
    log.info("ringtail shipped to the executors as %s (%.0f MB)", archive, archive.stat().st_size / 1e6)
    out = ship.spark_conf(archive)
    for key, separator in (("spark.archives", ","), ("spark.executorEnv.PYTHONPATH", os.pathsep)):
        if conf.get(key):
            out[key] = f"{conf[key]}{separator}{out[key]}"
    return out


def read_changes(spark: SparkSession, settings: StreamSettings, source: Source | None = None,
                 cells: bool = False, assigner: StreamAssigner | None = None, *, records_per_batch: int) -> DataFrame:
    """The connector's events as `DECODED` rows, replica copies removed when configured; from every
    table's topic (the job) or from `source`'s; with `cells`, each change's cells (for a mirror); with an
    `assigner`, each row's stream id, given in the decoding pass; at most `records_per_batch` Kafka
    records a micro-batch (`records_per_batch()` of the settings)."""
    source = source or Source(settings.topic_pattern, {"startingOffsets": settings.starting_offsets})
    kafka = {f"kafka.{name}": value
             for name, value in settings.kafka_security.java(settings.kafka_bootstrap_servers).items()}
    reader = (spark.readStream.format("kafka")
              .options(**kafka)
              .option("subscribePattern", source.pattern)
              .options(**source.starting)
              # Lost offsets (retention passed before the job read them) must stop the job, not be skipped.
              .option("failOnDataLoss", "true")
              # New tables' topics are found within seconds, not Kafka's default 5 minutes.
              .option("kafka.metadata.max.age.ms", "5000")
              # A task reads a range that exists; its last fetch reaches the end of a partition, where the
              # broker would hold it for fetch.max.wait.ms (500 ms by default) waiting for more: per task
              # and micro-batch, 1 s of a 100,000-record batch on two cores.
              .option("kafka.fetch.max.wait.ms", "10"))
    reader = reader.option("maxOffsetsPerTrigger", records_per_batch)
    decoded = (reader.load().select("topic", "partition", "offset", "timestamp", "key", "value")
               .mapInArrow(decode_partition(settings.registry_url, cells, assigner, decoder(settings),
                                            settings.registry_security, skip_copies=settings.dedup), R.DECODED))
    return remove_replica_copies(decoded, settings.dedup_watermark, settings.leeway) if settings.dedup else decoded


def decoder(settings: StreamSettings) -> str:
    """The decoder the settings ask for, or "python" (said loudly) when the native core is not built."""
    if settings.decoder == "native" and EventDecoder is None:
        log.warning("the native core (schemas._native) is not built: events are decoded in Python, several "
                    "times slower; `pip install -e .` builds it")
        return "python"
    return settings.decoder


def remove_replica_copies(decoded: DataFrame, window: str, leeway: float) -> DataFrame:
    """`decoded` without the replica copies of a change that the job reads within `window` of each
    other, plus a `LATE` column: true for a row the job reads more than `window` after its write.

    A change is identified across replicas by `REPLICA_KEY`: its table, partition key and a digest of
    its content (cells, timestamps, TTLs, deletions), which every replica's copy shares. The state keeps
    a key at least `window` of the job's time after it first read it. A copy of a write no older than
    `window` - `leeway` therefore finds the first copy's key (the first was read after the write, give or
    take the `leeway` a client's clock may run ahead: a later write is a dead letter); an older copy
    (a connector that was stopped, hints replayed to a node back after an outage, the job itself behind)
    may not, so it is marked `LATE` and each sink checks it by its key where it can: PostgreSQL, MySQL
    and Cassandra hold rows keyed by the change, Delta looks the key up before appending (`DeltaSink`);
    Kafka and HTTP cannot, and mark the row (a `ringtail-late` header, a `late` field). Nothing is kept
    without bound and no copy passes unmarked.

    No row is ever dropped for being late: `dropDuplicatesWithinWatermark` would silently discard
    rows older than its watermark (a Kafka partition read late after an outage), so the event time
    it sees is the Kafka time held within [now - window, now]; the watermark trails the newest event
    time by `window` and so never passes a row. "Now" is the micro-batch's time, recorded in the
    checkpoint, so a replayed batch decides the same way.

    Most copies do not reach this step: a task skips those of a change it has already decoded, before
    decoding them (`decode_partition`'s `skip_copies`); the state removes the ones met across tasks."""
    now = F.current_timestamp()
    window_ago = now - F.expr(f"INTERVAL {window}")
    event_time = F.least(F.greatest(F.col("kafka_time"), window_ago), now)
    vouched = window_ago + F.expr(f"INTERVAL {int(leeway * 1_000_000)} MICROSECONDS")
    return (decoded.withColumn(R.LATE, F.coalesce(F.col("write_time") < vouched, F.lit(False)))
            .withColumn(DEDUP_TIME, event_time)
            .withWatermark(DEDUP_TIME, window)
            .dropDuplicatesWithinWatermark(REPLICA_KEY))


@dataclass(frozen=True)
class Source:
    """The topics a query reads (a pattern) and where it starts on its first run (Kafka source options)."""

    pattern: str
    starting: Mapping[str, str]


# Called after a batch is in the sink, with the rows delivered (read from the batch's cache; valid during the call).
AfterWrite = Callable[[BatchCounts, DataFrame], None]


def late_of(rows: DataFrame) -> Column:
    """Whether each row was read late: the replica-copy step's `LATE`, false where that step did not run."""
    return F.col(R.LATE) if R.LATE in rows.columns else F.lit(False)


def split(assigned: DataFrame, cells: bool = False) -> tuple[DataFrame, DataFrame]:
    """(log rows, dead letters) of assigned `DECODED` rows; the log rows with `LATE` (false where the
    replica-copy step did not run) and, with `cells`, that column."""
    names = [f.name for f in R.LOG_ROW.fields] + ([R.CELLS] if cells else [])
    rows = assigned.where(F.col("failure").isNull()).select(*(F.col(f"`{name}`") for name in names),
                                                            late_of(assigned).alias(R.LATE))
    dead = assigned.where(F.col("failure").isNotNull()).select(
        F.col("failure").alias("reason"), F.col("failure_detail").alias("detail"),
        F.col("source.topic").alias("topic"), F.col("source.partition").alias("partition"),
        F.col("source.offset").alias("offset"), "kafka_time", F.col("raw_key").alias("key"),
        F.col("raw_value").alias("value"), "keyspace", "table", "write_time_us", "change_id")
    return rows, dead


class BatchFailed(Exception):
    """A micro-batch did not reach its sink; the reason, as `BatchWriter.error` says it."""


class BatchWriter:
    """The `foreachBatch` function: the generations published, the selection, then the sink (the rows come
    with their stream ids: given in the decoding pass, or by the snapshot)."""

    def __init__(self, settings: StreamSettings, sink: Sink, keeper: GenerationKeeper | None,
                 selection: Selection = Selection(), after_write: AfterWrite | None = None,
                 publications: Publications | None = None, target: str = "", checkpoint: Location | Path | None = None,
                 query: str | None = None) -> None:
        self.settings = settings
        # The streaming query's name (the job's app id by default), which its log lines begin with: a runner
        # serving several subscriptions says which one each line is of.
        self.query = query or settings.app_id
        # The query's checkpoint (the job's by default): it says which offsets each batch covers.
        self.checkpoint = Location.of(checkpoint or settings.checkpoint_dir)
        self.sink = sink
        self.keeper = keeper
        self.selection = selection
        self.after_write = after_write
        # Shared by the writers of one process that write to the same `target`: a restarted query does
        # not publish the generations again.
        self._publications = publications if publications is not None else Publications()
        self._target = target
        self._publication: Future | None = None  # of the generations this writer's rows need
        self.error: str | None = None  # why the last micro-batch failed
        # A mirror's expired values are purged every `mirror_purge_interval`, never during a batch.
        self._in_sink = threading.Lock()
        self._purged = time.monotonic()
        self.resolver: Resolver | None = None  # set by `start` for a query that reads Kafka

    def publish_generations(self) -> None:
        """Refresh the generations; publish them in the sink, in the background, when it was not given
        this version (the keeper may be shared by several writers)."""
        if self.keeper is None:
            return
        self.keeper.refresh()
        version, generations = self.keeper.version, self.keeper.generations
        self._publication = self._publications.publish(
            self._target, version, lambda: self.sink.publish_generations(generations))

    def generations_in_sink(self) -> None:
        """Wait until the sink holds the generations (raising why it could not be given them)."""
        if self._publication is not None:
            self._publication.result()

    def _publishing(self) -> bool:
        return self._publication is not None and not self._publication.done()

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        try:
            with self._in_sink:
                self.write(batch, batch_id)
        except Exception as exc:
            reason = str(exc).strip().splitlines()
            self.error = f"batch {batch_id}: {type(exc).__name__}: {reason[0] if reason else ''}"
            log.error("%s", self.error, exc_info=True)
            # Spark gets the reason alone, not the traceback (with a Java one inside, from Py4J): a failure
            # while the query is ending is matched against a regex that recurses once per character
            # (`spark.delivery.stopping`), and a long message overflows the stream thread's stack.
            raise BatchFailed(self.error) from None

    def purge_when_due(self, wait: float = 1.0) -> None:
        """Once `mirror_purge_interval` has passed since the last purge: remove what has expired from a
        mirror sink, between batches (waiting at most `wait` seconds for one in the sink to end; the
        thread that awaits the query calls this again soon)."""
        # Not beside a publication either: a sink is used by one thread at a time.
        if (not self.sink.merges_cells or time.monotonic() - self._purged < self.settings.mirror_purge_interval
                or self._publishing()):
            return
        if self._in_sink.acquire(timeout=wait):
            try:
                self.sink.purge()
            except Exception as exc:  # the next batch fails on the same cause, and is retried
                log.warning("removing expired values from the mirrors failed: %s: %s", type(exc).__name__, exc)
            finally:
                self._purged = time.monotonic()
                self._in_sink.release()

    def resolve_when_due(self, wait: float = 1.0) -> None:
        """Publish the resolved timestamps that moved, once `resolved_interval` has passed, between batches
        (waiting at most `wait` seconds for one in the sink to end)."""
        if self.resolver is None or not self.resolver.due() or self._publishing():
            return
        if self._in_sink.acquire(timeout=wait):
            try:
                self._resolve()
            finally:
                self._in_sink.release()

    def _resolve(self) -> None:
        """Publish what moved (the sink is this thread's); a failure is said and tried again when next due."""
        try:
            moved = self.resolver.resolve()
            if moved:
                first = [r for r in moved if (r.keyspace, r.table) not in self.resolver.published]
                self.sink.publish_resolved(moved)
                self.resolver.published_now(moved)
                if first:
                    log.info("%s: resolved timestamps published from now on: %s", self.query,
                             ", ".join(_said(r) for r in first))
        except Exception as exc:  # noqa: BLE001 - T only waits; the data path is not stopped for it
            log.warning("%s: resolved timestamps not published: %s: %s", self.query, type(exc).__name__, exc)

    def write(self, batch: DataFrame, batch_id: int) -> None:
        planned = planned_batch(self.checkpoint, batch_id)
        self.publish_generations()
        self.generations_in_sink()
        tally = Tally(batch_id, late_of(batch))
        batch = tally.observe(batch).persist()
        try:
            rows, dead = split(batch, self.sink.merges_cells)
            rows = tally.deliver(rows, self.selection)
            micro = MicroBatch(batch_id, rows, dead, lambda: tally.counts().dead_letters, planned.offsets,
                               planned.planned_ms)
            if self.selection.everything and self.sink.reads_batch_whole:
                self.sink.write(micro)  # its first read is the batch's one pass
                counts = tally.counts()
            else:
                tally.read()
                counts = tally.counts()
                # Nothing to write (every row filtered out) writes nothing: a no-op on replay too.
                if counts.delivered or counts.dead_letters:
                    self.sink.write(micro)
            late_note = (f"; {counts.late} of them late (read more than {self.settings.dedup_watermark} after their"
                         f" write), checked by key in the sink or marked" if counts.late else "")
            selected = f" ({counts.delivered} selected)" if not self.selection.everything else ""
            log.info("%s: batch %d written: %d rows%s, %d dead letters%s", self.query, batch_id, counts.rows,
                     selected, counts.dead_letters, late_note)
            if self.after_write is not None:
                self.after_write(counts, rows)
            if self.resolver is not None:
                self.resolver.written(batch_id)
                if self.resolver.due():
                    self._resolve()
        finally:
            batch.unpersist()


def _said(resolved: Resolved) -> str:
    return f"{resolved.keyspace}.{resolved.table} at {utc_time(resolved.time_us).isoformat()}"


class Job:
    """A started query, its writer, and the generation keeper it started (None when it was given one)."""

    def __init__(self, query: StreamingQuery, writer: BatchWriter, keeper: GenerationKeeper | None) -> None:
        self.query, self.writer, self.keeper = query, writer, keeper
        self._stop_requested = False
        self._ends_by_itself = False

    def run(self, stop: threading.Event, poll: float = 0.5) -> None:
        """Await the query until it ends (raising its failure) or `stop` is set; then stop it between
        micro-batches."""
        query = self.query
        while not query.awaitTermination(poll):
            self.writer.purge_when_due()
            self.writer.resolve_when_due()
            if stop.is_set():
                self.stop_between_batches()
                progress = query.lastProgress
                log.info("stopped after micro-batch %s; the next start resumes after it",
                         progress["batchId"] if progress else "none")
                return

    def request_stop(self) -> None:
        """Start no micro-batch after the running one (`spark.delivery.stopping`); `stop_between_batches`
        then waits for that one. Asking several queries first lets their batches end side by side."""
        if not self._stop_requested:
            self._stop_requested = True
            self._ends_by_itself = request_end(self.query)
            if self._ends_by_itself:
                log.info("query %s: no micro-batch starts after the running one", self.query.name)

    def stop_between_batches(self) -> None:
        """End the query after its running micro-batch: no batch is cut, none starts after the request
        (raising the query's failure, if it failed). A batch still in the sink `stop_timeout` later
        (a sink that hangs) is cut: it is replayed at the next start."""
        self.request_stop()
        query, timeout = self.query, self.writer.settings.stop_timeout
        if self._ends_by_itself and not query.awaitTermination(timeout):
            log.warning("micro-batch still running %.0f s after the stop was asked for: cut; it is replayed "
                        "at the next start", timeout)
        query.stop()  # a no-op once the query has ended

    def close(self) -> None:
        """Close the sink (once it has the generations, or could not be given them), and the keeper when
        the job started it."""
        try:
            self.writer.generations_in_sink()
        except Exception:  # noqa: BLE001 - logged where it failed; the sink is closed all the same
            pass
        self.writer.sink.close()
        if self.writer.resolver is not None:
            self.writer.resolver.close()
            self.writer.resolver = None
        if self.keeper is not None:
            self.keeper.close()


def records_per_batch(settings: StreamSettings, keeper: GenerationKeeper | None) -> int:
    """The Kafka records a micro-batch reads: `max_offsets_per_trigger` when set, else
    `max_changes_per_trigger` times the copies of each change the cluster's replication sends (asked of
    the keeper's session, or of one of its own)."""
    if settings.max_offsets_per_trigger:
        return settings.max_offsets_per_trigger
    if keeper is not None:
        copies = copies_per_change(keeper.session)
    else:
        cluster, session = connect(*settings.cluster, **STATEMENTS_ONLY)
        try:
            copies = copies_per_change(session)
        finally:
            cluster.shutdown()
    records = settings.max_changes_per_trigger * copies
    log.info("micro-batches of at most %d records: %d changes, each in up to %d copies (one per replica)",
             records, settings.max_changes_per_trigger, copies)
    return records


def start(spark: SparkSession, settings: StreamSettings, sink: Sink, *, available_now: bool = False,
          source: Source | None = None, changes: DataFrame | None = None, writer: BatchWriter | None = None) -> Job:
    """Start the query; the caller runs (or awaits, or stops) it and closes the job. With
    `available_now` it processes what the topics hold and stops. The job reads every table and
    delivers everything; a subscription brings its `source` (or, for a snapshot, its `changes`: a
    stream of `DECODED` rows) and its `writer` (with its selection, keeper, checkpoint and query name)."""
    sink.prepare()
    keeper = None
    if writer is None:
        keeper = GenerationKeeper(settings) if settings.assign_streams else None
        writer = BatchWriter(settings, sink, keeper)
    # The generations are in the cluster before the query starts: its workers read them there.
    if writer.keeper is not None:
        writer.keeper.refresh()
    if changes is None:
        assigner = None
        if settings.assign_streams:
            assigner = StreamAssigner(
                settings.cluster, settings.generations_keyspace, settings.ignore_msb,
                int(settings.leeway * MICROS_PER_SECOND),
                None if settings.max_age is None else int(settings.max_age * MICROS_PER_SECOND),
                # A mirror's rows are never rejected for their write time (spark.delivery.assign).
                reject_rows=not sink.merges_cells,
                # Workers learn a new generation well before it starts (the job publishes it that much ahead).
                refresh=min(10.0, settings.generation_delay / 4))
        changes = read_changes(spark, settings, source, cells=sink.merges_cells, assigner=assigner,
                               records_per_batch=records_per_batch(settings, writer.keeper))
        if settings.resolved_interval and writer.resolver is None:
            feed = FrontierFeed(settings.kafka_security.librdkafka(settings.kafka_bootstrap_servers),
                                settings.topic_prefix)
            ring = RingNodes(settings.cluster, writer.keeper.session if writer.keeper is not None else None)
            writer.resolver = Resolver(feed, settings.topic_prefix, writer.checkpoint, ring,
                                       max(settings.resolved_interval, sink.resolved_every))
    stream = (changes.writeStream
              .queryName(writer.query)
              .foreachBatch(writer)
              .option("checkpointLocation", str(writer.checkpoint)))
    stream = stream.trigger(availableNow=True) if available_now else stream.trigger(
        processingTime=settings.trigger_interval)
    query = stream.start()
    # The sink is given the generations while the query starts up, not before: publishing beside the
    # start-up slows it; the first micro-batch waits for them before its rows go in.
    try:
        writer.publish_generations()
    except BaseException:
        query.stop()
        raise
    return Job(query, writer, keeper)
