"""The order of delivery, stated once: events durable in Kafka → position committed → segment released.

Everything read is queued here in commit-log order: each event handed to the producer (acknowledged
when Kafka's delivery report says so), each run of filtered changes, and the end of each segment read
to its end. `commit` takes the unbroken run of acknowledged items at the head of the queue, stores
the position it reaches together with the segments it completes (one atomic write), then releases
those segments and stores that they are gone. Nothing else writes the state file and nothing else
releases a segment, so a segment is released only once it was read to its end and every event in it
is in Kafka; no position or segment id comparison decides it.

A restart resumes right after the committed position; the duplicates a crash can cause are the
acknowledged-but-uncommitted window, each recognisable by the position in its event.
"""
from __future__ import annotations

import json
import os
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from connector.commitlog import Position
from connector.source import SegmentFile, durable_end, scan
from schemas.runtime.durable import write_atomically


class DeliveryFailed(RuntimeError):
    """Kafka did not take an event: reading resumes from the committed position."""


class BrokenInvariant(DeliveryFailed):
    """A delivery report contradicts what was produced (a second report for one event, or a partition's
    offsets going backwards): nothing after the committed position is trusted."""


@dataclass(frozen=True)
class DeliveryState:
    """What the state file holds."""

    position: Position | None = None  # every change up to here is in Kafka or was filtered
    done: tuple[int, ...] = ()  # segments read to their end and committed, release not yet confirmed
    # Set by `start_from: latest` until the first start has released the older segments unread.
    skip_before: int | None = None
    # Whether the segment of `position` held CDC data when it was committed (Cassandra had indexed it, or an
    # event came from it). Cassandra removes the link of a segment that never held any once it is flushed:
    # such a segment missing at the next start is not a loss. Unknown (an older file): taken as held.
    cdc_data: bool = True

    def to_json(self) -> dict:
        return {"position": self.position._asdict() if self.position else None, "done": list(self.done),
                "skip_before": self.skip_before, "cdc_data": self.cdc_data}

    @classmethod
    def from_json(cls, data: dict) -> DeliveryState:
        if "segment_id" in data:  # the first format: a bare position
            return cls(Position(**data))
        position = data.get("position")
        return cls(Position(**position) if position else None, tuple(data.get("done", ())), data.get("skip_before"),
                   data.get("cdc_data", True))


