"""The connector's main loop: segments in order → changes → Avro events on Kafka → commit → release.

Segments are read strictly in segment-id order (`next_segment`): the oldest not yet read to its end is
read up to its durable offset, and the next is started only once it is COMPLETED and read to its end.
What is read goes through the `Checkpoint`, the one place that commits and releases. Around that loop:
segments that vanish before they were read (`lost`), indexes that stay empty or stuck, tables whose
schema the registry rejects (`deadletters`), leftovers of earlier runs, and a monitor thread measuring
cdc_raw and the committed position on its own clock. Filesystem events on cdc_raw wake the loop at
once; `poll_interval` is the fallback.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from confluent_kafka import KafkaException
from confluent_kafka.schema_registry import SchemaRegistryClient

from connector.avro import ChangeEncoder, ChangeSerializer, RegistryError, SchemaRegistry, SchemaRejected, SourceInfo
from connector.checkpoint import Checkpoint, DeliveryFailed, PositionStore
from connector.commitlog import Change, CommitLogError, Position, Undecodable
from connector.commitlog.cdc_index import SUFFIX
from connector.commitlog.change import write_time
from connector.config import ConnectorSettings
from connector.deadletters import Rejections, dead_letter, dead_letter_topic, undecodable_letter
from connector.kafka import EventProducer, TopicError
from connector.lock import exclusive
from connector.lost import LostSegments
from connector.reach import RefusalWatch, check_access
from connector.metrics import Health, Metrics, StatusServer, connector_readiness
from connector.monitor import Monitor
from connector.schema.live import LiveSchema, SchemaUnavailable
from connector.segments import leftovers, quarantine_segment, release_segment
from connector.source import IndexProblem, Listing, SegmentFile, SegmentTail, durable_end, next_segment, scan
from connector.wake import DirectoryWatch

log = logging.getLogger("ringtail.connector")

try:  # the native core; without it the Python reader reads the segments, and the start says so
    from connector.native_source import NativeBatch, NativeDecoders, NativeSegmentTail
    NATIVE_MISSING: ImportError | None = None
except ImportError as missing:
    NativeBatch = NativeDecoders = NativeSegmentTail = None
    NATIVE_MISSING = missing


class Connector:
    def __init__(self, settings: ConnectorSettings) -> None:
        self.settings = settings
        self.metrics = Metrics()
        self.health = Health()
        settings.state_dir.mkdir(parents=True, exist_ok=True)
        self.schema = LiveSchema(settings.cassandra_hosts, settings.cassandra_port,
                                 security=settings.cassandra_security,
                                 store=settings.state_dir / "schema.json",
                                 check_interval=settings.schema_check_interval,
                                 newest_segment=self._newest_segment,
                                 on_applied=self._schema_applied)
        self.positions = PositionStore(settings.state_dir / "position.json")
        self.lost = LostSegments(settings.state_dir / "lost")
        self.refusals = RefusalWatch(keep=settings.stall_timeout)  # Kafka refusing it mid-run, for /ready
        self.rejections = Rejections(settings.schema_retry_interval, on_change=self._table_rejected)
        self.producer: EventProducer | None = None
        self.events: ChangeSerializer | None = None
        self.checkpoint: Checkpoint | None = None
        self.tail: SegmentTail | None = None
        self.decoders = None  # NativeDecoders, when segments are read by the native core
        self._wake = threading.Event()
        self.stopping = threading.Event()
        self._known: dict[int, SegmentFile] = {}  # indexed segments seen and not yet read to their end
        self._returned: set[int] = set()  # lost segments back in cdc_raw, read to the end of their chain
        self._quarantined: set[int] = set()
        self._gone: set[int] = set()  # read to their end (released, quarantined or skipped)
        self._lost_reported: set[str] = set()  # lost segments /ready names
        self._shown: tuple[int, str] | tuple[None, None] = (None, None)  # the segment the metric and /ready name
        self._index_reported: int | None = None
        self._housekept = 0.0

    def _newest_segment(self) -> int:
        segments = scan(self.settings.cdc_raw).segments
        return segments[-1].segment_id if segments else 0

    # -- lifecycle ---------------------------------------------------------------------------

    def run(self) -> None:
        with exclusive(self.settings.cdc_raw, self.settings.state_dir):
            self._run()

    def _run(self) -> None:
        s = self.settings
        started = threading.Event()
        status = StatusServer(self.metrics.registry, connector_readiness(self.metrics, self.health, started),
                              s.metrics_host, s.metrics_port, detail=lambda: {"segment": self._shown[1]}
                              ).start() if s.metrics_port else None
        watch = DirectoryWatch(s.cdc_raw, self._wake).start()
        monitor = Monitor(self).start()
        try:
            check_access(s)  # AccessDenied stops the start when a service refuses the credentials
            self._start_schema()
            self.producer = EventProducer(s.kafka_security.librdkafka(s.kafka_bootstrap_servers),
                                          partitions=s.topic_partitions,
                                          replication_factor=s.topic_replication_factor,
                                          min_insync_replicas=s.topic_min_insync_replicas, extra=s.producer,
                                          on_error=self.refusals.error)
            source = SourceInfo(s.topic_prefix, s.cluster_name, s.node_name)
            self.events = ChangeSerializer(ChangeEncoder(source, self.schema.snapshot),
                                           SchemaRegistry(SchemaRegistryClient(s.registry_security.client(s.registry_url))))
            self.decoders = self._native_decoders()
            self._begin()
            started.set()
            log.info("reading %s from %s", s.cdc_raw, self.checkpoint.committed or "the oldest segment")
            last_commit = 0.0
            while not self.stopping.is_set():
                self._wake.clear()  # before looking: what changes from here on wakes the next turn at once
                try:
                    progressed = self.step()
                    if time.monotonic() - last_commit >= s.commit_interval:
                        self.checkpoint.commit()
                        last_commit = time.monotonic()
                except (DeliveryFailed, RegistryError, TopicError, KafkaException) as exc:
                    # Nothing after the committed position is trusted: read it again, after a pause
                    # (a missing topic needs an operator; the error says why).
                    self.metrics.errors.labels(type(exc).__name__).inc()
                    log.error("%s; resuming from the committed position", exc)
                    self._rewind()
                    self.stopping.wait(1.0)
                    continue
                except SchemaUnavailable as exc:
                    self.metrics.errors.labels("schema_unavailable").inc()
                    log.warning("%s; retrying", exc)
                    progressed = False
                except OSError as exc:  # releasing or archiving failed (full disk, permissions): retried
                    self.metrics.errors.labels(type(exc).__name__).inc()
                    log.error("%s; retrying in 1 s", exc)
                    self.stopping.wait(1.0)
                    progressed = False
                self.metrics.progressed()
                if not progressed:
                    self._wake.wait(s.poll_interval)
            self._drain()
        finally:
            monitor.stop()
            watch.close()
            if status is not None:
                status.close()
            if self.tail is not None:
                self.tail.close()
            self.schema.close()

    def stop(self) -> None:
        self.stopping.set()
        self._wake.set()

    def _start_schema(self) -> None:
        while True:
            try:
                self.schema.start()
                return
            except SchemaUnavailable as exc:
                log.warning("%s; retrying in 5 s", exc)
                if self.stopping.wait(5):
                    raise

    def _begin(self) -> None:
        """The first checkpoint: where `start_from` says when nothing is committed; segments a crash left
        committed but not released are released, those `start_from: latest` skips released unread."""
        s = self.settings
        if s.start_from == "latest" and not self.positions.path.exists():
            start = durable_end(s.cdc_raw)
            if start is not None:
                self.positions.start_at(start)
                log.info("start_from latest: reading from %s", start)
        self._rewind()
        listing = scan(s.cdc_raw)
        self.checkpoint.resume(listing.segments, self._skip)
        for lost in self.lost.pending():
            self._lost_pending(lost)
        committed = self.checkpoint.committed
        if committed is not None and not committed.at_end:
            # Reading stopped inside this segment: it must still be there.
            present = {seg.segment_id for seg in listing.segments}
            if committed.segment_id not in present and committed.segment_id not in self.lost.recorded():
                orphan = listing.orphans.get(committed.segment_id)
                name = orphan.name.removesuffix(SUFFIX) + ".log" if orphan else f"segment {committed.segment_id}"
                self._record_lost(name, committed.segment_id, committed)

    def _rewind(self) -> None:
        """(Re)start reading right after the committed position; events in flight are abandoned
        (those Kafka took anyway are the bounded duplicates)."""
        if self.producer is not None:
            self.producer.flush(0)
        if self.tail is not None:
            self.tail.close()
            self.tail = None
        self.checkpoint = Checkpoint(self.positions, self._release, self.metrics.changes_emitted.inc)

    def _drain(self) -> None:
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
        log.info("stopped; committed %s", committed)

    # -- one turn of the loop ------------------------------------------------------------------

    def step(self) -> bool:
        """Read what is durable in the segment to read; True when anything was read or finished."""
        # Delivery reports are served every turn: while reading waits (for a lost segment, say), the
        # commit still follows what Kafka acknowledges.
        self.producer.poll(0)
        listing = scan(self.settings.cdc_raw)
        self._watch_segments(listing)
        if time.monotonic() - self._housekept >= self.settings.housekeeping_interval:
            self._housekeep(listing)
        pending = self.lost.pending()
        blocked_from = pending[0].segment_id if pending else None
        segment = next_segment(listing, self.checkpoint.releasing, blocked_from, frozenset(self._returned))
        if segment is not None:
            self._show_segment(segment.segment_id, segment.name, lambda: self.checkpoint.start_after(segment))
        elif pending:
            self._show_segment(pending[0].segment_id, pending[0].name, lambda: pending[0].position)
        if self.tail is not None and (segment is None or self.tail.segment != segment):
            self.tail.close()  # passed over: a later segment is indexed, so this one never held CDC data
            self.tail = None
        if segment is None:
            return False
        if self.tail is None:
            after, complete = self.checkpoint.start_after(segment), segment.segment_id in self._returned
            self.tail = (SegmentTail(segment, self.schema, after, complete) if self.decoders is None else
                         NativeSegmentTail(segment, self.schema, self.decoders, after, complete))
        tail = self.tail
        try:
            read = self._read(tail)
        except FileNotFoundError:  # vanished between the listing and the read: found lost next turn
            return True
        if tail.finished:
            self._finish(tail)
            return True
        self._watch_index(tail, listing)
        return read

    def _read(self, tail: SegmentTail) -> bool:
        m, checkpoint, producer = self.metrics, self.checkpoint, self.producer
        read = False
        try:
            for change in tail.poll():
                read = True
                if isinstance(change, Undecodable):
                    if not self._send(*self._undecodable(change, tail.segment.name), change.position):
                        return read
                    continue
                if not isinstance(change, Change):  # a pass of the native core
                    if not self._send_batch(change):
                        return read
                    continue
                m.changes_read.inc()
                if self.schema.captures(change):
                    if not self._send(*self._event(change, tail.segment.name), change.position):
                        return read
                    m.lag.set(max(0.0, time.time() - write_time(change) / 1e6))
                else:
                    m.changes_filtered.inc()
                checkpoint.read_through(change.position)
                if self.stopping.is_set():
                    return read
            if tail.skipped:  # changes of tables without CDC data the native core read and left out
                m.changes_read.inc(tail.skipped)
                m.changes_filtered.inc(tail.skipped)
                tail.skipped = 0
            if tail.position is not None:
                checkpoint.read_through(tail.position)
        except CommitLogError as error:
            self._quarantine(tail, error)
            return True
        producer.poll(0)
        if tail.position is not None:
            m.position.set(tail.position.entry_offset)
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
        return self.settings.max_in_flight - checkpoint.in_flight

    def _send(self, topic: str, key: bytes, value: bytes, position: Position) -> bool:
        """Hand an event to the producer; False when stopping first (the event is not marked read: the
        next start reads it)."""
        if not self._room() or not self.producer.ensure_topic(topic, self.stopping):
            return False
        self.producer.send(topic, key, value, self.checkpoint.produced(position))
        return True

    def _send_batch(self, batch: NativeBatch) -> bool:
        """Hand a native pass to the producer in runs that fit `max_in_flight`, one delivery callback
        per run, leaving out the changes of tables without CDC at their write time; False when stopping
        first (what was not handed over is not marked read)."""
        m, checkpoint, producer = self.metrics, self.checkpoint, self.producer
        captures, events, topics = self.schema.history.captures, batch.events, batch.topics
        ids = [table.id for table in batch.tables]
        start = filtered = 0
        while start < len(events):
            room = self._room()
            if not room:
                return False
            run = events[start:start + room]
            chosen = [e for e in run if captures(ids[e[1]], e[4])]
            for table in {e[1] for e in chosen}:
                if not producer.ensure_topic(topics[table], self.stopping):
                    return False
            start += len(run)
            if chosen:
                producer.send_all(((topics[e[1]], e[5], e[6]) for e in chosen),
                                  checkpoint.produced(batch.position(start - 1), len(chosen)))
                m.lag.set(max(0.0, time.time() - chosen[-1][4] / 1e6))
            else:
                checkpoint.read_through(batch.position(start - 1))
            m.changes_read.inc(len(run))
            filtered += len(run) - len(chosen)
        m.changes_filtered.inc(filtered)
        return not self.stopping.is_set()

    def _native_decoders(self):
        """The native core's decoders, unless the settings choose the Python reader or it is missing."""
        if self.settings.decoder == "python":
            log.info("segments are read by the Python reader (decoder: python)")
            return None
        if NATIVE_MISSING is not None:
            log.error("THE NATIVE CORE IS MISSING (%s): segments are read by the Python reader, several times "
                      "slower; reinstall ringtail (pip install .) with a Rust toolchain to build it", NATIVE_MISSING)
            return None
        history = lambda: self.schema.history  # noqa: E731 (the live schema replaces its history)

        def rejected(table, error: SchemaRejected) -> None:
            self.rejections.rejected(table.qualified_name, error, self.events.encoder.table(table).value_schema)

        return NativeDecoders(self.events, lambda table: history().ever_captured(table.id),
                              lambda table: self.schema.observes(table) or table.qualified_name in
                              self.rejections.tables, rejected)

    def _event(self, change: Change, segment: str) -> tuple[str, bytes, bytes]:
        """The change's event for its table's topic, or its dead letter while the registry rejects the
        table's schema."""
        table = change.table.qualified_name
        held = self.rejections.holding(table)
        if held is None:
            self.events.encoder.schema = self.schema.snapshot
            try:
                event = self.events.serialize(change, segment)
            except SchemaRejected as error:
                schema = self.events.encoder.table(change.table).value_schema
                self.rejections.rejected(table, error, schema)
                held = error, schema
            else:
                self.rejections.accepted(table)
                return event
        error, schema = held
        self.metrics.dead_letters.labels("schema_rejected").inc()
        key, value = dead_letter(change, self.schema.snapshot, segment, error, schema, self.settings.node_name)
        return dead_letter_topic(self.settings.topic_prefix), key, value

    def _undecodable(self, entry: Undecodable, segment: str) -> tuple[str, bytes, bytes]:
        """The dead letter of an entry no schema decodes: loud, counted, and nothing lost."""
        topic = dead_letter_topic(self.settings.topic_prefix)
        self.metrics.dead_letters.labels("undecodable").inc()
        log.error("cannot decode the entry at %s of %s: %s; it goes whole to %s, and reading goes on",
                  entry.position, segment, entry.error, topic)
        return (topic, *undecodable_letter(entry, segment, self.settings.node_name))

    def _finish(self, tail: SegmentTail) -> None:
        segment_id = tail.segment.segment_id
        self._gone.add(segment_id)
        self.checkpoint.finished(tail.segment)
        self._known.pop(segment_id, None)
        self._returned.discard(segment_id)
        tail.close()
        self.tail = None

    # -- segments: released, quarantined, lost, leftovers ---------------------------------------

    def _release(self, segment: SegmentFile) -> None:
        self._gone.add(segment.segment_id)
        self.schema.release(segment.segment_id)
        if segment.segment_id in self._quarantined:
            self._quarantined.discard(segment.segment_id)
            return
        release_segment(segment, self.settings.archive_dir)
        self.metrics.segments_released.inc()
        log.info("released %s", segment.name)

    def _skip(self, segment: SegmentFile) -> None:
        self._gone.add(segment.segment_id)
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
        self._quarantined.add(tail.segment.segment_id)
        self._finish(tail)

    def _watch_index(self, tail: SegmentTail, listing: Listing) -> None:
        """An index that says nothing new while later segments are indexed: Cassandra has moved on, so
        the index is empty, unreadable or stuck. Reported after `index_grace`, the segment quarantined
        after `index_quarantine_after`."""
        s, segment_id = self.settings, tail.segment.segment_id
        idle = time.monotonic() - tail.index_changed
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

    def _watch_segments(self, listing: Listing) -> None:
        """Note the indexed segments; one that vanished before it was read to its end is lost."""
        present = {s.segment_id: s for s in listing.segments}
        self.note_indexed(listing)
        for segment_id, segment in list(self._known.items()):
            if segment_id in self._gone:
                # Released or skipped by this process: the monitor's listing may have noted it just before.
                self._known.pop(segment_id, None)
            elif segment_id not in present and not self.checkpoint.releasing(segment_id):
                self._record_lost(segment.name, segment_id, self.checkpoint.start_after(segment))
        pending = self.lost.pending()
        for lost in pending:
            if lost.segment_id in present:
                self.lost.returned(lost)
                self._returned.add(lost.segment_id)
                self._lost_cleared(lost.name)
                log.warning("%s is back in cdc_raw: reading it from %s", lost.name,
                            self.checkpoint.start_after(present[lost.segment_id]) or "its start")
        for name in self._lost_reported - {lost.name for lost in pending}:
            self._lost_cleared(name)
            log.warning("the loss of %s is acknowledged: reading goes on past it", name)

    def note_indexed(self, listing: Listing) -> None:
        """Remember the indexed segments of a listing; also called by the monitor thread, so a segment
        is known while the main loop is busy inside another one."""
        checkpoint = self.checkpoint
        for segment in listing.segments:
            segment_id = segment.segment_id
            # A listing taken before a release must not make the released segment known again.
            if segment_id in listing.indexed and not checkpoint.releasing(segment_id) and segment_id not in self._gone:
                self._known.setdefault(segment_id, segment)

    def _record_lost(self, name: str, segment_id: int, position) -> None:
        lost = self.lost.record(name, segment_id, position)
        self._known.pop(segment_id, None)
        if self.tail is not None and self.tail.segment.segment_id == segment_id:
            self.tail.close()
            self.tail = None
        self.metrics.segments_lost.inc()
        self._lost_pending(lost)

    def _lost_pending(self, lost) -> None:
        message = (f"{lost}; reading waits for it to come back, or for `python -m connector ack-lost "
                   f"{lost.name}` to accept the loss")
        log.error(message)
        self.health.problem(f"lost {lost.name}", message)
        self._lost_reported.add(lost.name)

    def _lost_cleared(self, name: str) -> None:
        self._lost_reported.discard(name)
        self.health.problem(f"lost {name}", None)

    def _housekeep(self, listing: Listing) -> None:
        self._housekept = time.monotonic()
        for kind, path in leftovers(listing, self.settings.leftover_min_age, keep=self.lost.recorded()):
            path.unlink(missing_ok=True)
            self.metrics.housekeeping.labels(kind).inc()
            log.info("removed %s %s, left by an earlier run", kind.replace("_", " "), path.name)

    # -- schema ---------------------------------------------------------------------------------

    def _schema_applied(self, changes) -> None:
        self.metrics.schema_changes.inc(len(changes))
        for change in changes:
            if change.kind == "cdc_enabled":
                # Cassandra decides whether a write is a CDC write when the statement is prepared, and
                # preparing again returns the cached statement: see the README, "What can go wrong".
                log.warning("cdc is now on for %s: writes through statements prepared before this are not "
                            "CDC writes to Cassandra (no _cdc.idx; they reach cdc_raw only beside other CDC "
                            "writes) until the clients prepare them again, e.g. after a restart", change.name)

    def _table_rejected(self, table: str, rejected: bool) -> None:
        self.metrics.table_rejected.labels(table).set(1 if rejected else 0)
        self.health.warning(f"rejected {table}", f"the registry rejects the schema of {table}; its changes go "
                                                 f"to {dead_letter_topic(self.settings.topic_prefix)}"
                            if rejected else None)
