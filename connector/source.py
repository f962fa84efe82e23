"""`cdc_raw` as the connector's source: its segments are the partitions.

`list_segments` lists them in segment-id order (the order Cassandra wrote them); a `SegmentTail`
reads one from a position and, on every `poll`, whatever became durable since: up to the offset in
the segment's `_cdc.idx`, and to the end once the index says COMPLETED. After a Cassandra restart the
index of a replayed segment holds the file length and COMPLETED; reading then stops at the end of the
sync-marker chain.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from connector.commitlog import Change, Position, SegmentReader
from connector.commitlog.cdc_index import SUFFIX, CdcIndex, read_cdc_index
from connector.commitlog.descriptor import segment_id_from_name

if TYPE_CHECKING:
    from connector.schema.live import LiveSchema


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


def list_segments(cdc_raw: str | os.PathLike) -> list[SegmentFile]:
    """The segments in `cdc_raw`, oldest first."""
    found = []
    for path in Path(cdc_raw).glob("CommitLog-*.log"):
        segment_id = segment_id_from_name(path)
        if segment_id is not None:
            found.append(SegmentFile(path, segment_id))
    return sorted(found, key=lambda s: s.segment_id)


class SegmentTail:
    """One segment, followed as Cassandra makes more of it durable."""

    def __init__(self, segment: SegmentFile, schema: LiveSchema, after: Position | None = None) -> None:
        self.segment = segment
        self.schema = schema
        self.position = after  # resume point: everything up to it has been returned
        self.index: CdcIndex | None = None
        self._reader: SegmentReader | None = None
        self.finished = False  # COMPLETED and read to its end

    def poll(self) -> Iterator[Change]:
        """The changes made durable since the last poll, in order."""
        index = read_cdc_index(self.segment.index_path)
        if index is not None:  # None: missing, or caught while Cassandra rewrites it
            self.index = index
        if self.index is None or self.finished:
            return
        reader = self._open()
        reader.limit = self.index.offset
        reader.schema = self.schema.snapshot
        for change in reader.changes(self.position):
            self.position = change.position
            self.schema.observe(change)
            yield change
        checkpoint = reader.checkpoint
        if self.position is None or checkpoint > self.position:
            self.position = checkpoint
        # The index can say COMPLETED with the file length after a restart: the chain may end sooner.
        self.finished = self.index.completed

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