class PositionStore:
    """The delivery state, one small JSON file replaced atomically; its only writer."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)

    def load(self) -> DeliveryState:
        if not self.path.exists():
            return DeliveryState()
        return DeliveryState.from_json(json.loads(self.path.read_bytes()))

    def save(self, state: DeliveryState) -> None:
        write_atomically(self.path, json.dumps(state.to_json()).encode())

    def start_at(self, position: Position, cdc_data: bool = True) -> None:
        """Start reading after `position` (`cdc_data`: its segment holds CDC data); older segments are
        released unread at the next start."""
        self.save(DeliveryState(position, skip_before=position.segment_id, cdc_data=cdc_data))

    def start_now(self, cdc_raw: str | os.PathLike) -> Position | None:
        """Start reading after everything durable in `cdc_raw` now (`durable_end`), which may lie in a segment
        that holds no CDC data yet; that position, or None when nothing is durable (nothing to skip)."""
        end = durable_end(cdc_raw)
        if end is not None:
            self.start_at(end, cdc_data=end.segment_id in scan(cdc_raw).indexed)
        return end


@dataclass(slots=True, eq=False)
class _Item:
    position: Position  # the last change the item stands for
    acknowledged: bool
    segment: SegmentFile | None = None  # set on the item that ends a segment
    events: int = 0  # events handed to the producer for it
    reports: int = field(default=0)  # delivery reports received

    def described(self) -> str:
        return f"the event at {self.position}" if self.events == 1 else \
            f"one of the {self.events} events up to {self.position}"


class Checkpoint:
    def __init__(self, store: PositionStore, release: Callable[[SegmentFile], None],
                 acknowledged: Callable[[int], None] = lambda count: None,
                 indexed: Callable[[int], bool] = lambda segment_id: True) -> None:
        self.store = store
        self.release = release
        self.acknowledged = acknowledged  # told at each commit how many events Kafka acknowledged since
        self.indexed = indexed  # whether Cassandra has indexed a segment (it holds CDC data)
        self.state = store.load()
        self._queue: deque[_Item] = deque()
        self._unacknowledged = 0
        self._reported = 0  # acknowledgements not yet told
        self._finished: set[int] = set()  # read to their end in this run, not yet released
        self._offsets: dict[tuple[str, int], int] = {}  # (topic, partition) → last acknowledged offset
        self.failure: DeliveryFailed | None = None

    @property
    def committed(self) -> Position | None:
        return self.state.position

    @property
    def in_flight(self) -> int:
        """Events handed to the producer and not yet acknowledged."""
        return self._unacknowledged

    @property
    def queued_through(self) -> Position | None:
        """The newest position handed in (read, produced or finished), else the committed one."""
        return self._queue[-1].position if self._queue else self.state.position

    def start_after(self, segment: SegmentFile) -> Position | None:
        """Where reading `segment` resumes: after the newest position of it queued in this run (read and
        handed over, acknowledged or not), else after the committed position when it lies in it. A
        segment that left cdc_raw while read and came back so repeats nothing of this run."""
        segment_id = segment.segment_id
        queued = [item.position for item in self._queue if item.position.segment_id == segment_id]
        position = self.state.position
        if position is not None and position.segment_id == segment_id:
            queued.append(position)
        return max(queued, default=None)

    def produced(self, position: Position, events: int = 1) -> Callable:
        """Record `events` events handed to the producer, the last of them at `position`; returns the
        delivery callback they share. The run is acknowledged once each of its events is."""
        item = _Item(position, False, events=events)
        self._queue.append(item)
        self._unacknowledged += events

        def delivered(error, message) -> None:
            item.reports += 1
            if item.reports > item.events:
                self._fail(BrokenInvariant(f"more delivery reports than events for {item.described()}"))
            elif error is not None:
                self._fail(DeliveryFailed(f"{item.described()} not delivered: {error}"))
            else:
                self._acknowledged(item, message)

        return delivered

    def _acknowledged(self, item: _Item, message) -> None:
        partition = (message.topic(), message.partition())
        offset, previous = message.offset(), self._offsets.get(partition, -1)
        # One idempotent producer, in order per partition: every acknowledged event has an offset, and a
        # partition's offsets grow in the order the events were produced. Anything else means Kafka's log
        # does not hold what the reports claim (a report given twice among them).
        if offset is None or offset < 0 or offset <= previous:
            self._fail(BrokenInvariant(f"{item.described()} acknowledged at {partition[0]}[{partition[1]}] offset "
                                       f"{offset}, after offset {previous}"))
            return
        self._offsets[partition] = offset
        self._unacknowledged -= 1
        self._reported += 1
        if item.reports == item.events:
            item.acknowledged = True

    def _fail(self, failure: DeliveryFailed) -> None:
        if self.failure is None:
            self.failure = failure

    def read_through(self, position: Position) -> None:
        """Everything up to `position` has been produced or filtered."""
        tail = self._queue[-1] if self._queue else None
        if tail is not None and tail.events == 0 and tail.segment is None:
            tail.position = position  # one marker stands for a whole run of filtered changes
        else:
            self._queue.append(_Item(position, True))

    def finished(self, segment: SegmentFile) -> None:
        """The segment is read to its end: release it once everything before its end is in Kafka."""
        self._queue.append(_Item(Position.end_of(segment.segment_id), True, segment))
        self._finished.add(segment.segment_id)

    def releasing(self, segment_id: int) -> bool:
        """Whether the segment was read to its end and waits for its release."""
        return segment_id in self._finished or segment_id in self.state.done

    @property
    def releasing_ids(self) -> frozenset[int]:
        """Every segment `releasing` answers True for."""
        return frozenset(self._finished).union(self.state.done)

    def commit(self) -> Position | None:
        """Commit what Kafka has acknowledged, then release the segments it completes."""
        if self.failure is not None:
            raise self.failure
        reported, self._reported = self._reported, 0
        self.acknowledged(reported)
        position, completed, emitted = self.state.position, [], set()
        while self._queue and self._queue[0].acknowledged:
            item = self._queue.popleft()
            # A segment read again after it came back lies before the committed position: it only
            # completes (and is released), the position never moves back.
            if position is None or item.position > position:
                position = item.position
            if item.segment is not None:
                completed.append(item.segment)
            if item.events:
                emitted.add(item.position.segment_id)
        if position != self.state.position or completed:
            self._save(position=position, done=self.state.done + tuple(s.segment_id for s in completed),
                       cdc_data=self._holds_cdc_data(position, emitted))
        if completed:
            for segment in completed:
                self.release(segment)
                self._finished.discard(segment.segment_id)
            gone = {s.segment_id for s in completed}
            self._save(done=tuple(d for d in self.state.done if d not in gone))
        return self.state.position

    def _holds_cdc_data(self, position: Position | None, emitted: set[int]) -> bool:
        """Whether the segment of `position` holds CDC data: indexed, an event of it committed now (its index
        may lag), or so recorded for it already."""
        if position is None:
            return True
        segment_id, before = position.segment_id, self.state.position
        return (segment_id in emitted or self.indexed(segment_id)
                or (before is not None and before.segment_id == segment_id and self.state.cdc_data))

    def resume(self, segments: list[SegmentFile], skipped: Callable[[SegmentFile], None]) -> None:
        """At start: release the segments a crash left committed but not released, and with
        `skip_before` (start_from: latest) those older than where reading starts, unread."""
        for segment in segments:
            if segment.segment_id in self.state.done:
                self.release(segment)
            elif self.state.skip_before is not None and segment.segment_id < self.state.skip_before:
                skipped(segment)
        if self.state.done or self.state.skip_before is not None:
            self._save(done=(), skip_before=None)

    def _save(self, **changes) -> None:
        state = replace(self.state, **changes)
        self.store.save(state)
        self.state = state
