"""The connector's Prometheus metrics and what its /ready says (making progress, no problem set).

Names follow what users of Debezium and Kafka Connect already chart, in Prometheus form.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge


class Metrics:
    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.changes_read = Counter("ringtail_changes_read", "Changes decoded from segments", registry=r)
        self.changes_emitted = Counter("ringtail_changes_emitted", "Change events acknowledged by Kafka",
                                       registry=r)
        self.changes_filtered = Counter("ringtail_changes_filtered", "Changes of tables without cdc", registry=r)
        self.errors = Counter("ringtail_errors", "Errors by kind", ["kind"], registry=r)
        self.schema_changes = Counter("ringtail_schema_changes_applied", "Schema changes applied", registry=r)
        self.segments_released = Counter("ringtail_segments_released", "Segments delivered and released",
                                         registry=r)
        self.segments_quarantined = Counter("ringtail_segments_quarantined", "Segments moved to quarantine",
                                            registry=r)
        self.segment = Gauge("ringtail_current_segment_id", "Segment reading is on, or waits for (a lost one)",
                             registry=r)
        self.position = Gauge("ringtail_current_position_offset", "Offset read in the current segment",
                              registry=r)
        self.committed = Gauge("ringtail_committed_position_offset", "Committed offset", ["segment_id"],
                               registry=r)
        self.bytes_behind = Gauge("ringtail_bytes_behind", "Durable bytes in cdc_raw not read yet", registry=r)
        self.lag = Gauge("ringtail_lag_seconds", "Now minus the write time of the last change read", registry=r)
        self.cdc_raw_bytes = Gauge("ringtail_cdc_raw_bytes", "Bytes of segments in cdc_raw", registry=r)
        self.cdc_raw_usage = Gauge("ringtail_cdc_raw_usage_ratio", "cdc_raw bytes / cdc_total_space", registry=r)
        self.producer_queue = Gauge("ringtail_producer_in_flight", "Events produced, not yet acknowledged",
                                    registry=r)
        self.segments_lost = Counter("ringtail_segments_lost", "Segments gone from cdc_raw before they were read "
                                     "to their end", registry=r)
        self.index_problems = Counter("ringtail_index_problems", "Indexes found empty, unreadable or stuck while "
                                      "later segments are indexed", ["kind"], registry=r)
        self.housekeeping = Counter("ringtail_housekeeping_removed", "Leftovers removed from cdc_raw", ["kind"],
                                    registry=r)
        self.dead_letters = Counter("ringtail_dead_letters", "Change events sent to the dead-letter topic",
                                    ["reason"], registry=r)
        self.table_rejected = Gauge("ringtail_table_schema_rejected", "1 while the registry rejects the table's "
                                    "schema (its changes go to the dead-letter topic)", ["table"], registry=r)
        self.committed_age = Gauge("ringtail_committed_position_age_seconds", "Seconds since the committed "
                                   "position last moved", registry=r)
        self.last_progress = time.monotonic()

    def progressed(self) -> None:
        self.last_progress = time.monotonic()


class Health:
    """What /ready reports: problems (not ready) and warnings (ready, but worth a look), by name.
    Set from the main loop and the monitor thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._problems: dict[str, str] = {}
        self._warnings: dict[str, str] = {}

    def problem(self, name: str, message: str | None) -> None:
        """Set (or with None, clear) a problem."""
        self._set(self._problems, name, message)

    def warning(self, name: str, message: str | None) -> None:
        self._set(self._warnings, name, message)

    def _set(self, where: dict[str, str], name: str, message: str | None) -> None:
        with self._lock:
            if message is None:
                where.pop(name, None)
            else:
                where[name] = message

    def report(self) -> tuple[list[str], list[str]]:
        with self._lock:
            return sorted(self._problems.values()), sorted(self._warnings.values())


def connector_readiness(metrics: Metrics, health: Health, started: threading.Event,
                        stall_seconds: float = 30.0) -> Callable[[], tuple[list[str], list[str]]]:
    """The connector is ready once started, while its main loop turns (within `stall_seconds`, so a
    wedged connector is not reported ready) and no problem is set."""
    def report() -> tuple[list[str], list[str]]:
        problems, warnings = health.report()
        idle = time.monotonic() - metrics.last_progress
        if not started.is_set():
            problems.append("starting")
        if idle >= stall_seconds:
            problems.append(f"the main loop has not turned for {idle:.0f} s")
        return problems, warnings
    return report
