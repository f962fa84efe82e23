"""`cdc_raw` as the connector's source: its segments are the partitions.

`list_segments` lists them in segment-id order (the order Cassandra wrote them); a `SegmentTail`
reads one from a position and, on every `poll`, whatever became durable since: up to the offset in
the segment's `_cdc.idx`, and to the end once the index says COMPLETED. After a Cassandra restart the
index of a replayed segment holds the file length and COMPLETED; reading then stops at the end of the
sync-marker chain.
"""
from __future__ import annotations

import mmap
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from connector.batch import Batch, Gathering
from connector.commitlog import Change, CommitLogError, Position, SegmentReader, Undecodable
from connector.commitlog.cdc_index import SUFFIX, CdcIndex, read_cdc_index
from connector.commitlog.descriptor import read_descriptor, segment_id_from_name
from connector.commitlog.sync import sections

if TYPE_CHECKING:
    from connector.events import EventWriter
    from connector.schema.live import LiveSchema

BATCH_EVENTS = 500  # events of the reference reader per batch: the loop sends between batches


@dataclass(frozen=True, slots=True)
class SegmentFile:
    path: Path
    segment_id: int

    @property
    def index_path(self) -> Path:
        return self.path.with_name(self.path.stem + SUFFIX)

    @property
    def name(self) -> str:
        return self.path.name


@dataclass(frozen=True, slots=True)
class Listing:
    """One look at cdc_raw."""

    segments: list[SegmentFile]  # oldest first
    indexed: frozenset[int]  # ids of the segments whose `_cdc.idx` exists (it may still be empty)
    orphans: dict[int, Path]  # segment id → its index, for indexes whose segment is gone

    def oldest_indexed(self) -> int | None:
        return next((s.segment_id for s in self.segments if s.segment_id in self.indexed), None)


def scan(cdc_raw: str | os.PathLike) -> Listing:
    """The segments of `cdc_raw` and their indexes, from one directory listing."""
    segments, indexes = {}, {}
    for path in Path(cdc_raw).iterdir():
        name = path.name
        if name.endswith(SUFFIX):
            segment_id = segment_id_from_name(path.with_name(name.removesuffix(SUFFIX) + ".log"))
            if segment_id is not None:
                indexes[segment_id] = path
        elif name.startswith("CommitLog-") and name.endswith(".log"):
            segment_id = segment_id_from_name(path)
            if segment_id is not None:
                segments[segment_id] = SegmentFile(path, segment_id)
    return Listing([segments[i] for i in sorted(segments)], frozenset(indexes.keys() & segments.keys()),
                   {i: indexes[i] for i in sorted(indexes.keys() - segments.keys())})


def list_segments(cdc_raw: str | os.PathLike) -> list[SegmentFile]:
    """The segments in `cdc_raw`, oldest first."""
    return scan(cdc_raw).segments


def next_segment(listing: Listing, done: Callable[[int], bool], blocked_from: int | None = None,
                 complete: frozenset[int] = frozenset()) -> SegmentFile | None:
    """The segment to read: the oldest not `done` (read to its end, or released), below `blocked_from`
    (a lost segment reading must not pass). A segment without an index is passed over when a later one
    has an index: it never held CDC data, as Cassandra syncs, and so indexes, segments oldest first; the
    newest one without an index is the one being written, read once its index appears. `complete`
    segments count as indexed (they came back without their index). A lost segment was indexed, so
    below it no segment without an index is the one being written."""
    indexed = listing.indexed | complete
    pending = [s for s in listing.segments if not done(s.segment_id)
               and (blocked_from is None or s.segment_id < blocked_from)]
    for i, segment in enumerate(pending):
        if segment.segment_id in indexed:
            return segment
        if blocked_from is None and not any(s.segment_id in indexed for s in pending[i + 1:]):
            return segment
    return None


def backlog(listing: Listing, reading: Position | None, done: Callable[[int], bool]) -> int:
    """Durable bytes in cdc_raw not read yet: what the indexes promise, less what was read."""
    behind = 0
    for segment in listing.segments:
        if segment.segment_id not in listing.indexed or done(segment.segment_id):
            continue
        index = read_cdc_index(segment.index_path)
        if index is None:
            continue
        read = reading.entry_offset if reading is not None and reading.segment_id == segment.segment_id else 0
        behind += max(0, index.offset - min(read, index.offset))
    return behind


