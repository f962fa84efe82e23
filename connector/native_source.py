"""A segment read by the native core: its changes come as framed events, made in one pass from the
segment's bytes without a Python object per change. Entries the native path does not take — those
holding a change of `system_schema.tables` (the live schema learns cdc flags from them) or of a table
whose schema the registry rejects (its changes become dead letters) — are handed back and read by
the reference reader, in log order, so the reader's guarantees are the same on both paths."""
from __future__ import annotations

import time
import uuid
from dataclasses import replace
from typing import Callable, Iterator, NamedTuple

from connector import native_core
from connector.batch import Batch, Gathering
from connector.commitlog import UNDECODABLE, Position, SchemaMismatch, Undecodable, UnknownTable
from connector.commitlog.mutation import MutationDecoder
from connector.commitlog.reader import retry_schema
from connector.events import EventWriter
from connector.source import SegmentFile, SegmentTail
from schemas import _native
from schemas.avro import ChangeSerializer, SchemaRejected
from schemas.cql import CqlTypeError
from schemas.tables.model import SchemaSnapshot, Table

PASS_EVENTS = 5_000  # events per native pass: bounds memory, lets the producer send in between


class _Decoder(NamedTuple):
    native: _native.Decoder
    reference: MutationDecoder
    snapshot: SchemaSnapshot
    ids: list[uuid.UUID]  # by table number
    topics: list[str | None]  # by table number: the emitting tables'


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
        ids, topics, rejected, unreadable = {}, {}, set(), set()
        for table_id in emitting:
            table = snapshot.tables[table_id]
            try:
                subjects = self.serializer.subjects(table)
            except SchemaRejected as error:  # its changes go the reference path, to the dead letters
                self.on_rejected(table, error)
                rejected.add(table_id)
                continue
            except CqlTypeError:  # a type the snapshot lacks: left out, as `native_core.decoder` leaves such tables
                unreadable.add(table_id)
                continue
            ids[table_id] = subjects.key_id, subjects.value_id
            topics[table_id] = subjects.topic
        readable = snapshot if not unreadable else SchemaSnapshot(
            {i: t for i, t in snapshot.tables.items() if i not in unreadable}, snapshot.user_types)
        native, tables = native_core.decoder(readable, messaging_version, self.serializer.encoder.source, ids,
                                             handed_off | rejected)
        made = _Decoder(native, MutationDecoder(snapshot, segment, segment_id, messaging_version), snapshot,
                        [t.id for t in tables], [topics.get(t.id) for t in tables])
        self._made = {key: made}  # one schema version at a time
        return made


class NativeSegmentTail(SegmentTail):
    """A SegmentTail whose batches the native core makes, a pass at a time; the entries it hands back
    and those no schema decodes go through the reference reader and `EventWriter`, in log order."""

    def __init__(self, segment: SegmentFile, schema, decoders: NativeDecoders, after: Position | None = None,
                 complete: bool = False, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(segment, schema, after, complete, clock)
        self.decoders = decoders
        self._segment: _native.Segment | None = None

    def _batches(self, limit: int, writer: EventWriter) -> Iterator[Batch]:
        segment = self._open_native()
        segment_id, name = segment.segment_id, self.segment.name
        gathering = Gathering(segment_id)
        after = self.position
        start = None if after is None else after.entry_offset
        skip = None
        while True:
            decoder = self.decoders.decoder(self.schema.snapshot, str(self.segment.path), segment_id,
                                            segment.messaging_version)
            read = segment.events(decoder.native, name, time.time_ns() // 1_000_000, limit=limit, start=start,
                                  skip=skip, max_events=PASS_EVENTS)
            error, hand_off = read.error, read.hand_off
            batch = self._batch(segment_id, read, decoder)
            if after is not None:  # resuming inside an entry: its rows up to `after` were delivered
                batch = batch.after(after)
                if len(batch):  # past `after`: later passes need no look
                    after = None
            if batch.read:
                if batch.through is not None:
                    self._read_through(batch.through)
                yield self._captured(batch, decoder)
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
                            writer.add(change, name, gathering)
                    if (handed := gathering.take()) is not None:
                        yield handed
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
                        writer.add(entry, name, gathering)
                        yield gathering.take()
                start, skip = error.position, error.position if retry is None or retry is UNDECODABLE else None
                continue
            if read.resume is not None:
                start, skip = read.resume, None
                continue
            self._read_through(Position.after_section(segment_id, read.end))
            return

    @staticmethod
    def _batch(segment_id: int, read: _native.Pass, decoder: _Decoder) -> Batch:
        events = read.events
        batch = Batch(segment_id, events.offsets, events.updates, events.rows, events.tables, events.write_times,
                      events.keys, events.values, decoder.topics, read=len(events) + read.skipped,
                      left_out=read.skipped)
        return replace(batch, through=batch.position(-1)) if len(batch) else batch

    def _captured(self, batch: Batch, decoder: _Decoder) -> Batch:
        """The batch without the changes written while their table had no CDC (the native core makes an
        event of every change of a table that ever had it)."""
        captures, ids = self.schema.history.captures, decoder.ids
        return batch.keeping([i for i, (table, written) in enumerate(zip(batch.tables, batch.write_times))
                              if captures(ids[table], written)])

    def _mutation(self, segment: _native.Segment, offset: int, limit: int) -> bytes:
        """The mutation bytes of the entry at `offset` (a rare path: an entry no schema decodes)."""
        found, mutation = segment.entries(limit, offset).entries[0]
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
