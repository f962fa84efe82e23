"""The order of delivery, stated once: events durable in Kafka → position committed → segment released.

Events are handed to the producer in commit-log order, each with its position. A position is
committed (stored durably) only when every event up to it has been acknowledged by Kafka; changes
that are filtered out count as delivered once read. A finished segment is released only once the
committed position is past its end. A restart resumes right after the committed position, so the
duplicates a crash can cause are the acknowledged-but-uncommitted window, each recognisable by the
position in its event.
"""
from __future__ import annotations

import json
import os
from collections import deque
from pathlib import Path
from typing import Callable

from connector.commitlog import Position
from connector.durable import write_atomically
from connector.source import SegmentFile


class DeliveryFailed(RuntimeError):
    """Kafka did not take an event: reading resumes from the committed position."""


class PositionStore:
    """The committed position, one small JSON file replaced atomically."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)

    def load(self) -> Position | None:
        if not self.path.exists():
            return None
        return Position(**json.loads(self.path.read_bytes()))

    def save(self, position: Position) -> None:
        write_atomically(self.path, json.dumps(position._asdict()).encode())


class Checkpoint:
    def __init__(self, store: PositionStore, release: Callable[[SegmentFile], None]) -> None:
        self.store = store
        self.release = release
        self.committed: Position | None = store.load()
        self._read = self.committed  # everything up to here was handed to the producer or filtered
        self._in_flight: deque[list] = deque()  # [position, acknowledged] in the order produced
        self._finished: deque[tuple[SegmentFile, Position]] = deque()
        self.failure: str | None = None

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    def produced(self, position: Position) -> Callable:
        """Record an event handed to the producer; returns its delivery callback."""
        entry = [position, False]
        self._in_flight.append(entry)

        def delivered(error, message) -> None:
            if error is not None:
                self.failure = f"event at {position} not delivered: {error}"
            else:
                entry[1] = True

        return delivered

    def read_through(self, position: Position) -> None:
        """Everything up to `position` has been produced or filtered."""
        self._read = position

    def finished(self, segment: SegmentFile, end: Position) -> None:
        """The segment is read to its end (`end`); release it once that is committed."""
        self._finished.append((segment, end))

    def releasing(self, segment_id: int) -> bool:
        """Whether the segment is read to its end and waits for the commit that releases it."""
        return any(segment.segment_id == segment_id for segment, _ in self._finished)

    def commit(self) -> Position | None:
        """Commit what Kafka has acknowledged, then release the segments it covers."""
        if self.failure is not None:
            raise DeliveryFailed(self.failure)
        target = None
        while self._in_flight and self._in_flight[0][1]:
            target = self._in_flight.popleft()[0]
        if not self._in_flight:
            target = self._read
        if target is not None and (self.committed is None or target > self.committed):
            self.store.save(target)
            self.committed = target
        while self._finished and self.committed is not None and self.committed >= self._finished[0][1]:
            self.release(self._finished.popleft()[0])
        return self.committed
