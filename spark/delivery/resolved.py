"""Resolved timestamps: per table, a time T such that every write Cassandra acknowledged before T is in
the sink (README "Resolved timestamps" says exactly what that covers).

Each connector sends its node's frontier (`schemas.frontier`): a time F and, per partition of each table
topic, an offset every event it promises is below. A query has delivered a topic's partitions up to the
end offsets of the last batch it wrote (Spark's checkpoint, `offsets/<batch id>`). A node's record holds
for a topic once each partition it names there is delivered up to its offset. A table's T is the least,
over the ring's nodes, of the newest frontier of each node that holds for the table's topic: a write
acknowledged before T was made durable by at least one replica before that replica's frontier. A node
of the ring that sent no frontier holds T back (its writes may not be in Kafka), as does one whose
connector stopped. Every node's time is its own clock: T assumes the ring's clocks agree (NTP).

`Frontiers` is the rule, on records alone; `FrontierFeed` reads the records from Kafka; `Resolver`
owns when a query publishes its tables' T and what it published.
"""
from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

from schemas.frontier import BadFrontier, FrontierRecord, frontier_topic
from spark.location import Location
from spark.sinks.contract import Resolved

from .checkpoint import newest_batch, source_offsets

log = logging.getLogger(__name__)

_KEPT = 256  # records kept per node; older ones are superseded by the time so many have arrived


def holds(record: FrontierRecord, topic: str, delivered: Mapping[int, int]) -> bool:
    """Whether every event `record` promises in `topic` is delivered (each partition up to its offset)."""
    parts = record.offsets.get(topic)
    return parts is not None and all(delivered.get(p, 0) >= offset for p, offset in parts.items())


class Frontiers:
    """The frontier records of each node (host id), newest last."""

    def __init__(self) -> None:
        self._records: dict[str, list[FrontierRecord]] = {}

    def add(self, record: FrontierRecord) -> None:
        records = self._records.setdefault(record.host_id, [])
        records.append(record)
        del records[:-_KEPT]

    def nodes(self) -> set[str]:
        return set(self._records)

    def resolved(self, delivered: Mapping[str, Mapping[int, int]], ring: Collection[str]) -> dict[str, int]:
        """Topic → T, for each topic of `delivered` (topic → partition → offset delivered up to) for which
        every node of `ring` has a record that holds."""
        out = {}
        for topic, offsets in delivered.items():
            times = [max((r.frontier_us for r in self._records.get(host, ()) if holds(r, topic, offsets)), default=None)
                     for host in ring]
            if ring and None not in times:
                out[topic] = min(times)
        return out


def delivered_offsets(checkpoint: Location, batch_id: int) -> dict[str, dict[int, int]]:
    """Topic → partition → the offset batch `batch_id` of `checkpoint` read up to (its Kafka source's)."""
    offsets: dict[str, dict[int, int]] = {}
    for line in source_offsets(checkpoint, batch_id) or []:
        value = json.loads(line)
        if isinstance(value, dict):
            for topic, parts in value.items():
                if isinstance(parts, dict):
                    offsets[topic] = {int(p): int(o) for p, o in parts.items()}
    return offsets


class FrontierFeed:
    """The frontier records of `<prefix>.frontiers`, read from its start, then as they come."""

    def __init__(self, client: dict, prefix: str) -> None:
        from confluent_kafka import Consumer

        self.topic = frontier_topic(prefix)
        self._consumer = Consumer({**client, "group.id": f"ringtail-frontiers-{time.monotonic_ns()}",
                                   "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        self._assigned = False
        self._refused: set[str] = set()

    def read(self, frontiers: Frontiers) -> None:
        """Add what arrived since the last read."""
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        if not self._assigned:
            topic = self._consumer.list_topics(self.topic, timeout=5).topics.get(self.topic)
            if topic is None or topic.error is not None:
                return  # no connector has sent a frontier yet
            self._consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in topic.partitions])
            self._assigned = True
        while (message := self._consumer.poll(0.2 if not frontiers.nodes() else 0)) is not None:
            if message.error():
                log.warning("reading %s: %s", self.topic, message.error().str())
                return
            try:
                frontiers.add(FrontierRecord.decode(message.value()))
            except BadFrontier as exc:
                if message.key() not in self._refused:
                    self._refused.add(message.key())
                    log.warning("%s, offset %d: %s; skipped", self.topic, message.offset(), exc)

    def close(self) -> None:
        self._consumer.close()


