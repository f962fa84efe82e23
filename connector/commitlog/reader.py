"""Read the changes of one commit log segment.

A segment is one partition of the source: a reader opens it (a finished file, or a live
one up to `limit`, the offset in its `_cdc.idx`) and yields Change objects in order,
from the start or from just after a given Position.
"""
from __future__ import annotations

import mmap
import os
from pathlib import Path
from typing import Callable, Iterator

from schemas.tables.model import SchemaSnapshot

from schemas.change import Change, Position, Undecodable
from .descriptor import Descriptor, read_descriptor
from .entry import entries
from .errors import SchemaMismatch, TruncatedSegment, UnknownTable
from .mutation import MutationDecoder
from .sync import Section, sections

# Called when a mutation names a table the snapshot lacks, or does not fit it (a column
# added since). Return a newer snapshot to decode the entry again with it, None to skip
# the entry, UNDECODABLE to hand the entry over whole (an `Undecodable` in the changes),
# or raise (e.g. the argument).
UNDECODABLE = "undecodable"
SchemaMissPolicy = Callable[[UnknownTable | SchemaMismatch], "SchemaSnapshot | str | None"]


def skip_unknown_tables(miss: UnknownTable | SchemaMismatch) -> None:
    """Policy of one-shot tools: skip entries of tables the snapshot lacks (dropped, or
    system tables of a test schema); a mutation that does not fit stays an error."""
    if isinstance(miss, SchemaMismatch):
        raise miss
    return None


def retry_schema(miss: UnknownTable | SchemaMismatch, policy: SchemaMissPolicy,
                 current: SchemaSnapshot) -> SchemaSnapshot | str | None:
    """The snapshot `policy` gives to decode a missed entry again, None to skip the entry or
    UNDECODABLE to hand it over whole; UNDECODABLE too when it gives the snapshot that missed (it
    cannot help); the miss itself when it gives one still lacking the table."""
    schema = policy(miss)
    if schema is None or schema is UNDECODABLE:
        return schema
    if schema is current:
        return UNDECODABLE
    if isinstance(miss, UnknownTable) and schema.table(miss.table_id) is None:
        raise miss
    return schema


class SegmentReader:
    """One segment, mapped read-only.

    `limit`: read only sections ending at or before this logical offset (the `_cdc.idx`
    value); None reads to the end of the marker chain. It may be raised between calls to
    `changes` to follow a live preallocated (mmap) segment; a compressed live segment grows
    by appending and must be reopened. Every table of the snapshot is decoded, CDC or not
    (filter on `change.table.cdc`); `on_schema_miss` decides what an unknown table id or
    a mutation that does not fit the snapshot means (default: raise). `schema` may be
    replaced between calls to `changes` when the cluster's schema changes.
    """

    def __init__(self, path: str | os.PathLike, schema: SchemaSnapshot, *, limit: int | None = None,
                 on_schema_miss: SchemaMissPolicy | None = None) -> None:
        self.path = Path(path)
        self.limit = limit
        self.on_schema_miss = on_schema_miss
        segment = str(self.path)
        with open(self.path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            if size == 0:
                raise TruncatedSegment(segment, 0, "empty file")
            # A read-only map: memory use stays at the segment's own pages, however large.
            self._buf = mmap.mmap(file.fileno(), size, access=mmap.ACCESS_READ)
        self.size = size  # bytes mapped; a compressed live segment that grew must be reopened
        try:
            self.descriptor: Descriptor = read_descriptor(self._buf, segment)
        except BaseException:
            self._buf.close()
            raise
        self._decoder = MutationDecoder(schema, segment, self.segment_id, self.descriptor.messaging_version)
        self.end = self.descriptor.header_length  # logical end of the last section read completely

    @property
    def segment_id(self) -> int:
        return self.descriptor.segment_id

    @property
    def checkpoint(self) -> Position:
        """A position after everything read so far, for resuming with `changes(after=...)`.

        It sorts after every change of the sections read and before those of later sections
        (`end` is a marker slot, where no entry starts).
        """
        return Position.after_section(self.segment_id, self.end)

    @property
    def schema(self) -> SchemaSnapshot:
        return self._decoder.schema

    @schema.setter
    def schema(self, schema: SchemaSnapshot) -> None:
        if schema is not self._decoder.schema:
            self._decoder = MutationDecoder(schema, str(self.path), self.segment_id,
                                            self.descriptor.messaging_version)

    def changes(self, after: Position | None = None) -> Iterator[Change]:
        """Changes in segment order; with `after`, only those positioned after it."""
        start = None
        if after is not None:
            if after.segment_id != self.segment_id:
                raise ValueError(f"position {after} is not in segment {self.segment_id}")
            start = after.entry_offset
        for section in sections(self._buf, self.descriptor, str(self.path), self.limit):
            end_of_segment = False
            if start is None or section.end > start:
                inside = start is not None and section.start <= start
                end_of_segment = yield from self._section_changes(section, start if inside else None, after)
            self.end = max(self.end, section.end)
            if end_of_segment:  # a zero entry size: nothing after it is data
                return

    def _section_changes(self, section: Section, start: int | None, after: Position | None):
        found = entries(section, str(self.path), start)
        while True:
            try:
                offset, mutation = next(found)
            except StopIteration as stop:
                return stop.value
            for change in self._decode(mutation, offset):
                if after is None or change.position > after:
                    yield change

    def _decode(self, mutation: bytes, offset: int) -> list[Change]:
        while True:
            try:
                return self._decoder.decode(mutation, offset)
            except (UnknownTable, SchemaMismatch) as miss:
                if self.on_schema_miss is None:
                    raise
                schema = retry_schema(miss, self.on_schema_miss, self.schema)
                if schema is None:
                    return []
                if schema is UNDECODABLE:
                    return [Undecodable(Position.whole_entry(self.segment_id, offset), mutation, miss)]
                self.schema = schema

    def close(self) -> None:
        self._buf.close()

    def __enter__(self) -> SegmentReader:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

