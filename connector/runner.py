"""The connector process: a `SegmentLoop` (`connector.loop`) and what surrounds it.

It holds cdc_raw and the state directory alone (`lock`), checks at start that every service takes
its credentials, loads the live schema, builds the loop's services from the settings, and runs the
loop's turns until stopped; beside them a watch of cdc_raw wakes the loop at once on a change
(`poll_interval` is the fallback), a monitor thread measures cdc_raw and the committed position on its
own clock, and the status server serves /metrics, /health and /ready.
"""
from __future__ import annotations

import logging
import threading

from confluent_kafka.schema_registry import SchemaRegistryClient

from connector.config import ConnectorSettings
from connector.frontier import FrontierSender, Node, read_node
from connector.deadletters import Rejections, dead_letter_topic
from connector.lock import exclusive
from connector.loop import SegmentLoop, Services
from connector.metrics import Health, Metrics, connector_readiness
from connector.monitor import Monitor
from connector.schema.live import LiveSchema, SchemaUnavailable
from connector.source import scan
from connector.wake import DirectoryWatch
from schemas.avro import ChangeEncoder, ChangeSerializer, SchemaRegistry, SchemaRejected, SourceInfo
from schemas.runtime.kafka import EventProducer
from schemas.runtime.reach import RefusalWatch, check_access
from schemas.runtime.session import connect
from schemas.runtime.status import StatusServer

log = logging.getLogger("ringtail.connector")

try:  # the native core; without it the Python reader reads the segments, and the start says so
    from connector.native_source import NativeDecoders
    NATIVE_MISSING: ImportError | None = None
except ImportError as missing:
    NativeDecoders = None
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
        self.refusals = RefusalWatch(keep=settings.stall_timeout)  # Kafka refusing it mid-run, for /ready
        self.rejections = Rejections(settings.schema_retry_interval, on_change=self._table_rejected)
        self.loop: SegmentLoop | None = None
        self._wake = threading.Event()
        self.stopping = threading.Event()

    def _newest_segment(self) -> int:
        segments = scan(self.settings.cdc_raw).segments
        return segments[-1].segment_id if segments else 0

    def run(self) -> None:
        with exclusive(self.settings.cdc_raw, self.settings.state_dir):
            self._run()

    def _run(self) -> None:
        s = self.settings
        started = threading.Event()
        status = StatusServer(self.metrics.registry, connector_readiness(self.metrics, self.health, started),
                              s.metrics_host, s.metrics_port, detail=self._detail).start() if s.metrics_port else None
        watch = DirectoryWatch(s.cdc_raw, self._wake).start()
        monitor = Monitor(s, self.metrics, self.health, self.refusals, lambda: self.loop).start()
        try:
            check_access(s)  # AccessDenied stops the start when a service refuses the credentials
            self._start_schema()
            self.loop = SegmentLoop(s, self._services(), self.metrics, self.health, self.stopping)
            self.loop.begin()
            started.set()
            while not self.stopping.is_set():
                self._wake.clear()  # before looking: what changes from here on wakes the next turn at once
                if not self.loop.turn():
                    self._wake.wait(s.poll_interval)
            self.loop.drain()
        finally:
            monitor.stop()
            watch.close()
            if status is not None:
                status.close()
            if self.loop is not None:
                self.loop.close()
            self.schema.close()

    def stop(self) -> None:
        self.stopping.set()
        self._wake.set()

    def _detail(self) -> dict:
        view = self.loop.view if self.loop is not None else None
        return {"segment": view.segment if view is not None else None}

    def _start_schema(self) -> None:
        while True:
            try:
                self.schema.start()
                return
            except SchemaUnavailable as exc:
                log.warning("%s; retrying in 5 s", exc)
                if self.stopping.wait(5):
                    raise

    def _services(self) -> Services:
        s = self.settings
        producer = EventProducer(s.kafka_security.librdkafka(s.kafka_bootstrap_servers),
                                 partitions=s.topic_partitions, replication_factor=s.topic_replication_factor,
                                 min_insync_replicas=s.topic_min_insync_replicas, extra=s.producer,
                                 on_error=self.refusals.error)
        source = SourceInfo(s.topic_prefix, s.cluster_name, s.node_name)
        events = ChangeSerializer(ChangeEncoder(source, self.schema.snapshot),
                                  SchemaRegistry(SchemaRegistryClient(s.registry_security.client(s.registry_url))))
        frontiers = FrontierSender(
            producer, s.kafka_security.librdkafka(s.kafka_bootstrap_servers), s.topic_prefix, s.node_name,
            self._node, s.frontier_interval, lambda: self.rejections.tables
        ).start(self.stopping) if s.frontier_interval else None
        return Services(producer, events, self.schema, self.rejections, self._native_decoders(events),
                        frontiers=frontiers)

    def _node(self) -> Node:
        """The node beside the connector (the first of `cassandra_hosts`), as its frontier names it."""
        s = self.settings
        cluster, session = connect(s.cassandra_hosts[:1], s.cassandra_port, s.cassandra_security)
        try:
            return read_node(cluster, session, s.cassandra_hosts[0])
        finally:
            cluster.shutdown()

    def _native_decoders(self, events: ChangeSerializer):
        """The native core's decoders, unless the settings choose the Python reader or it is missing."""
        if self.settings.decoder == "python":
            log.info("segments are read by the Python reader (decoder: python)")
            return None
        if NATIVE_MISSING is not None:
            log.error("THE NATIVE CORE IS MISSING (%s): segments are read by the Python reader, several times "
                      "slower; reinstall ringtail (pip install .) with a Rust toolchain to build it", NATIVE_MISSING)
            return None
        schema, rejections = self.schema, self.rejections

        def rejected(table, error: SchemaRejected) -> None:
            rejections.rejected(table.qualified_name, error, events.encoder.table(table).value_schema)

        return NativeDecoders(events, lambda table: schema.history.ever_captured(table.id),
                              lambda table: schema.observes(table) or table.qualified_name in rejections.tables,
                              rejected)

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
