"""What an operator must see whatever the main loop is doing (reading, waiting for Kafka, stuck):
cdc_raw usage against cdc_total_space, the durable bytes not read yet, and how long the committed
position has stood still while such bytes wait. Measured on its own thread and clock."""
from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

from connector.segments import cdc_raw_usage
from connector.source import backlog, scan

if TYPE_CHECKING:
    from connector.runner import Connector

log = logging.getLogger("ringtail.connector")


class Monitor:
    def __init__(self, connector: Connector) -> None:
        self.connector = connector
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ringtail-monitor", daemon=True)
        self._committed = None
        self._moved = time.monotonic()
        self._warned = self._stalled = False

    def start(self) -> Monitor:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        interval = self.connector.settings.measure_interval
        while not self._stop.wait(interval):
            try:
                self.measure()
            except OSError as exc:  # cdc_raw unreadable for a moment: say so, measure again next time
                log.warning("cannot measure cdc_raw: %s", exc)

    def measure(self) -> None:
        c = self.connector
        s, m, health = c.settings, c.metrics, c.health
        used = cdc_raw_usage(s.cdc_raw)
        ratio = used / s.cdc_total_space
        m.cdc_raw_bytes.set(used)
        m.cdc_raw_usage.set(ratio)
        full = ratio >= s.cdc_usage_warning
        message = (f"cdc_raw holds {used >> 20} MiB, {ratio:.0%} of cdc_total_space: Cassandra rejects writes "
                   f"to CDC tables when it is full") if full else None
        if full and not self._warned:
            log.warning(message)
        self._warned = full
        health.warning("cdc_raw", message)

        checkpoint, tail = c.checkpoint, c.tail
        if checkpoint is None:
            return
        m.producer_queue.set(checkpoint.in_flight)
        reading = tail.position if tail is not None else None
        listing = scan(s.cdc_raw)
        c.note_indexed(listing)
        behind = backlog(listing, reading, checkpoint.releasing)
        m.bytes_behind.set(behind)
        committed, now = checkpoint.committed, time.monotonic()
        if committed != self._committed or behind == 0:  # idle is not stalled: the clock starts with a backlog
            self._committed, self._moved = committed, now
        age = now - self._moved
        m.committed_age.set(age)
        stalled = behind > 0 and age >= s.stall_timeout
        message = (f"stalled: the committed position ({committed}) has not moved for {age:.0f} s while "
                   f"{behind} durable bytes wait in cdc_raw") if stalled else None
        if stalled and not self._stalled:
            log.error(message)
        self._stalled = stalled
        health.problem("stall", message)
