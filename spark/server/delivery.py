"""One claimed subscription's delivery: a streaming query from its table's topic through its selection
to its sink, with a checkpoint of its own, and its progress per range committed after each batch.
A subscription starting with a snapshot first runs a query over the table's rows (`spark.snapshot`),
with a checkpoint and sink bookkeeping of its own; once its last range is in the sink, the log query
starts from the snapshot version's offsets.

The order is the job's, written once in `spark.delivery.pipeline`: the sink write, then Spark's checkpoint;
the progress rows follow the sink write (sink write → progress committed). A replayed batch is a no-op
in the sink and counts nothing twice: each range remembers the batch that last counted rows there.
"""
from __future__ import annotations

import datetime as dt
import json
import logging
import threading
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from schemas.avro.serializer import topic_name
from schemas.runtime.kafka import end_offsets
from schemas.tables.loader import read_table
from spark.delivery.generations import GenerationKeeper
from spark.delivery.pipeline import BatchCounts, BatchWriter, Job, Source, start
from spark.delivery.publications import Publications
from spark.delivery.selection import Selection
from spark.location import Location
from spark.snapshot.checkpoint import planned_offset
from spark.snapshot.ranges import from_offset
from spark.snapshot.source import NAME as SNAPSHOT
from spark.snapshot.source import SnapshotPlan, SnapshotSource, reads_element_times
from spark.streams.generations import MICROS_PER_SECOND
from spark.subscriptions.model import Subscription, start_time
from spark.subscriptions.registry import RangeProgress, SnapshotVersion, SubscriptionRegistry
from spark.subscriptions.settings import ServerSettings

log = logging.getLogger(__name__)
# Kafka is read from this long before a timestamp start: an event reaches Kafka after its write, on
# the connector's clock; the selection then keeps exactly the changes written from the start on.
START_SLACK = dt.timedelta(minutes=1)


