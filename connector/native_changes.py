"""A segment's changes as the native core decodes them, made into the reference reader's `Change`
objects: what `python -m connector dump --decoder native` prints, so the two decoders can be held to
each other line for line (`diff` of the two dumps is empty)."""
from __future__ import annotations

import struct
from pathlib import Path
from typing import Callable, Iterator

from connector import native_core
from schemas import _native
from schemas.avro.table import SourceInfo
from connector.commitlog import Bound, Cell, Change, ComplexColumn, DeletionTime, Liveness, Op, Position, \
    SchemaMismatch, UnknownTable
from connector.commitlog.layout import ColumnLayout, TableLayout
from schemas.cql import CqlTypeError
from schemas.tables import SchemaSnapshot

# What the reference decoder's value decoding raises for bytes that do not fit a type.
_MISFIT = (IndexError, KeyError, ValueError, ArithmeticError, struct.error, CqlTypeError)
_SOURCE = SourceInfo("ringtail", "", "")  # changes, not events: the source is not written


def _layouts(schema: SchemaSnapshot, messaging_version: int):
    """The native decoder of `schema`, and per table number its layout and columns by number."""
    decoder, tables = native_core.decoder(schema, messaging_version, _SOURCE)
    layouts = []
    for table in tables:
        layout = TableLayout(table, schema)
        names = [column.name.encode() for column in native_core.table_spec(table, schema).columns]
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


def _change(layouts, segment_id: int, offset: int, found: _native.RawChange) -> Change:
    layout, by_index = layouts[found.table]
    cells = {}
    for index, complex_, column_deletion, column_cells in found.columns:
        column = by_index[index]
        if complex_:
            cells[column.name] = ComplexColumn(
                None if column_deletion is None else DeletionTime(*column_deletion),
                [_cell(column, True, c) for c in column_cells])
        else:
            cells[column.name] = _cell(column, False, column_cells[0])
    start, end, key = found.range_start, found.range_end, found.partition_key
    return Change(
        Position(segment_id, offset, found.update_index, found.row_index), layout.table, Op(found.op),
        layout.decode_partition_key(key), _clustering(layout, found.clustering), cells,
        None if found.liveness is None else Liveness(*found.liveness),
        None if found.deletion is None else DeletionTime(*found.deletion), found.shadowable, found.is_static,
        None if start is None else Bound(_clustering(layout, start[0]), start[1]),
        None if end is None else Bound(_clustering(layout, end[0]), end[1]), partition_key_bytes=key)


def native_changes(path: str | Path, schema: SchemaSnapshot, limit: int | None = None,
                   on_schema_miss: Callable[[UnknownTable | SchemaMismatch], None] | None = None) -> Iterator[Change]:
    """Every change of the segment up to `limit`, read by the native core, in log order; damage is
    raised after the changes before it. An entry the schema does not fit raises, unless
    `on_schema_miss` returns for it (the entry is then skipped), as the reference reader's tools do."""
    segment = _native.Segment(Path(path))
    decoder, layouts = _layouts(schema, segment.messaging_version)
    entries, _, _, damage = segment.entries(limit)
    for offset, mutation in entries:
        try:
            found, bare_keys, miss = decoder.changes(mutation, str(path), offset)
            try:  # the reference decodes values as it reads an entry: a value that does not fit is a miss
                changes = [_change(layouts, segment.segment_id, offset, f) for f in found]
                for table, _, key in bare_keys:
                    layouts[table][0].decode_partition_key(key)
            except _MISFIT as exc:
                raise SchemaMismatch(str(path), offset, f"a value does not fit the schema: {exc}") from None
            if miss is not None:  # found after the values before it, which the reference reads first
                raise miss
        except (UnknownTable, SchemaMismatch) as miss:
            if on_schema_miss is None:
                raise
            on_schema_miss(miss)
            continue
        yield from changes
    if damage is not None:
        raise damage
