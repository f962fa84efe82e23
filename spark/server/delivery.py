"""One claimed subscription's delivery: a streaming query from its table's topic through its selection
to its sink, with a checkpoint of its own, and its progress per range committed after each batch.

The order is the job's, written once in `spark.job.pipeline`: the sink write, then Spark's checkpoint;
the progress rows follow the sink write (sink write → progress committed). A replayed batch is a no-op
in the sink and counts nothing twice: each range remembers the batch that last counted rows there.
"""
from __future__ import annotations

import datetime as dt
import logging
import threading
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from connector.schema.loader import read_table
from spark.job.generations import GenerationKeeper
from spark.job.pipeline import BatchCounts, BatchWriter, Job, Source, start
from spark.job.selection import Selection
from spark.job.sinks import open_sink
from spark.streams.generations import MICROS_PER_SECOND
from spark.subscriptions.model import Subscription, start_time
from spark.subscriptions.registry import RangeProgress, SubscriptionRegistry

from .config import ServerSettings

log = logging.getLogger(__name__)
# Kafka is read from this long before a timestamp start: an event reaches Kafka after its write, on
# the connector's clock; the selection then keeps exactly the changes written from the start on.
START_SLACK = dt.timedelta(minutes=1)


class SubscriptionGone(Exception):
    """The subscription's table no longer exists."""


def checkpoint_of(settings: ServerSettings, subscription: Subscription) -> Path:
    return Path(settings.checkpoint_dir) / subscription.name / f"epoch-{subscription.epoch}"


def source_of(settings: ServerSettings, subscription: Subscription) -> Source:
    pattern = settings.table_topic_pattern(subscription.keyspace, subscription.table)
    if subscription.start == "earliest":
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
    if subscription.start != "earliest":
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


class Delivery:
    """A subscription's running query and the figures its runner reports."""

    def __init__(self, spark: SparkSession, settings: ServerSettings, subscription: Subscription,
                 keeper: GenerationKeeper, registry: SubscriptionRegistry, session: Any,
                 published: dict[str, int]) -> None:
        self.subscription = subscription
        self.delivered = 0
        self.filtered = 0
        self.newest_kafka_time: dt.datetime | None = None
        self.batches_written = 0
        self.started = dt.datetime.now(dt.timezone.utc)
        self._lock = threading.Lock()
        s = subscription
        sink = open_sink(spark, s.sink, s.sink_config, app_id=f"{s.name}.{s.epoch}",
                         cluster=(settings.cassandra_hosts, settings.cassandra_port),
                         keyspace=settings.generations_keyspace, kafka=settings.kafka_bootstrap_servers)
        self._recorder = RangeProgressRecorder(registry, s, keeper)
        target = f"{s.sink}:{sorted(s.sink_config.items())}"
        writer = BatchWriter(settings, sink, keeper, selection_of(s, session), after_write=self._after_write,
                             published=published, target=target)
        self.job: Job = start(spark, settings, sink, source=source_of(settings, s), writer=writer,
                              name=f"subscription-{s.name}", checkpoint=checkpoint_of(settings, s))

    def _after_write(self, counts: BatchCounts, delivered: DataFrame) -> None:
        if counts.delivered:
            self._recorder(counts, delivered)
        with self._lock:
            self.delivered += counts.delivered
            self.filtered += counts.rows - counts.delivered
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

    def stop(self, timeout: float = 30.0) -> None:
        """Stop between micro-batches when one ends within `timeout`; otherwise cut it (it is replayed)."""
        self.job.writer.idle.wait(timeout)
        try:
            self.job.query.stop()
        except Exception as exc:  # a query that failed raises its failure again on stop
            log.debug("stopping subscription %s: %s", self.subscription.name, exc)
