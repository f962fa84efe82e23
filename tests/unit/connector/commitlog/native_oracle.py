"""The two decoders side by side, so tests can hold them to each other: the same changes at the same
positions with the same values (`connector.native_changes`), the same framed events."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from fastavro import parse_schema

from connector import native_core
from schemas import _native
from schemas.avro.table import SourceInfo, TableEncoder
from schemas.avro.wire import frame
from connector.commitlog import Change, CommitLogError, SchemaMismatch, SegmentReader, UnknownTable, \
    skip_unknown_tables
from connector.native_changes import native_changes as changes
from schemas.change import write_time
from schemas.tables import SchemaSnapshot

SOURCE = SourceInfo("ringtail", "test-cluster", "node-1", version="1.2.3")
TS_MS = 1_763_000_000_123  # the processing time of the events compared


def native_changes(path: Path, schema: SchemaSnapshot, limit: int | None = None,
                   skip_unknown: bool = False) -> list[Change]:
    """Every change of the segment read by the native core; entries of tables the schema lacks are
    skipped with `skip_unknown`, else raise as the reference reader's do."""
    return list(changes(path, schema, limit, skip_unknown_tables if skip_unknown else None))


def reference_changes(path: Path, schema: SchemaSnapshot, limit: int | None = None,
                      on_schema_miss=None) -> Iterator[Change]:
    """The reference reader's changes of the segment, as `connector.native_changes.native_changes` yields
    the native core's (the same arguments): up to an error, the changes before it."""
    with SegmentReader(path, schema, limit=limit, on_schema_miss=on_schema_miss) as reader:
        yield from reader.changes()


def outcome(read, *args, **options):
    """A read's changes, or its error's class and position."""
    try:
        return read(*args, **options)
    except CommitLogError as error:
        return type(error).__name__, error.position


def schema_ids(schema: SchemaSnapshot) -> dict:
    return {table_id: (100 + 2 * i, 101 + 2 * i) for i, table_id in enumerate(schema.tables)}


def reference_events(path: Path, schema: SchemaSnapshot, limit: int | None = None, skip_unknown: bool = False):
    """(position, write time, key, value) of each change, by the Python reader and writer."""
    ids = schema_ids(schema)
    encoders, events = {}, []
    with SegmentReader(path, schema, limit=limit,
                       on_schema_miss=skip_unknown_tables if skip_unknown else None) as reader:
        for change in reader.changes():
            table = change.table
            if table.id not in encoders:
                encoder = TableEncoder(table, schema.types_of(table.keyspace))
                encoders[table.id] = encoder, parse_schema(encoder.key_schema), parse_schema(encoder.value_schema)
            encoder, key_schema, value_schema = encoders[table.id]
            try:
                key, value = encoder.encode(change, SOURCE, str(path), TS_MS)
                key_id, value_id = ids[table.id]
                framed = frame(key_id, key_schema, key), frame(value_id, value_schema, value)
            except (ValueError, TypeError, OverflowError) as exc:  # fastavro refusing a datum
                raise SchemaMismatch(str(path), change.position.entry_offset, str(exc)) from None
            events.append((tuple(change.position), write_time(change), *framed))
    return events


def native_events(path: Path, schema: SchemaSnapshot, limit: int | None = None, skip_unknown: bool = False):
    """The same, by the native core, one entry at a time."""
    segment = _native.Segment(path)
    decoder, _ = native_core.decoder(schema, segment.messaging_version, SOURCE, schema_ids(schema))
    events = []
    read = segment.entries(limit)
    if read.error is not None:
        raise read.error
    for offset, mutation in read.entries:
        try:
            found = decoder.events(mutation, str(path), segment.segment_id, offset, path.name, TS_MS)
        except UnknownTable:
            if skip_unknown:
                continue
            raise
        events += event_rows(segment.segment_id, found)
    return events


def event_rows(segment_id: int, events: _native.Events) -> list[tuple]:
    """The native core's event columns as `reference_events` gives each event."""
    return [((segment_id, offset, update, row), written, key, value) for offset, update, row, written, key, value
            in zip(events.offsets, events.updates, events.rows, events.write_times, events.keys, events.values)]
