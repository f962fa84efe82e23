"""The node's frontier: a time in the node's clock before which every acknowledged write is emitted.

Why a `_cdc.idx` tells time. Cassandra's one sync thread, at each commit-log sync that found new data,
places a sync marker at the end of what was allocated so far, writes and fsyncs the sections before it,
then rewrites the index with the marker's offset; one sync after the other. A write is allocated
before it is acknowledged. So when an index rewrite N is seen, every write acknowledged before the
rewrite seen *before* it (mtime m' < m_N: a rewrite before N, which ended before N's marker was
placed) lies below the offset N gives. Reading up to that offset and having Kafka acknowledge it makes
m' a frontier. An index is looked at only when its mtime is the same before and after reading it: the
rewrite was complete.

While nothing is written, Cassandra writes no index at all. A write is in an index rewritten within
`bound` of its acknowledgement: at once in batch and group mode (the write waits for its sync), within
the sync period plus the lag Cassandra lets a periodic sync fall behind before it blocks writes (1.5
periods by default) in periodic mode. So when a listing of cdc_raw taken at t shows nothing durable that
was not read, t - bound is a frontier too. In periodic mode that holds unless the disk stalls a sync
for longer than the bound; the README says so.

`Frontier` holds the claims until the committed position reaches what was read when each was made; it
is the loop's, which tells it what it reads and commits (`connector.loop`).
"""
from __future__ import annotations

import logging
import os
import re
import socket
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from connector.commitlog.cdc_index import read_cdc_index
from schemas.change import Position
from schemas.avro.serializer import table_topics_pattern, topic_name
from schemas.frontier import FrontierRecord, frontier_topic
from schemas.runtime.kafka import EventProducer, TopicError, latest_offsets

log = logging.getLogger("ringtail.connector")

_SETTINGS = ("SELECT name, value FROM system_views.settings WHERE name IN ('commitlog_sync', 'commitlog_sync_period',"
             " 'commitlog_sync_period_in_ms', 'periodic_commitlog_sync_lag_block',"
             " 'periodic_commitlog_sync_lag_block_in_ms')")
_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "": 1}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|)\s*$")
# Claims waiting for their commit; more (a commit that does not move for long) drops the oldest.
_PENDING = 1024


def milliseconds(text: str) -> float:
    """A cassandra.yaml duration (`1000ms`, `10s`, or a bare number of ms as the `*_in_ms` names take)."""
    match = _DURATION.match(text)
    if match is None:
        raise ValueError(f"not a duration: {text!r}")
    return float(match.group(1)) * _UNITS_MS[match.group(2)]


@dataclass(frozen=True)
class SyncMode:
    """The node's commit-log sync mode and its bound: how long after its acknowledgement a write is
    in a rewritten index, at most."""

    mode: str
    bound_ms: int

    @classmethod
    def of_settings(cls, settings: dict[str, str | None]) -> SyncMode:
        """From `system_views.settings` rows (name → value; 4.0 names end in `_in_ms`)."""
        mode = (settings.get("commitlog_sync") or "periodic").lower()
        if mode != "periodic":
            return cls(mode, 0)  # batch and group: a write is acknowledged after its sync
        period = settings.get("commitlog_sync_period") or settings.get("commitlog_sync_period_in_ms")
        if not period:
            raise ValueError("the node reports a periodic commit-log sync without its period")
        period_ms = milliseconds(period)
        lag = (settings.get("periodic_commitlog_sync_lag_block")
               or settings.get("periodic_commitlog_sync_lag_block_in_ms"))
        lag_ms = milliseconds(lag) if lag else 1.5 * period_ms  # Cassandra's default
        return cls(mode, int(period_ms + lag_ms))


@dataclass(frozen=True)
class Node:
    """The node beside the connector, as the frontier names it."""

    host_id: str
    sync: SyncMode


def read_node(cluster: Any, session: Any, address: str) -> Node:
    """The host id and sync mode of the node at `address` (asked of that node itself)."""
    host = cluster.metadata.get_host(socket.gethostbyname(address))
    if host is None:
        raise ValueError(f"{address} is not a node of the cluster the connector reaches")
    local = session.execute("SELECT host_id FROM system.local", host=host).one()
    settings = {row.name: row.value for row in session.execute(_SETTINGS, host=host)}
    return Node(str(local.host_id), SyncMode.of_settings(settings))


@dataclass(frozen=True)
class IndexLook:
    """One complete look at a segment's index: its offset and when Cassandra wrote it."""

    offset: int
    mtime_ns: int


def look_at_index(path: Path) -> IndexLook | None:
    """The index at `path`, when its mtime was the same before and after reading it (a rewrite is a
    truncate then a write: between them it reads empty, or is older than its mtime); else None."""
    try:
        before = os.stat(path).st_mtime_ns
        index = read_cdc_index(path)
        after = os.stat(path).st_mtime_ns
    except FileNotFoundError:
        return None
    if index is None or before != after:
        return None
    return IndexLook(index.offset, after)