def snapshot_version(settings: ServerSettings, subscription: Subscription) -> SnapshotVersion:
    """Now, and the end offsets of the table's topic now: read before the first range is, so every
    change the snapshot may miss comes after them in the log."""
    topic = topic_name(settings.topic_prefix, subscription.keyspace, subscription.table)
    now = dt.datetime.now(dt.timezone.utc)
    started = now.replace(microsecond=now.microsecond // 1000 * 1000)
    return SnapshotVersion(started, topic, end_offsets(settings.kafka_client(), topic))


class SubscriptionGone(Exception):
    """The subscription's table no longer exists."""


def checkpoint_of(settings: ServerSettings, subscription: Subscription, snapshot: bool = False) -> Location:
    """The log query's checkpoint, or the snapshot's (beside it)."""
    return Location.of(settings.checkpoint_dir) / subscription.name / (
        f"epoch-{subscription.epoch}" + (".snapshot" if snapshot else ""))


def source_of(settings: ServerSettings, subscription: Subscription, version: SnapshotVersion | None = None) -> Source:
    """Where the log is read from: its start, a time, or (after a snapshot) the snapshot version's offsets."""
    pattern = settings.table_topic_pattern(subscription.keyspace, subscription.table)
    if version is not None and version.offsets:
        offsets = {version.topic: {str(p): o for p, o in version.offsets.items()}}
        return Source(pattern, {"startingOffsets": json.dumps(offsets)})
    if subscription.start in ("earliest", "snapshot"):  # a snapshot before its table's topic: all of it
        return Source(pattern, {"startingOffsets": "earliest"})
    at = start_time(subscription.start) - START_SLACK
    # A partition with nothing that recent starts at its end, not with an error.
    return Source(pattern, {"startingTimestamp": str(int(at.timestamp() * 1000)),
                            "startingOffsetsByTimestampStrategy": "latest"})


def selection_of(subscription: Subscription, session: Any) -> Selection:
    table, _ = read_table(session, subscription.keyspace, subscription.table)
    if table is None:
        raise SubscriptionGone(f"table {subscription.keyspace}.{subscription.table} does not exist")
    start_us = None
    if subscription.start not in ("earliest", "snapshot"):
        start_us = int(start_time(subscription.start).timestamp() * MICROS_PER_SECOND)
    return Selection(operations=subscription.operations, filter=subscription.filter, columns=subscription.columns,
                     key_columns=tuple(c.name for c in table.partition_key + table.clustering),
                     column_types={c.name: c.type for c in table.columns}, start_us=start_us)


class RangeProgressRecorder:
    """Counts the rows each batch delivered per token range of the current generation and commits
    them to the registry after the sink write."""

    def __init__(self, registry: SubscriptionRegistry, subscription: Subscription, keeper: GenerationKeeper) -> None:
        self.registry, self.name, self.epoch, self.keeper = registry, subscription.name, subscription.epoch, keeper
        self.ranges = {p.range_end: p for p in registry.progress(self.name, self.epoch)}

    def __call__(self, counts: BatchCounts, delivered: DataFrame) -> None:
        topology = self.keeper.generations.generations[-1].topology()
        position = F.concat_ws(":", "source.node", "source.segment_id", "source.entry_offset")
        per_stream = (delivered.groupBy("`cdc$stream_id`")
                      .agg(F.count(F.lit(1)).alias("n"), F.first("token").alias("token"),
                           F.max_by(position, "write_time_us").alias("position"),
                           F.max("write_time_us").alias("newest")).collect())
        now = dt.datetime.now(dt.timezone.utc)
        touched: dict[int, tuple[int, str | None, int]] = {}
        for row in per_stream:
            end = topology.entry_for(row.token).token_range_end
            n, newest_position, newest = touched.get(end, (0, None, -1))
            if row.newest > newest:
                newest_position, newest = row.position, row.newest
            touched[end] = (n + row.n, newest_position, newest)
        changed = []
        for end, (n, position_text, _) in touched.items():
            known = self.ranges.get(end)
            if known is not None and known.batch_id is not None and known.batch_id >= counts.batch_id:
                continue  # a replayed batch: counted already
            rows = (known.rows_delivered if known else 0) + n
            changed.append(RangeProgress(end, "log", rows, position_text, now, self.epoch, counts.batch_id))
        if changed:
            self.registry.record_progress(self.name, changed)
            self.ranges.update({p.range_end: p for p in changed})


class SnapshotProgressRecorder:
    """After each snapshot batch is in the sink: each range's position (from the batch's planned
    offset) and rows delivered; when every range is done, the snapshot is finished."""

    def __init__(self, registry: SubscriptionRegistry, subscription: Subscription, checkpoint: Location) -> None:
        self.registry, self.name, self.epoch = registry, subscription.name, subscription.epoch
        self.checkpoint = checkpoint
        self.ranges = {p.range_end: p for p in registry.progress(self.name, self.epoch)}
        self.finished = False

    def __call__(self, counts: BatchCounts, delivered: DataFrame) -> None:
        offset = planned_offset(self.checkpoint, counts.batch_id)
        if offset is None:
            raise RuntimeError(f"{self.checkpoint}: no offsets for snapshot batch {counts.batch_id}")
        _, ranges = from_offset(offset)
        per_range: dict[int, int] = {}
        if counts.delivered:
            ends = F.array(*(F.lit(r.end) for r in ranges))
            bucket = F.element_at(F.filter(ends, lambda e: e >= F.col("token")), 1)
            per_range = {r.end: r.n for r in delivered.groupBy(bucket.alias("end")).agg(
                F.count(F.lit(1)).alias("n")).collect()}
        now = dt.datetime.now(dt.timezone.utc)
        changed = []
        for r in ranges:
            known = self.ranges.get(r.end)
            replayed = known is not None and known.batch_id is not None and known.batch_id >= counts.batch_id
            if known is not None and known.snapshot_token == r.position and (replayed or not per_range.get(r.end)):
                continue
            rows = (known.rows_delivered if known else 0) + (0 if replayed else per_range.get(r.end, 0))
            changed.append(RangeProgress(r.end, "snapshot", rows, None, now, self.epoch, counts.batch_id, r.position))
        if changed:
            self.registry.record_progress(self.name, changed)
            self.ranges.update({p.range_end: p for p in changed})
        if all(r.done for r in ranges):
            self.registry.finish_snapshot(self.name, self.epoch)
            self.finished = True
            log.info("snapshot of subscription %s finished: %d ranges read; the log follows", self.name, len(ranges))


class Delivery:
    """A subscription's running query and the figures its runner reports: its snapshot, while one
    is due (`start` snapshot, not finished), then its log."""

    def __init__(self, spark: SparkSession, settings: ServerSettings, subscription: Subscription,
                 keeper: GenerationKeeper, registry: SubscriptionRegistry, session: Any,
                 publications: Publications) -> None:
        self.subscription = subscription
        self.delivered = 0
        self.filtered = 0
        self.late = 0  # rows read more than dedup_watermark after their write (spark.delivery.pipeline)
        self.newest_kafka_time: dt.datetime | None = None
        self.batches_written = 0
        self.started = dt.datetime.now(dt.timezone.utc)
        self._lock = threading.Lock()
        s = subscription
        version = None
        if s.start == "snapshot":
            version = registry.snapshot_version(s.name, s.epoch) or registry.begin_snapshot(
                s.name, s.epoch, snapshot_version(settings, s))
        self.snapshot = version is not None and version.finished is None
        # The snapshot's micro-batches are numbered apart from the log's: their own bookkeeping in the sink.
        app_id = f"{s.name}.{s.epoch}" + (".snapshot" if self.snapshot else "")
        sink_settings = s.sink_settings()
        sink = sink_settings.open(spark, settings.sink_context(app_id))
        target = sink_settings.target()
        checkpoint = checkpoint_of(settings, s, snapshot=self.snapshot)
        self._recorder: Callable[[BatchCounts, DataFrame], None]
        if self.snapshot:
            self._recorder = self._snapshot = SnapshotProgressRecorder(registry, s, checkpoint)
            spark.dataSource.register(SnapshotSource)
            element_times = reads_element_times(session)
            if not element_times:
                log.warning("subscription %s: Cassandra before 5.0 reads no write time of a collection's elements:"
                            " the snapshot gives them the version's start and no TTL", s.name)
            plan = SnapshotPlan(
                *settings.cluster, s.keyspace, s.table, settings.generations_keyspace,
                settings.ignore_msb, str(checkpoint), int(version.started.timestamp() * MICROS_PER_SECOND),
                consistency=settings.snapshot_consistency, fetch_size=settings.snapshot_fetch_size,
                step_partitions=settings.snapshot_step_partitions, rate_limit=settings.snapshot_rate_limit,
                tasks=spark.sparkContext.defaultParallelism, cells=sink.merges_cells, element_times=element_times)
            changes = spark.readStream.format(SNAPSHOT).option("plan", plan.option()).load()
            log.info("subscription %s: snapshot of %s.%s (version of %s) running", s.name, s.keyspace, s.table,
                     version.started.isoformat())
        else:
            self._recorder = RangeProgressRecorder(registry, s, keeper)
            changes = None
        writer = BatchWriter(settings, sink, keeper, selection_of(s, session), after_write=self._after_write,
                             publications=publications, target=target, checkpoint=checkpoint,
                             query=f"subscription-{s.name}" + ("-snapshot" if self.snapshot else ""))
        self.job: Job = start(spark, settings, sink, source=source_of(settings, s, version), changes=changes,
                              writer=writer)

    @property
    def snapshot_finished(self) -> bool:
        """The snapshot's last range is in the sink: the log query takes over."""
        return self.snapshot and self._snapshot.finished

    def _after_write(self, counts: BatchCounts, delivered: DataFrame) -> None:
        if counts.delivered or self.snapshot:
            self._recorder(counts, delivered)
        with self._lock:
            self.delivered += counts.delivered
            self.filtered += counts.rows - counts.delivered
            self.late += counts.late
            self.batches_written += 1
            if counts.newest_kafka_time is not None:
                self.newest_kafka_time = counts.newest_kafka_time

    def failure(self) -> str | None:
        """The query's error once it has ended with one."""
        query = self.job.query
        if query.isActive:
            return None
        error = query.exception()
        if error is None:
            return None
        if self.job.writer.error is not None:
            return self.job.writer.error[:2000]
        lines = [line.strip() for line in error.getMessage().splitlines() if line.strip()]
        return (lines[0] if lines else type(error).__name__)[:2000]

    def lag_seconds(self) -> float:
        """0 while the query has read everything Kafka holds; otherwise how old the newest change
        delivered is (or, before the first, how long the query has run)."""
        progress = self.job.query.lastProgress
        if progress and all(source.get("endOffset") == source.get("latestOffset")
                            for source in progress.get("sources", ())):
            return 0.0
        newest = self.newest_kafka_time or self.started
        if newest.tzinfo is None:
            newest = newest.replace(tzinfo=dt.timezone.utc)
        return max(0.0, (dt.datetime.now(dt.timezone.utc) - newest).total_seconds())

    def request_stop(self) -> None:
        """Start no micro-batch after the running one; `stop` waits for it."""
        self.job.request_stop()

    def stop(self) -> None:
        """Stop after the running micro-batch (`Job.stop_between_batches`), and close the sink."""
        try:
            self.job.stop_between_batches()
        except Exception as exc:  # a query that failed raises its failure again on stop
            log.debug("stopping subscription %s: %s", self.subscription.name, exc)
        self.job.close()
