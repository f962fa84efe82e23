"""The connector's main loop: segments in order → changes → Avro events on Kafka → commit → release.

Segments are read strictly in segment-id order: the oldest not yet done is read up to its durable
offset, and the next is started only once it is COMPLETED and read to its end, so committed positions
only grow. A segment without `_cdc.idx` older than one with an index never held CDC data (Cassandra
writes the index only for such segments and deletes the others itself): it is passed over.
Filesystem events on cdc_raw wake the loop at once; `poll_interval` is the fallback.
"""
from __future__ import annotations

import logging
import threading
import time

from confluent_kafka import KafkaException
from confluent_kafka.schema_registry import SchemaRegistryClient

from watchdog.events import FileSystemEventHandler
from watchdog.observers import Observer

from connector.checkpoint import Checkpoint, DeliveryFailed, PositionStore
from connector.commitlog import CommitLogError
from connector.commitlog.change import write_time
from connector.config import ConnectorSettings
from connector.avro import ChangeEncoder, ChangeSerializer, RegistryError, SchemaRegistry, SourceInfo
from connector.kafka import EventProducer, TopicError
from connector.metrics import Metrics, StatusServer
from connector.schema.live import LiveSchema, SchemaUnavailable
from connector.segments import cdc_raw_usage, quarantine_segment, release_segment
from connector.source import SegmentFile, SegmentTail, list_segments

log = logging.getLogger("ringtail.connector")


class _Wake(FileSystemEventHandler):
    def __init__(self, event: threading.Event) -> None:
        self.event = event

    def on_any_event(self, event) -> None:
        self.event.set()


