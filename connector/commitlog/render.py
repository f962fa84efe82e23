"""Render changes as JSON-compatible dicts (used by `python -m connector dump`).

Values follow cqlsh conventions: blobs as 0x-hex, uuid/timeuuid/inet/decimal/varint/
date/time/duration as strings, timestamps as ISO-8601 UTC with milliseconds
("2023-11-06T15:44:39.123Z"). Write timestamps (cell, liveness, deletion) stay integers
in microseconds; local deletion and expiration times stay integers in seconds.
"""
from __future__ import annotations

from typing import Any

from schemas.tables.model import SchemaSnapshot, Table

from schemas.change import Bound, Cell, Change, ComplexColumn, DeletionTime
from .layout import ColumnLayout, TableLayout


class ChangeRenderer:
    def __init__(self, schema: SchemaSnapshot) -> None:
        self.schema = schema
        self._layouts: dict[Table, TableLayout] = {}

    def _layout(self, table: Table) -> TableLayout:
        layout = self._layouts.get(table)
        if layout is None:
            layout = self._layouts[table] = TableLayout(table, self.schema)
        return layout

    def render(self, change: Change, segment: str) -> dict[str, Any]:
        layout = self._layout(change.table)
        table = change.table
        out: dict[str, Any] = {
            "segment": segment,
            "position": change.position._asdict(),
            "keyspace": table.keyspace,
            "table": table.name,
            "op": str(change.op),
            "partition_key": {c.name: _json(t, v) for c, t, v in
                              zip(table.partition_key, layout.partition_key, change.partition_key)},
            "clustering": _clustering_json(layout, change.clustering),
        }
        if change.static:
            out["static"] = True
        liveness = change.liveness
        if liveness is not None:
            out["liveness"] = {"timestamp": liveness.timestamp}
            if liveness.ttl:
                out["liveness"].update(ttl=liveness.ttl, expires_at=liveness.expires_at)
        out["cells"] = {name: _cell_json(layout.columns[name.encode()], cell) for name, cell in change.cells.items()}
        if change.deletion is not None:
            out["deletion"] = _deletion_json(change.deletion)
            if change.shadowable:
                out["deletion"]["shadowable"] = True
        if change.range_end is not None:
            out["range"] = {"start": _bound_json(layout, change.range_start),
                            "end": _bound_json(layout, change.range_end)}
        return out


def _json(cql_type, value: Any) -> Any:
    return None if value is None else cql_type.to_json(value)


def _clustering_json(layout: TableLayout, values: tuple) -> list:
    return [_json(c.type, v) for c, v in zip(layout.clustering, values)]


def _bound_json(layout: TableLayout, bound: Bound | None) -> dict | None:
    if bound is None:  # the range starts before the first clustering of the partition
        return None
    return {"clustering": _clustering_json(layout, bound.clustering), "inclusive": bound.inclusive}


def _deletion_json(deletion: DeletionTime) -> dict:
    return {"timestamp": deletion.marked_for_delete_at, "local_deletion_time": deletion.local_deletion_time}


def _cell_json(column: ColumnLayout, cell: Cell | ComplexColumn) -> dict:
    if isinstance(cell, ComplexColumn):
        return _complex_json(column, cell)
    out: dict[str, Any] = {"value": _json(column.type, cell.value), "timestamp": cell.timestamp}
    _add_expiry_or_deletion(out, cell)
    if column.dropped_time is not None:
        out["dropped"] = True
    return out


def _add_expiry_or_deletion(out: dict, cell: Cell) -> None:
    if cell.tombstone:
        out["deletion"] = {"timestamp": cell.timestamp, "local_deletion_time": cell.local_deletion_time}
    elif cell.ttl:
        out["ttl"] = cell.ttl
        out["expires_at"] = cell.local_deletion_time


def _complex_json(column: ColumnLayout, cells: ComplexColumn) -> dict:
    """Live elements merged into one value, plus the removed element keys."""
    cql_type = column.type
    live = [c for c in cells.cells if not c.tombstone]
    out: dict[str, Any] = {
        "value": cql_type.to_json(cql_type.assemble((c.path, c.value) for c in live)) if live else None,
        "timestamp": max((c.timestamp for c in cells.cells), default=None),
    }
    ttls = [c for c in live if c.ttl]
    if ttls:
        _add_expiry_or_deletion(out, ttls[0])
    removed = [cql_type.path_json(c.path) for c in cells.cells if c.tombstone]
    if removed:
        out["removed"] = removed
    if cells.deletion is not None:
        out["deletion"] = _deletion_json(cells.deletion)
    if column.dropped_time is not None:
        out["dropped"] = True
    return out
