"""A segment read by the native core: its changes come as framed events, made in one pass from the
segment's bytes without a Python object per change. Entries the native path does not take — those
holding a change of `system_schema.tables` (the live schema learns cdc flags from them) or of a table
whose schema the registry rejects (its changes become dead letters) — are handed back and read by
the reference reader, in log order, so the reader's guarantees are the same on both paths."""
from __future__ import annotations

import time
from typing import Callable, Iterator, NamedTuple

from connector import native_core
from connector.commitlog import UNDECODABLE, Change, Position, SchemaMismatch, Undecodable, UnknownTable
from connector.commitlog.mutation import MutationDecoder
from connector.commitlog.reader import retry_schema
from connector.source import SegmentFile, SegmentTail
from schemas import _native
from schemas.avro import ChangeSerializer, SchemaRejected
from schemas.tables.model import SchemaSnapshot, Table

PASS_EVENTS = 5_000  # events per native pass: bounds memory, lets the producer send in between


class NativeBatch(NamedTuple):
    """The events of one native pass, in log order, as the core makes them: (entry offset, table
    index, partition update, row, write time in µs, key, value); no Python object per event beyond
    that tuple, so a pass goes to the producer at the speed of the producer."""

    segment_id: int
    events: list[tuple]
    tables: list[Table]  # by table index
    topics: list[str | None]  # by table index

    def position(self, i: int) -> Position:
        offset, _, update, row, *_ = self.events[i]
        return Position(self.segment_id, offset, update, row)


class _Decoder(NamedTuple):
    native: _native.Decoder
    reference: MutationDecoder
    snapshot: SchemaSnapshot
    tables: list[Table]
    topics: list[str | None]


class NativeDecoders:
    """The native decoder of each schema version: the tables that can hold CDC data emit events
    (their subjects registered first, as the Python path does on a table's first change), the
    tables the reference path must see are handed off, the others skipped."""

    def __init__(self, serializer: ChangeSerializer, captured: Callable[[Table], bool],
                 handed_off: Callable[[Table], bool], on_rejected: Callable[[Table, SchemaRejected], None]) -> None:
        self.serializer = serializer
        self.captured = captured  # the table had cdc = true at some time
        self.handed_off = handed_off
        self.on_rejected = on_rejected
        self._made: dict[tuple, _Decoder] = {}

    def decoder(self, snapshot: SchemaSnapshot, segment: str, segment_id: int, messaging_version: int) -> _Decoder:
        emitting = frozenset(t.id for t in snapshot.tables.values() if self.captured(t) and not self.handed_off(t))
        handed_off = frozenset(t.id for t in snapshot.tables.values() if self.handed_off(t))
        key = (id(snapshot), segment_id, messaging_version, emitting, handed_off)
        made = self._made.get(key)
        if made is not None and made.snapshot is snapshot:
            return made
        self.serializer.encoder.schema = snapshot
        ids, topics, rejected = {}, {}, set()
        for table_id in emitting:
            table = snapshot.tables[table_id]
            try:
                subjects = self.serializer.subjects(table)
            except SchemaRejected as error:  # its changes go the reference path, to the dead letters
                self.on_rejected(table, error)
                rejected.add(table_id)
                continue
            ids[table_id] = subjects.key_id, subjects.value_id
            topics[table_id] = subjects.topic
        native, tables = native_core.decoder(snapshot, messaging_version, self.serializer.encoder.source, ids,
                                             handed_off | rejected)
        made = _Decoder(native, MutationDecoder(snapshot, segment, segment_id, messaging_version), snapshot,
                        tables, [topics.get(t.id) for t in tables])
        self._made = {key: made}  # one schema version at a time
        return made


class NativeSegmentTail(SegmentTail):
    """A SegmentTail whose `poll` yields a NativeBatch per pass, the Changes of the entries handed
    back, and the entries no schema decodes."""

    def __init__(self, segment: SegmentFile, schema, decoders: NativeDecoders, after: Position | None = None,
                 complete: bool = False, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(segment, schema, after, complete, clock)
        self.decoders = decoders
        self._segment: _native.Segment | None = None

    def _read(self, limit: int) -> Iterator[NativeBatch | Change]:
        segment = self._open_native()
        segment_id, name = segment.segment_id, self.segment.name
        after = self.position
        start = None if after is None else after.entry_offset
        skip = None
        while True:
            decoder = self.decoders.decoder(self.schema.snapshot, str(self.segment.path), segment_id,
                                            segment.messaging_version)
            read = segment.events(decoder.native, name, time.time_ns() // 1_000_000, limit=limit, start=start,
                                  skip=skip, max_events=PASS_EVENTS)
            events, resume, error, hand_off = read.events, read.resume, read.error, read.hand_off
            self.skipped += read.skipped
            batch = NativeBatch(segment_id, events, decoder.tables, decoder.topics)
            if after is not None:  # resuming inside an entry: its rows up to `after` were delivered
                first = 0
                while first < len(events) and batch.position(first) <= after:
                    first += 1
                if first:
                    batch = batch._replace(events=events[first:])
                if first < len(events):  # past `after`: later passes need no look
                    after = None
            if batch.events:
                self.position = batch.position(-1)
                yield batch
            if hand_off is not None:
                offset, mutation = hand_off
                try:
                    changes = decoder.reference.decode(mutation, offset)
                except (UnknownTable, SchemaMismatch) as miss:
                    error = miss
                else:
                    for change in changes:
                        if after is None or change.position > after:
                            self.position = change.position
                            self.schema.observe(change)
                            yield change
                    start = skip = offset
                    continue
            if error is not None:
                if not isinstance(error, (UnknownTable, SchemaMismatch)):
                    raise error  # damage: everything before it was yielded
                # Refresh and retry, as the reference reader does; None: skip the entry; UNDECODABLE:
                # hand it over whole, then skip it.
                retry = retry_schema(error, self.schema.on_schema_miss, decoder.snapshot)
                if retry is UNDECODABLE:
                    entry = Undecodable(Position.whole_entry(segment_id, error.position),
                                        self._mutation(segment, error.position, limit), error)
                    if after is None or entry.position > after:
                        self.position = entry.position
                        yield entry
                start, skip = error.position, error.position if retry is None or retry is UNDECODABLE else None
                continue
            if resume is not None:
                start, skip = resume, None
                continue
            self._read_through(Position.after_section(segment_id, read.end))
            return

    def _mutation(self, segment: _native.Segment, offset: int, limit: int) -> bytes:
        """The mutation bytes of the entry at `offset` (a rare path: an entry no schema decodes)."""
        entries, *_ = segment.entries(limit, offset)
        found, mutation = entries[0]
        if found != offset:
            raise RuntimeError(f"{self.segment.name}: the entry at {offset} was read at {found}")
        return mutation

    def _open_native(self) -> _native.Segment:
        segment = self._segment
        if segment is not None and self.segment.path.stat().st_size != segment.size:
            segment = None  # a compressed segment grows by appending; map it again
        if segment is None:
            segment = self._segment = _native.Segment(self.segment.path)
        return segment

    def close(self) -> None:
        self._segment = None
        super().close()
