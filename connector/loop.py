"""The connector's loop: segments in order → changes → Avro events on Kafka → commit → release.

Segments are read strictly in segment-id order (`next_segment`): the oldest not yet read to its end is
read up to its durable offset, and the next is started only once it is COMPLETED and read to its end.
What is read goes through the `Checkpoint`, the one place that commits and releases; where each
segment stands is `SegmentLife`'s, the one place that says so. Around that: segments that vanish
before they were read (`lost`), indexes that stay empty or stuck, tables whose schema the registry
rejects (`deadletters`), and leftovers of earlier runs.

The loop is handed what it talks to (`Services`: the producer, the serializer and its registry, the
schema, the native decoders, the clock); the process (`connector.runner`) builds them from the
settings, a test hands it fakes. Its thread owns all of its state; other threads read `view`.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import KafkaException

from connector.batch import Batch
from connector.checkpoint import Checkpoint, DeliveryFailed, PositionStore
from connector.commitlog import CommitLogError, Position
from connector.commitlog.cdc_index import SUFFIX
from connector.config import ConnectorSettings
from connector.deadletters import Rejections
from connector.events import EventWriter
from connector.frontier import Frontier, FrontierSender, look_at_index
from connector.lifecycle import SegmentLife, Stage
from connector.lost import LostSegment, LostSegments
from connector.metrics import Health, Metrics
from connector.schema.live import LiveSchema, SchemaUnavailable
from connector.segments import leftovers, quarantine_segment, release_segment
from connector.source import IndexProblem, Listing, SegmentFile, SegmentTail, next_segment, scan
from schemas.avro import ChangeSerializer, RegistryError
from schemas.runtime.kafka import EventProducer, TopicError

log = logging.getLogger("ringtail.connector")

try:  # the native core; without it the Python reader reads the segments, and the start says so
    from connector.native_source import NativeDecoders, NativeSegmentTail
except ImportError:
    NativeDecoders = NativeSegmentTail = None


@dataclass(frozen=True)
class Services:
    """What the loop talks to."""

    producer: EventProducer
    events: ChangeSerializer
    schema: LiveSchema
    rejections: Rejections
    decoders: NativeDecoders | None = None  # None: the Python reader reads the segments
    clock: Callable[[], float] = time.monotonic
    frontiers: FrontierSender | None = None  # None: no frontier is kept or sent


@dataclass(frozen=True)
class LoopView:
    """Where the loop stands, published whole for other threads (the monitor, /ready)."""

    committed: Position | None
    reading: Position | None  # where reading the current segment has got to
    in_flight: int  # events handed to Kafka and not acknowledged
    releasing: frozenset[int]  # read to their end, waiting for the commit
    segment: str | None  # the segment reading is on or waits for (a lost one)


class SegmentLoop:
    def __init__(self, settings: ConnectorSettings, services: Services, metrics: Metrics, health: Health,
                 stopping: threading.Event) -> None:
        self.settings, self.metrics, self.health, self.stopping = settings, metrics, health, stopping
        self.producer, self.schema = services.producer, services.schema
        self.decoders, self.clock = services.decoders, services.clock
        self.frontiers = services.frontiers
        self.frontier: Frontier | None = None  # once the node is known (`FrontierSender.node`)
        self.writer = EventWriter(services.events, services.schema, services.rejections, metrics,
                                  settings.topic_prefix, settings.node_name)
        self.positions = PositionStore(settings.state_dir / "position.json")
        self.lost = LostSegments(settings.state_dir / "lost")
        self.life = SegmentLife()
        self.checkpoint: Checkpoint | None = None
        self.tail: SegmentTail | None = None
        self.view: LoopView | None = None
        self._shown: tuple[int, str] | None = None  # the segment the metric and /ready name
        self._index_reported: int | None = None
        self._housekept = float("-inf")
        self._last_commit = float("-inf")

    # -- start, one turn, stop -----------------------------------------------------------------

    def begin(self) -> None:
        """The first checkpoint: where `start_from` says when nothing is committed; segments a crash left
        committed but not released are released, those `start_from: latest` skips released unread."""
        s = self.settings
        if s.start_from == "latest" and not self.positions.path.exists():
            start = self.positions.start_now(s.cdc_raw)
            if start is not None:
                log.info("start_from latest: reading from %s", start)
        self._rewind()
        listing = scan(s.cdc_raw)
        self.checkpoint.resume(listing.segments, self._skip)
        for lost in self.lost.pending():
            self.life.move(self._file(lost), Stage.LOST)
            self._lost_pending(lost)
        committed, held = self.checkpoint.committed, self.checkpoint.state.cdc_data
        if committed is not None and not committed.at_end:
            # Reading stopped inside this segment: it must still be there, if it held CDC data.
            present = {seg.segment_id for seg in listing.segments}
            if committed.segment_id not in present and committed.segment_id not in self.lost.recorded():
                orphan = listing.orphans.get(committed.segment_id)
                name = orphan.name.removesuffix(SUFFIX) + ".log" if orphan else f"segment {committed.segment_id}"
                if held or orphan:
                    self._record_lost(SegmentFile(s.cdc_raw / name, committed.segment_id), committed)
                else:
                    log.info("%s, which held no CDC data when reading stopped in it, has left cdc_raw (Cassandra "
                             "removes such segments): reading goes on from the next", name)
        self._publish()
        log.info("reading %s from %s", s.cdc_raw, self.checkpoint.committed or "the oldest segment")

    def turn(self) -> bool:
        """One step and, when `commit_interval` has passed, a commit; True when anything was read or
        finished. A failure to deliver rewinds to the committed position and pauses a second; one the
        next turn may not meet (schema, disk) is said and retried."""
        s, m = self.settings, self.metrics
        try:
            progressed = self.step()
            if self.clock() - self._last_commit >= s.commit_interval:
                self.checkpoint.commit()
                self._last_commit = self.clock()
            if self.frontiers is not None:
                self._send_frontier()
        except (DeliveryFailed, RegistryError, TopicError, KafkaException) as exc:
            # Nothing after the committed position is trusted: read it again, after a pause
            # (a missing topic needs an operator; the error says why).
            m.errors.labels(type(exc).__name__).inc()
            log.error("%s; resuming from the committed position", exc)
            self._rewind()
            self.stopping.wait(1.0)
            progressed = True  # the next turn reads again at once
        except SchemaUnavailable as exc:
            m.errors.labels("schema_unavailable").inc()
            log.warning("%s; retrying", exc)
            progressed = False
        except OSError as exc:  # releasing or archiving failed (full disk, permissions): retried
            m.errors.labels(type(exc).__name__).inc()
            log.error("%s; retrying in 1 s", exc)
            self.stopping.wait(1.0)
            progressed = False
        self._publish()
        m.progressed()
        return progressed

    def drain(self) -> None:
        """On a stop: wait for acknowledgements at most `shutdown_timeout`, commit what Kafka has."""
        timeout = self.settings.shutdown_timeout
        left = self.producer.flush(timeout)
        try:
            committed = self.checkpoint.commit()
        except DeliveryFailed as exc:
            committed = self.checkpoint.committed
            log.error("%s", exc)
        if left:
            self.producer.abandon()
            log.warning("stopping with %d events not acknowledged by Kafka within %.0f s; they are read again "
                        "at the next start", left, timeout)
        self._publish()
        log.info("stopped; committed %s", committed)

    def close(self) -> None:
        if self.tail is not None:
            self.tail.close()
            self.tail = None

    def _rewind(self) -> None:
        """(Re)start reading right after the committed position; events in flight are abandoned
        (those Kafka took anyway are the bounded duplicates)."""
        self.producer.flush(0)
        self._close_tail()
        for state in self.life.in_stage(Stage.FINISHED):
            self.life.move(state.segment, Stage.INDEXED)  # not committed: read again
        self.checkpoint = Checkpoint(self.positions, self._release, self.metrics.changes_emitted.inc, self.life.indexed)

    def _publish(self) -> None:
        checkpoint, tail = self.checkpoint, self.tail
        self.view = LoopView(checkpoint.committed, tail.position if tail is not None else None,
                             checkpoint.in_flight, checkpoint.releasing_ids, self._shown[1] if self._shown else None)

    # -- one step --------------------------------------------------------------------------------

    def step(self) -> bool:
        """Read what is durable in the segment to read; True when anything was read or finished."""
        # Delivery reports are served every turn: while reading waits (for a lost segment, say), the
        # commit still follows what Kafka acknowledges.
        self.producer.poll(0)
        listed_at = time.time_ns() // 1000
        listing = scan(self.settings.cdc_raw)
        pending = self._watch_segments(listing)
        if self.clock() - self._housekept >= self.settings.housekeeping_interval:
            self._housekeep(listing)
        blocked_from = pending[0].segment_id if pending else None
        returned = self.life.returned()
        segment = next_segment(listing, self.checkpoint.releasing, blocked_from, returned)
        if segment is not None:
            self._show_segment(segment.segment_id, segment.name, lambda: self.checkpoint.start_after(segment))
        elif pending:
            self._show_segment(pending[0].segment_id, pending[0].name, lambda: pending[0].position)
        if self.tail is not None and (segment is None or self.tail.segment != segment):
            self._close_tail()  # passed over: a later segment is indexed, so this one never held CDC data
        if segment is None:
            if not pending:
                self._read_up(listed_at, listing, None)
            return False
        if self.tail is None:
            after, complete = self.checkpoint.start_after(segment), segment.segment_id in returned
            self.life.move(segment, Stage.READING, indexed=segment.segment_id in listing.indexed)
            self.tail = (SegmentTail(segment, self.schema, after, complete, self.clock) if self.decoders is None
                         else NativeSegmentTail(segment, self.schema, self.decoders, after, complete, self.clock))
        tail = self.tail
        try:
            read = self._read(tail)
        except FileNotFoundError:  # vanished between the listing and the read: found lost next turn
            return True
        if self.tail is None:  # quarantined
            return True
        if tail.finished:
            self._finish(tail, Stage.FINISHED)
            return True
        self._read_up(listed_at, listing, segment)
        self._watch_index(tail, listing)
        return read

    def _send_frontier(self) -> None:
        """The frontier the commit makes, to the sender (whose thread sends it); kept once the node is known."""
        if self.frontier is None:
            if self.frontiers.node is None:
                return
            self.frontier = Frontier(self.frontiers.node.sync.bound_ms)
        self.frontiers.frontier_us = self.frontier.committed(self.checkpoint.committed)

    def _read_up(self, listed_at: int, listing: Listing, segment: SegmentFile | None) -> None:
        """A frontier claim (`connector.frontier`) when reading has caught up with what cdc_raw held durable
        when listed at `listed_at` (µs): nothing indexed after `segment`, the one read (None: every indexed
        one is read), and its index, looked at after the listing, read to its offset."""
        if self.frontier is None:
            return
        look = None
        if segment is not None:
            if any(i > segment.segment_id for i in listing.indexed):
                return
            if segment.segment_id in listing.indexed:
                look, at = look_at_index(segment.index_path), self.tail.position if self.tail else None
                if look is None or at is None or at < Position.after_section(segment.segment_id, look.offset):
                    return
        self.frontier.read_up(listed_at, look, self.checkpoint.queued_through)

    def _read(self, tail: SegmentTail) -> bool:
        read = False
        try:
            for batch in tail.batches(self.writer):
                read = True
                if not self._send_batch(batch):
                    return read
            if tail.position is not None:
                self.checkpoint.read_through(tail.position)
        except CommitLogError as error:
            self._quarantine(tail, error)
            return True
        self.producer.poll(0)
        if tail.position is not None:
            self.metrics.position.set(tail.position.entry_offset)
        return read

    def _show_segment(self, segment_id: int, name: str, position: Callable[[], Position | None]) -> None:
        """The metrics and /ready name the segment reading is on, or waits for (a lost one), and where in
        it reading stands (`position()`, asked when the segment changes; reading moves it on); with
        nothing to read, the last one read."""
        if (segment_id, name) != self._shown:
            self._shown = (segment_id, name)
            self.metrics.segment.set(segment_id)
            at = position()
            self.metrics.position.set(at.entry_offset if at is not None else 0)

    def _room(self) -> int:
        """How many more events may be in flight, waiting while none may; 0 when stopping first."""
        checkpoint, producer = self.checkpoint, self.producer
        while checkpoint.in_flight >= self.settings.max_in_flight:
            if self.stopping.is_set():
                return 0
            producer.poll(0.1)  # backpressure: reading waits for Kafka
            checkpoint.commit()
            self._publish()
        return self.settings.max_in_flight - checkpoint.in_flight

    def _send_batch(self, batch: Batch) -> bool:
        """Hand a batch to the producer in runs that fit `max_in_flight`, one delivery callback per run;
        False when stopping first (what was not handed over is not marked read)."""
        m, checkpoint, producer = self.metrics, self.checkpoint, self.producer
        topics, tables, keys, values = batch.topics, batch.tables, batch.keys, batch.values
        for table in set(tables):
            if not producer.ensure_topic(topics[table], self.stopping):
                return False
        start, count = 0, len(batch)
        while start < count:
            room = self._room()
            if not room:
                return False
            end = min(count, start + room)
            producer.send_all(zip([topics[t] for t in tables[start:end]], keys[start:end], values[start:end]),
                              checkpoint.produced(batch.position(end - 1), end - start))
            start = end
        if batch.through is not None and (not count or batch.through > batch.position(count - 1)):
            checkpoint.read_through(batch.through)  # changes left out after the last event
        m.changes_read.inc(batch.read)
        m.changes_filtered.inc(batch.left_out)
        if count and batch.write_times[-1]:
            m.lag.set(max(0.0, time.time() - batch.write_times[-1] / 1e6))
        return not self.stopping.is_set()

    def _close_tail(self) -> None:
        """Stop reading the segment before its end: it waits where it was (`SegmentLife.stop_reading`)."""
        if self.tail is not None:
            self.tail.close()
            self.life.stop_reading(self.tail.segment)
            self.tail = None

    def _finish(self, tail: SegmentTail, stage: Stage) -> None:
        """Read to its end (`FINISHED`) or moved aside (`QUARANTINED`): released at the commit past it."""
        self.life.move(tail.segment, stage)
        self.checkpoint.finished(tail.segment)
        tail.close()
        self.tail = None

    # -- segments: released, quarantined, lost, leftovers ---------------------------------------

    def _release(self, segment: SegmentFile) -> None:
        was = self.life.move(segment, Stage.RELEASED)
        self.schema.release(segment.segment_id)
        if was is Stage.QUARANTINED:
            return  # moved aside already: the commit past it is all its release is
        release_segment(segment, self.settings.archive_dir)
        self.metrics.segments_released.inc()
        log.info("released %s", segment.name)

    def _skip(self, segment: SegmentFile) -> None:
        self.life.move(segment, Stage.SKIPPED)
        release_segment(segment, self.settings.archive_dir)
        self.metrics.segments_released.inc()
        log.info("released %s unread (start_from: latest)", segment.name)

    def _quarantine(self, tail: SegmentTail, error: CommitLogError | IndexProblem) -> None:
        """A segment that cannot be read past `error`: what came before it is delivered, the segment is
        kept aside with the reason, and reading goes on with the next one — once Cassandra has finished
        writing it."""
        self.metrics.errors.labels(type(error).__name__).inc()
        if isinstance(error, CommitLogError) and not (tail.index and tail.index.completed):
            log.error("cannot read %s past %s: %s; waiting for Cassandra to finish the segment before "
                      "quarantining it", tail.segment.name, error.position, error)
            return
        self.producer.flush(60)
        reason = quarantine_segment(tail.segment, self.settings.quarantine, error)
        self.metrics.segments_quarantined.inc()
        at = "its start" if error.position is None else f"offset {error.position}"
        log.error("quarantined %s at %s: %s (reason: %s)", tail.segment.name, at, error, reason)
        self._finish(tail, Stage.QUARANTINED)

    def _watch_index(self, tail: SegmentTail, listing: Listing) -> None:
        """An index that says nothing new while later segments are indexed: Cassandra has moved on, so
        the index is empty, unreadable or stuck. Reported after `index_grace`, the segment quarantined
        after `index_quarantine_after`."""
        s, segment_id = self.settings, tail.segment.segment_id
        idle = self.clock() - tail.index_changed
        if not any(i > segment_id for i in listing.indexed) or idle < s.index_grace:
            if self._index_reported == segment_id:
                self._index_reported = None
                self.health.problem("index", None)
            return
        problem = IndexProblem(tail.segment.name, tail.index, tail.position, idle)
        if self._index_reported != segment_id:
            self._index_reported = segment_id
            self.metrics.index_problems.labels(problem.kind).inc()
            log.error("%s; quarantined after %.0f s", problem, s.index_quarantine_after)
        self.health.problem("index", str(problem))
        if idle >= s.index_quarantine_after:
            self.health.problem("index", None)
            self._index_reported = None
            self._quarantine(tail, problem)

    def _watch_segments(self, listing: Listing) -> list[LostSegment]:
        """Indexed segments become known; one that vanished before it was read to its end is lost; a lost
        one back in cdc_raw is read again, one whose loss was acknowledged is passed. Returns the lost
        segments still waited for, oldest first."""
        for vanished in self.life.observe(listing):
            if not self.checkpoint.releasing(vanished.segment.segment_id):
                self._record_lost(vanished.segment, self.checkpoint.start_after(vanished.segment))
        present = {s.segment_id: s for s in listing.segments}
        pending = self.lost.pending()
        for lost in pending:
            if lost.segment_id in present:
                self.lost.returned(lost)
                self.life.move(present[lost.segment_id], Stage.RETURNED)
                self._lost_cleared(lost.name)
                log.warning("%s is back in cdc_raw: reading it from %s", lost.name,
                            self.checkpoint.start_after(present[lost.segment_id]) or "its start")
        waiting = {lost.name for lost in pending}
        for state in self.life.in_stage(Stage.LOST):
            if state.segment.name not in waiting:
                self.life.move(state.segment, Stage.ACKNOWLEDGED)
                self._lost_cleared(state.segment.name)
                log.warning("the loss of %s is acknowledged: reading goes on past it", state.segment.name)
        return [lost for lost in pending if lost.segment_id not in present]

    def _record_lost(self, segment: SegmentFile, position: Position | None) -> None:
        if self.tail is not None and self.tail.segment.segment_id == segment.segment_id:
            self._close_tail()
        lost = self.lost.record(segment.name, segment.segment_id, position)
        self.life.move(segment, Stage.LOST)
        self.metrics.segments_lost.inc()
        self._lost_pending(lost)

    def _lost_pending(self, lost: LostSegment) -> None:
        message = (f"{lost}; reading waits for it to come back, or for `python -m connector ack-lost "
                   f"{lost.name}` to accept the loss")
        log.error(message)
        self.health.problem(f"lost {lost.name}", message)

    def _lost_cleared(self, name: str) -> None:
        self.health.problem(f"lost {name}", None)

    def _file(self, lost: LostSegment) -> SegmentFile:
        return SegmentFile(self.settings.cdc_raw / lost.name, lost.segment_id)

    def _housekeep(self, listing: Listing) -> None:
        self._housekept = self.clock()
        for kind, path in leftovers(listing, self.settings.leftover_min_age, keep=self.lost.recorded()):
            path.unlink(missing_ok=True)
            self.metrics.housekeeping.labels(kind).inc()
            log.info("removed %s %s, left by an earlier run", kind.replace("_", " "), path.name)