class Resolver:
    """When a query publishes its tables' resolved timestamps, and which it published last.

    `ring()` names the ring's nodes (host ids). The query's writer publishes what `resolve` returns in its
    sink, then says so (`published_now`)."""

    def __init__(self, feed: FrontierFeed, prefix: str, checkpoint: Location, ring: Callable[[], Collection[str]],
                 interval: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.feed, self.prefix, self.checkpoint, self.ring = feed, prefix, checkpoint, ring
        self.interval, self.clock = interval, clock
        self.frontiers = Frontiers()
        self.published: dict[tuple[str, str], int] = {}
        self._delivered: dict[str, dict[int, int]] | None = None
        self._last = float("-inf")
        self._waiting_for: frozenset[str] = frozenset()

    def written(self, batch_id: int) -> None:
        """Batch `batch_id` is in the sink: its offsets are delivered."""
        self._delivered = delivered_offsets(self.checkpoint, batch_id)

    def due(self) -> bool:
        return self.clock() - self._last >= self.interval

    def resolve(self) -> list[Resolved]:
        """The tables whose T moved since the last call (to be published, then `published`)."""
        self._last = self.clock()
        if self._delivered is None:  # a restarted query: what its last committed batch read is in the sink
            committed = newest_batch(self.checkpoint, "commits")
            self._delivered = {} if committed is None else delivered_offsets(self.checkpoint, committed)
        self.feed.read(self.frontiers)
        ring = set(self.ring())
        missing = frozenset(ring - self.frontiers.nodes())
        if missing != self._waiting_for:
            self._waiting_for = missing
            if missing:
                log.warning("resolved timestamps wait for the frontier of node(s) %s of the ring: a connector not "
                            "running, or a node down and not removed from the ring", ", ".join(sorted(missing)))
        moved = []
        for topic, time_us in self.frontiers.resolved(self._delivered, ring).items():
            table = self._table(topic)
            if table is not None and time_us > self.published.get(table, -1):
                moved.append(Resolved(*table, time_us))
        return moved

    def published_now(self, resolved: list[Resolved]) -> None:
        for each in resolved:
            self.published[(each.keyspace, each.table)] = each.time_us

    def _table(self, topic: str) -> tuple[str, str] | None:
        head = f"{self.prefix}."
        parts = topic[len(head):].split(".") if topic.startswith(head) else []
        return (parts[0], parts[1]) if len(parts) == 2 else None

    def close(self) -> None:
        self.feed.close()


class RingNodes:
    """The ring's nodes (host ids), asked of the cluster at most once a `refresh`, through `session` (the
    generation keeper's) or a connection of its own; the last answer stands while the cluster does not
    answer."""

    def __init__(self, cluster: tuple, session: Any = None, refresh: float = 60.0) -> None:
        self.cluster, self.session, self.refresh = cluster, session, refresh
        self._nodes: frozenset[str] = frozenset()
        self._asked = float("-inf")

    def __call__(self) -> frozenset[str]:
        if time.monotonic() - self._asked >= self.refresh:
            self._asked = time.monotonic()
            try:
                self._nodes = self._read()
            except Exception as exc:  # noqa: BLE001 - the driver's errors have no common base
                log.warning("the ring's nodes are not known (%s: %s); resolved timestamps use the last known",
                            type(exc).__name__, exc)
        return self._nodes

    def _read(self) -> frozenset[str]:
        from schemas.runtime.session import STATEMENTS_ONLY, connect
        from spark.streams.ring import read_ring

        if self.session is not None:
            return frozenset(read_ring(self.session))
        cluster, session = connect(*self.cluster, **STATEMENTS_ONLY)
        try:
            return frozenset(read_ring(session))
        finally:
            cluster.shutdown()