class Frontier:
    """The frontier (µs, node clock) and the claims that wait for their commit."""

    def __init__(self, bound_ms: int) -> None:
        self.bound_us = bound_ms * 1000
        self.value_us: int | None = None
        self._seen_ns: int | None = None  # mtime of the newest index rewrite looked at
        self._before_ns: int | None = None  # mtime of the rewrite looked at before that one
        self._claims: deque[tuple[Position | None, int]] = deque(maxlen=_PENDING)

    def read_up(self, listed_at_us: int, look: IndexLook | None, read: Position | None) -> None:
        """Everything durable in cdc_raw as listed at `listed_at_us` has been read, up to `look` of the
        newest indexed segment (None: no indexed segment has anything unread), and handed to the
        checkpoint up to `read`: a claim, good once the committed position reaches `read`."""
        claim = listed_at_us - self.bound_us
        if look is not None:
            if self._seen_ns is None or look.mtime_ns > self._seen_ns:
                self._before_ns, self._seen_ns = self._seen_ns, look.mtime_ns
            if self._before_ns is not None:
                claim = max(claim, self._before_ns // 1000)
        if self._claims and self._claims[-1][0] == read:
            claim = max(claim, self._claims.pop()[1])
        self._claims.append((read, claim))

    def committed(self, position: Position | None) -> int | None:
        """The committed position moved to `position`: the claims it covers hold. Returns the frontier."""
        while self._claims and (self._claims[0][0] is None or
                                (position is not None and self._claims[0][0] <= position)):
            _, claim = self._claims.popleft()
            if self.value_us is None or claim > self.value_us:
                self.value_us = claim
        return self.value_us


class FrontierSender:
    """Sends the node's frontier record (`schemas.frontier`) every `interval` seconds, on a thread of its
    own (asking Kafka for offsets, or a node for its settings, must not hold the loop: with Kafka down a
    request waits its timeout). The loop sets `frontier_us` after each commit; the record sent takes the
    value as it is *before* the offsets are asked for, so every event it covers is below them.

    A record Kafka does not take is only said: the next one says as much and more. A table whose schema
    the registry refuses is left out while it does: its changes go to the dead-letter topic, not its own.
    The node (`discover()`, which raises when the node does not answer) is asked until it answers, every
    `_ASK_AGAIN` seconds; until then `node` is None and there is no frontier."""

    _ASK_AGAIN = 10.0

    def __init__(self, producer: EventProducer, client: dict, prefix: str, node_name: str,
                 discover: Callable[[], Node], interval: float, refused: Callable[[], list[str]]) -> None:
        self.producer, self.node_name, self.discover, self.interval = producer, node_name, discover, interval
        self.prefix, self.refused = prefix, refused
        self.topic, self.tables = frontier_topic(prefix), table_topics_pattern(prefix)
        self.node: Node | None = None
        self.frontier_us: int | None = None  # the loop's newest frontier
        admin = AdminClient(client)
        self.end_offsets: Callable[[], dict[str, dict[int, int]]] = lambda: latest_offsets(admin, self.tables)
        self._failures = 0  # in a row: the first is said loudly, the next quietly
        self._ready = False  # the frontier topic exists

    def start(self, stopping: threading.Event) -> FrontierSender:
        threading.Thread(target=self._run, args=(stopping,), name="ringtail-frontier", daemon=True).start()
        return self

    def _run(self, stopping: threading.Event) -> None:
        while self.node is None:
            if self._discover() or stopping.wait(self._ASK_AGAIN):
                break
        while not stopping.wait(self.interval):
            frontier_us = self.frontier_us
            if frontier_us is not None:
                self._send(frontier_us, stopping)

    def _discover(self) -> bool:
        try:
            self.node = self.discover()
        except Exception as exc:  # noqa: BLE001 - the driver's errors have no common base
            self._said(exc, "no frontier yet (no resolved timestamp waits on this node's writes): the node did not "
                       "say its host id and commit-log sync")
            return False
        self._failures = 0
        log.info("frontier sent every %.1f s as host %s; commit-log sync %s, a write in an index within %d ms",
                 self.interval, self.node.host_id, self.node.sync.mode, self.node.sync.bound_ms)
        return True

    def _send(self, frontier_us: int, stopping: threading.Event) -> None:
        try:
            if not self._ready:
                self._ready = self.producer.ensure_topic(self.topic, stopping, compacted=True)
            offsets = self.end_offsets()
        except (KafkaException, TopicError) as exc:
            self._said(exc, "frontier not sent")
            return
        self._failures = 0
        for table in self.refused():
            offsets.pop(topic_name(self.prefix, *table.split(".", 1)), None)
        record = FrontierRecord(self.node.host_id, self.node_name, frontier_us, self.node.sync.bound_ms, offsets)
        if not self.producer.offer(self.topic, record.key, record.encode(), self._delivered):
            log.debug("frontier not sent: the producer's queue is full (events first)")

    def _said(self, exc: Exception, what: str) -> None:
        self._failures += 1
        log.log(logging.WARNING if self._failures == 1 else logging.DEBUG, "%s (%d time(s) in a row): %s: %s",
                what, self._failures, type(exc).__name__, exc)

    def _delivered(self, error, message) -> None:
        if error is not None:
            log.warning("frontier not sent: %s", error)