def durable_end(cdc_raw: str | os.PathLike) -> Position | None:
    """After everything durable in cdc_raw now: the end of the sync-marker chain of the newest segment
    that has a synced section (the preallocated next segment has none), or None when none has."""
    for segment in reversed(list_segments(cdc_raw)):
        try:
            end = chain_end(segment.path)
        except (CommitLogError, OSError, ValueError):  # no header written yet, or released meanwhile
            continue
        if end is not None:
            return Position.after_section(segment.segment_id, end)
    return None


def chain_end(path: Path) -> int | None:
    """The end of a segment's sync-marker chain: where its last synced section ends (None: no section)."""
    with open(path, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        descriptor = read_descriptor(buf, str(path))
        return max((section.end for section in sections(buf, descriptor, str(path))), default=None)


class IndexProblem(Exception):
    """A segment's index says nothing new while later segments are indexed: Cassandra has moved on."""

    def __init__(self, segment: str, index: CdcIndex | None, position: Position | None, seconds: float) -> None:
        self.segment = segment
        self.kind = "stuck" if index is not None else "empty_or_unreadable"
        self.position = position.entry_offset if position is not None else None
        state = f"stuck at offset {index.offset}" if index is not None else "empty or unreadable"
        super().__init__(f"the index of {segment} is {state} for {seconds:.0f} s while later segments are indexed")


class SegmentTail:
    """One segment, followed as Cassandra makes more of it durable.

    `complete`: read it to the end of its sync-marker chain whatever its index says (a segment that came
    back to cdc_raw without its index, long finished by Cassandra)."""

    def __init__(self, segment: SegmentFile, schema: LiveSchema, after: Position | None = None,
                 complete: bool = False, clock: Callable[[], float] = time.monotonic) -> None:
        self.segment = segment
        self.clock = clock
        self.schema = schema
        self.position = after  # resume point: everything up to it has been returned
        self.index: CdcIndex | None = None
        self.complete = complete
        self.index_changed = clock()  # when the index last said something new
        self._reader: SegmentReader | None = None
        self.finished = False  # COMPLETED and read to its end

    def poll(self) -> Iterator[Change | Undecodable]:
        """The changes made durable since the last poll, in order, and the entries no schema decodes."""
        limit = self._durable()
        if limit is None:
            return
        yield from self._read(limit)
        # The index can say COMPLETED with the file length after a restart: the chain may end sooner.
        self.finished = self.index.completed

    def batches(self, writer: EventWriter) -> Iterator[Batch]:
        """What `poll` reads, as batches of events in log order (`writer` frames each change)."""
        limit = self._durable()
        if limit is None:
            return
        yield from self._batches(limit, writer)
        self.finished = self.index.completed

    def _durable(self) -> int | None:
        """The durable offset to read to, from the index; None while there is none, or once finished."""
        index = read_cdc_index(self.segment.index_path)
        if index is None and self.complete:
            index = CdcIndex(os.stat(self.segment.path).st_size, True)
        if index is not None:  # None: missing, or caught while Cassandra rewrites it
            if index != self.index:
                self.index_changed = self.clock()
            self.index = index
        if self.index is None or self.finished:
            return None
        return self.index.offset

    def _batches(self, limit: int, writer: EventWriter) -> Iterator[Batch]:
        gathering = Gathering(self.segment.segment_id)
        try:
            for item in self._read(limit):
                writer.add(item, self.segment.name, gathering)
                if len(gathering) >= BATCH_EVENTS:
                    yield gathering.take()
        except CommitLogError:
            batch = gathering.take()  # what came before the damage goes first
            if batch is not None:
                yield batch
            raise
        batch = gathering.take()
        if batch is not None:
            yield batch

    def _read(self, limit: int) -> Iterator[Change | Undecodable]:
        """The changes after `position` up to `limit`; `position` ends after the sections read."""
        reader = self._open()
        reader.limit = limit
        reader.schema = self.schema.snapshot
        for change in reader.changes(self.position):
            self.position = change.position
            if isinstance(change, Change):
                self.schema.observe(change)
            yield change
        self._read_through(reader.checkpoint)

    def _read_through(self, checkpoint: Position) -> None:
        if self.position is None or checkpoint > self.position:
            self.position = checkpoint

    def _open(self) -> SegmentReader:
        reader = self._reader
        if reader is not None and os.stat(self.segment.path).st_size != reader.size:
            reader.close()  # a compressed segment grows by appending; map it again
            reader = None
        if reader is None:
            reader = self._reader = SegmentReader(self.segment.path, self.schema.snapshot,
                                                  on_schema_miss=self.schema.on_schema_miss)
        return reader

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None