class Connector:
    def __init__(self, settings: ConnectorSettings) -> None:
        self.settings = settings
        self.metrics = Metrics()
        settings.state_dir.mkdir(parents=True, exist_ok=True)
        self.schema = LiveSchema(settings.cassandra_hosts, settings.cassandra_port,
                                 store=settings.state_dir / "schema.json",
                                 check_interval=settings.schema_check_interval,
                                 newest_segment=self._newest_segment,
                                 on_applied=lambda changes: self.metrics.schema_changes.inc(len(changes)))
        self.positions = PositionStore(settings.state_dir / "position.json")
        self.producer: EventProducer | None = None
        self.events: ChangeSerializer | None = None
        self.checkpoint: Checkpoint | None = None
        self.tail: SegmentTail | None = None
        self._wake = threading.Event()
        self.stopping = threading.Event()
        self._usage_warned = False

    def _newest_segment(self) -> int:
        segments = list_segments(self.settings.cdc_raw)
        return segments[-1].segment_id if segments else 0

    # -- lifecycle ---------------------------------------------------------------------------

    def run(self) -> None:
        s = self.settings
        status = StatusServer(self.metrics, s.metrics_host, s.metrics_port).start() if s.metrics_port else None
        observer = Observer()
        observer.schedule(_Wake(self._wake), str(s.cdc_raw), recursive=False)
        observer.start()
        try:
            self._start_schema()
            self.producer = EventProducer(s.kafka_bootstrap_servers, partitions=s.topic_partitions,
                                          replication_factor=s.topic_replication_factor, extra=s.producer)
            source = SourceInfo(s.topic_prefix, s.cluster_name, s.node_name)
            self.events = ChangeSerializer(ChangeEncoder(source, self.schema.snapshot),
                                           SchemaRegistry(SchemaRegistryClient({"url": s.registry_url})))
            self._restart()
            if status is not None:
                status.ready = True
            log.info("reading %s from %s", s.cdc_raw, self.checkpoint.committed or "the oldest segment")
            last_commit = 0.0
            while not self.stopping.is_set():
                try:
                    progressed = self.step()
                    if time.monotonic() - last_commit >= s.commit_interval:
                        self.checkpoint.commit()
                        last_commit = time.monotonic()
                        self._measure()
                except (DeliveryFailed, RegistryError, TopicError, KafkaException) as exc:
                    # Nothing after the committed position is trusted: read it again, after a pause
                    # (a rejected schema or a missing topic needs an operator; the error says why).
                    self.metrics.errors.labels(type(exc).__name__).inc()
                    log.error("%s; resuming from the committed position", exc)
                    self._restart()
                    self.stopping.wait(1.0)
                    continue
                except SchemaUnavailable as exc:
                    self.metrics.errors.labels("schema_unavailable").inc()
                    log.warning("%s; retrying", exc)
                    progressed = False
                self.metrics.progressed()
                if not progressed:
                    self._wake.wait(s.poll_interval)
                    self._wake.clear()
            self._drain()
        finally:
            observer.unschedule_all()
            observer.stop()
            observer.join(timeout=5)
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

    def _restart(self) -> None:
        """(Re)start reading right after the committed position; events in flight are abandoned
        (those Kafka took anyway are the bounded duplicates)."""
        if self.producer is not None:
            self.producer.flush(0)
        if self.tail is not None:
            self.tail.close()
            self.tail = None
        self.checkpoint = Checkpoint(self.positions, self._release)

    def _drain(self) -> None:
        """On a clean stop: wait for acknowledgements, then commit."""
        self.producer.flush(30)
        self.checkpoint.commit()

    # -- one turn of the loop ------------------------------------------------------------------

    def step(self) -> bool:
        """Read what is durable in the current segment; True when anything was read or finished."""
        segments = list_segments(self.settings.cdc_raw)
        committed = self.checkpoint.committed
        current = None
        for i, segment in enumerate(segments):
            if committed is not None and segment.segment_id < committed.segment_id:
                # Delivered and committed, but the connector stopped before releasing it.
                if segment.index_path.exists():
                    self._release(segment)
                continue
            if self.checkpoint.releasing(segment.segment_id):
                continue  # read to its end; opening it again would produce its uncommitted events twice
            tail = self.tail if self.tail is not None and self.tail.segment.segment_id == segment.segment_id else None
            # Never held CDC data (Cassandra removes it once its data is flushed; a link left by an earlier
            # run stays): passed over, also when it was opened as the newest segment. Later indexes are
            # looked at first: Cassandra syncs, and so indexes, segments oldest first.
            unindexed = tail is None or tail.index is None
            if unindexed and any(s.index_path.exists() for s in segments[i + 1:]) and not segment.index_path.exists():
                if tail is not None:
                    tail.close()
                    self.tail = None
                continue
            if tail is not None:
                current = tail
                break
            after = committed if committed is not None and committed.segment_id == segment.segment_id else None
            current = self.tail = SegmentTail(segment, self.schema, after)
            break
        if current is None:
            return False
        read = self._read(current)
        if current.finished:
            self.checkpoint.finished(current.segment, current.position)
            current.close()
            self.tail = None
            return True
        return read

    def _read(self, tail: SegmentTail) -> bool:
        m, checkpoint, producer, events = self.metrics, self.checkpoint, self.producer, self.events
        read = False
        try:
            for change in tail.poll():
                read = True
                m.changes_read.inc()
                if self.schema.captures(change):
                    while checkpoint.in_flight >= self.settings.max_in_flight:
                        producer.poll(0.1)  # backpressure: reading waits for Kafka
                        checkpoint.commit()
                    events.encoder.schema = self.schema.snapshot
                    topic, key, value = events.serialize(change, tail.segment.name)
                    producer.ensure_topic(topic)
                    producer.send(topic, key, value, self._delivered(checkpoint.produced(change.position)))
                    m.lag.set(max(0.0, time.time() - write_time(change) / 1e6))
                else:
                    m.changes_filtered.inc()
                checkpoint.read_through(change.position)
            if tail.position is not None:
                checkpoint.read_through(tail.position)
        except CommitLogError as error:
            self._quarantine(tail, error)
            return True
        producer.poll(0)
        if tail.position is not None:
            m.segment.set(tail.segment.segment_id)
            m.position.set(tail.position.entry_offset)
        return read

    def _delivered(self, callback):
        emitted = self.metrics.changes_emitted

        def delivered(error, message) -> None:
            callback(error, message)
            if error is None:
                emitted.inc()

        return delivered

    def _release(self, segment: SegmentFile) -> None:
        release_segment(segment, self.settings.archive_dir)
        self.schema.release(segment.segment_id)
        self.metrics.segments_released.inc()
        log.info("released %s", segment.name)

    def _quarantine(self, tail: SegmentTail, error: CommitLogError) -> None:
        """A segment that cannot be read past `error`: what came before it is delivered, the
        segment is kept aside with the reason, and reading goes on with the next one — once
        Cassandra has finished writing it."""
        self.metrics.errors.labels(type(error).__name__).inc()
        if not (tail.index and tail.index.completed):
            log.error("cannot read %s past %s: %s; waiting for Cassandra to finish the segment before "
                      "quarantining it", tail.segment.name, error.position, error)
            return
        self.producer.flush(60)
        reason = quarantine_segment(tail.segment, self.settings.quarantine, error)
        self.metrics.segments_quarantined.inc()
        log.error("quarantined %s at offset %s: %s (reason: %s)", tail.segment.name, error.position, error, reason)
        end = tail.position._replace(entry_offset=1 << 62) if tail.position else None
        tail.close()
        self.tail = None
        if end is not None:
            self.checkpoint.read_through(end)

    def _measure(self) -> None:
        s, m = self.settings, self.metrics
        used = cdc_raw_usage(s.cdc_raw)
        ratio = used / s.cdc_total_space
        m.cdc_raw_bytes.set(used)
        m.cdc_raw_usage.set(ratio)
        m.producer_queue.set(self.checkpoint.in_flight)
        if self.tail is not None and self.tail.index is not None and self.tail.position is not None:
            m.bytes_behind.set(max(0, self.tail.index.offset - self.tail.position.entry_offset))
        if ratio >= s.cdc_usage_warning and not self._usage_warned:
            log.warning("cdc_raw holds %d MiB, %.0f%% of cdc_total_space: Cassandra rejects writes to CDC "
                        "tables when it is full", used >> 20, ratio * 100)
        self._usage_warned = ratio >= s.cdc_usage_warning
