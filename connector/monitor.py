"""What an operator must see whatever the main loop is doing (reading, waiting for Kafka, stuck):
cdc_raw usage against cdc_total_space, the durable bytes not read yet, and how long the committed
position has stood still while such bytes wait. Measured on its own thread and clock."""
from __future__ import annotations

import logging
import threading
import time
from functools import partial
from typing import TYPE_CHECKING, Callable

from connector.config import ConnectorSettings
from connector.metrics import Health, Metrics
from connector.segments import cdc_raw_usage
from connector.source import backlog, scan
from schemas.runtime.reach import RefusalWatch

if TYPE_CHECKING:
    from connector.loop import SegmentLoop

log = logging.getLogger("ringtail.connector")


class _Condition:
    """Logged once when it begins, shown by /ready (`show`) while it lasts."""

    def __init__(self, emit: Callable[[str], None], show: Callable[[str | None], None]) -> None:
        self.emit, self.show, self.on = emit, show, False

    def update(self, message: str | None) -> None:
        if message is not None and not self.on:
            self.emit(message)
        self.on = message is not None
        self.show(message)


class Monitor:
    """Reads the loop only through its published view; the listings it takes it hands to the loop's
    `SegmentLife`, so a segment is known while the loop is busy inside another one."""

    def __init__(self, settings: ConnectorSettings, metrics: Metrics, health: Health, refusals: RefusalWatch,
                 loop: Callable[[], SegmentLoop | None]) -> None:
        self.settings, self.metrics, self.refusals, self.loop = settings, metrics, refusals, loop
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ringtail-monitor", daemon=True)
        self._committed = None
        self._moved = time.monotonic()
        self._space = _Condition(log.warning, partial(health.warning, "cdc_raw"))
        self._stall = _Condition(log.error, partial(health.problem, "stall"))
        self._refused = _Condition(log.error, partial(health.problem, "kafka access"))

    def start(self) -> Monitor:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        interval = self.settings.measure_interval
        while not self._stop.wait(interval):
            try:
                self.measure()
            except OSError as exc:  # cdc_raw unreadable for a moment: say so, measure again next time
                log.warning("cannot measure cdc_raw: %s", exc)

    def measure(self) -> None:
        s, m = self.settings, self.metrics
        self._refused.update(self.refusals.current())
        used = cdc_raw_usage(s.cdc_raw)
        ratio = used / s.cdc_total_space
        m.cdc_raw_bytes.set(used)
        m.cdc_raw_usage.set(ratio)
        self._space.update(f"cdc_raw holds {used >> 20} MiB, {ratio:.0%} of cdc_total_space: Cassandra rejects "
                           f"writes to CDC tables when it is full" if ratio >= s.cdc_usage_warning else None)

        loop = self.loop()
        view = loop.view if loop is not None else None
        if view is None:
            return
        m.producer_queue.set(view.in_flight)
        listing = scan(s.cdc_raw)
        loop.life.sighted(listing)
        behind = backlog(listing, view.reading, view.releasing.__contains__)
        m.bytes_behind.set(behind)
        committed, now = view.committed, time.monotonic()
        if committed != self._committed or behind == 0:  # idle is not stalled: the clock starts with a backlog
            self._committed, self._moved = committed, now
        age = now - self._moved
        m.committed_age.set(age)
        self._stall.update(f"stalled: the committed position ({committed}) has not moved for {age:.0f} s while "
                           f"{behind} durable bytes wait in cdc_raw" if behind > 0 and age >= s.stall_timeout
                           else None)
