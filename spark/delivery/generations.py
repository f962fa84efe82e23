"""The job's view of the CDC generations: published in Cassandra, checked against the ring.

On the first start there is no generation: one is published that starts
`first_generation_lookback` in the past, so changes already waiting in Kafka have streams.
Afterwards a ring (or `shards`/`ignore_msb`) change publishes a new generation that starts
`generation_delay` later, as ScyllaDB does on a topology change; the delay must exceed the
leeway so that no row already logged would have belonged to it.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from schemas.runtime.session import STATEMENTS_ONLY, connect
from spark.streams.generations import MICROS_PER_SECOND, Generations
from spark.streams.ring import read_ring
from spark.streams.storage import GenerationStore

from .settings import StreamSettings

log = logging.getLogger(__name__)


class GenerationKeeper:
    def __init__(self, settings: StreamSettings, clock: Callable[[], float] = time.time) -> None:
        if settings.generation_delay <= settings.leeway:
            raise ValueError("generation_delay must exceed leeway: rows already logged could belong to "
                             "a generation that starts sooner")
        self.settings = settings
        self.clock = clock
        self.cluster, self.session = connect(*settings.cluster, **STATEMENTS_ONLY)
        self.store = GenerationStore(self.session, settings.generations_keyspace)
        self.store.create_schema(settings.generations_replication)
        self.generations = Generations()
        self._checked_at: float | None = None
        self._lock = threading.Lock()  # one keeper may serve several queries' batches
        self.version = 0  # grows when the generations change: each sink publishes every version once

    def refresh(self) -> bool:
        """Reload the generations (publishing one if the ring asks for it) when the check interval
        has passed; True when they changed."""
        with self._lock:
            return self._refresh()

    def _refresh(self) -> bool:
        now = self.clock()
        if self._checked_at is not None and now - self._checked_at < self.settings.generation_check_interval:
            return False
        self._checked_at = now
        s = self.settings
        generations = self.store.load(leeway=int(s.leeway * MICROS_PER_SECOND), ignore_msb=s.ignore_msb)
        first = not generations.generations
        start = int((now - (s.first_generation_lookback if first else 0)) * MICROS_PER_SECOND)
        new = generations.add_for_ring(read_ring(self.session), start,
                                       delay=int(s.generation_delay * MICROS_PER_SECOND), shards=s.shards,
                                       ignore_msb=s.ignore_msb)
        if new is not None:
            self.store.publish(new)
            log.info("published CDC generation", extra={"generation_ms": new.timestamp_ms,
                                                        "ranges": len(new.topology()), "first": first})
        changed = [g.timestamp for g in generations.generations] != [g.timestamp for g in self.generations.generations]
        self.generations = generations
        self.version += changed
        return changed

    def close(self) -> None:
        self.cluster.shutdown()
