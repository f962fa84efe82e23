"""The native core's changes of a segment, made into the reference decoder's Change objects, so
tests can hold the two decoders to each other: same changes, same positions, same values."""
from __future__ import annotations

import struct
from pathlib import Path

from fastavro import parse_schema

from connector import _native, native_core
from connector.avro.table import SourceInfo, TableEncoder
from connector.avro.wire import frame
from connector.commitlog import Bound, Cell, Change, CommitLogError, ComplexColumn, DeletionTime, Liveness, Op, \
    Position, SchemaMismatch, SegmentReader, UnknownTable, skip_unknown_tables
from connector.commitlog.change import write_time
from connector.commitlog.layout import ColumnLayout, TableLayout
from connector.cql import CqlTypeError
from connector.schema import SchemaSnapshot

SOURCE = SourceInfo("ringtail", "test-cluster", "node-1", version="1.2.3")
TS_MS = 1_763_000_000_123  # the processing time of the events compared
# What the reference decoder's value decoding raises for bytes that do not fit a type.
_MISFIT = (IndexError, KeyError, ValueError, ArithmeticError, struct.error, CqlTypeError)


def _decoder(schema: SchemaSnapshot, messaging_version: int):
    """The native decoder of `schema`, and per table number its layout and columns by number."""
    decoder, tables = native_core.decoder(schema, messaging_version, SOURCE)
    layouts = []
    for table in tables:
        layout = TableLayout(table, schema)
        names = [name for name, _, _ in native_core.table_spec(table, schema)[7]]
        layouts.append((layout, [layout.columns[name] for name in names]))
    return decoder, layouts


def _value(column: ColumnLayout, raw):
    if raw is None:
        return None
    return column.decode(raw) if raw else column.empty


def _clustering(layout: TableLayout, values) -> tuple:
    return tuple(_value(column, raw) for column, raw in zip(layout.clustering, values))


def _cell(column: ColumnLayout, complex_: bool, cell) -> Cell:
    timestamp, ttl, ldt, tombstone, path, raw = cell
    if complex_:
        if tombstone:
            return Cell(None, timestamp, ttl, ldt, True, column.type.decode_path(path))
        key, value = column.type.decode_cell(path, raw)
        return Cell(value, timestamp, ttl, ldt, False, key)
    return Cell(None if tombstone else _value(column, raw), timestamp, ttl, ldt, tombstone)


def _change(layouts, segment_id: int, offset: int, found) -> Change:
    table, update, row, op, key, clustering, liveness, deletion, flags, (start, end), columns = found
    layout, by_index = layouts[table]
    cells = {}
    for index, complex_, column_deletion, column_cells in columns:
        column = by_index[index]
        if complex_:
            cells[column.name] = ComplexColumn(
                None if column_deletion is None else DeletionTime(*column_deletion),
                [_cell(column, True, c) for c in column_cells])
        else:
            cells[column.name] = _cell(column, False, column_cells[0])
    return Change(
        Position(segment_id, offset, update, row), layout.table, Op(op), layout.decode_partition_key(key),
        _clustering(layout, clustering), cells, None if liveness is None else Liveness(*liveness),
        None if deletion is None else DeletionTime(*deletion), flags[0], flags[1],
        None if start is None else Bound(_clustering(layout, start[0]), start[1]),
        None if end is None else Bound(_clustering(layout, end[0]), end[1]), partition_key_bytes=key)


def native_changes(path: Path, schema: SchemaSnapshot, limit: int | None = None,
                   skip_unknown: bool = False) -> list[Change]:
    """Every change of the segment read by the native core; entries of tables the schema lacks are
    skipped with `skip_unknown`, else raise as the reference reader's do."""
    segment = _native.Segment(path)
    decoder, layouts = _decoder(schema, segment.messaging_version)
    changes = []
    for offset, mutation in segment.entries(limit)[0]:
        try:
            found = decoder.changes(mutation, str(path), offset)
        except UnknownTable:
            if skip_unknown:
                continue
            raise
        try:  # the reference decodes values as it reads an entry: a value that does not fit is a mismatch
            changes += [_change(layouts, segment.segment_id, offset, f) for f in found]
        except _MISFIT as exc:
            raise SchemaMismatch(str(path), offset, f"a value does not fit the schema: {exc}") from None
    return changes


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
    for offset, mutation in segment.entries(limit)[0]:
        try:
            found = decoder.events(mutation, str(path), segment.segment_id, offset, path.name, TS_MS)
        except UnknownTable:
            if skip_unknown:
                continue
            raise
        events += [((segment.segment_id, offset, update, row), written, key, value)
                   for _, _, update, row, written, key, value in found]
    return events
