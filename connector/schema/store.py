"""The connector's local copy of the schema history (JSON), so segments decode after a restart before
Cassandra answers, and after a table is dropped."""
from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

from schemas.runtime.durable import write_atomically

from .history import FlagChange, RetainedTable, SchemaHistory
from schemas.tables.model import ClusteringOrder, Column, ColumnKind, DroppedColumn, SchemaSnapshot, Table, UserType

FORMAT = 1


class SchemaStoreError(ValueError):
    """The stored schema cannot be read."""


def save_history(path: str | os.PathLike, history: SchemaHistory) -> None:
    document = {
        "format": FORMAT,
        "version": str(history.version) if history.version else None,
        "tables": [_table_json(t) for t in history.current.tables.values()],
        "user_types": [_type_json(u) for types in history.current.user_types.values() for u in types.values()],
        "cdc_flags": {str(i): [[f.at, f.cdc] for f in flags] for i, flags in history.cdc_flags.items()},
        "retained": [{"table": _table_json(r.table), "until_segment": r.until_segment,
                      "user_types": [_type_json(u) for u in r.user_types.values()]}
                     for r in history.retained.values()],
    }
    write_atomically(path, json.dumps(document, separators=(",", ":")).encode())


def load_history(path: str | os.PathLike) -> SchemaHistory | None:
    """The stored history, or None when there is none yet."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        document = json.loads(path.read_bytes())
        if document.get("format") != FORMAT:
            raise SchemaStoreError(f"{path}: unknown format {document.get('format')!r}")
        current = SchemaSnapshot.of(map(_table, document["tables"]), map(_type, document["user_types"]))
        flags = {uuid.UUID(i): tuple(FlagChange(at, bool(cdc)) for at, cdc in changes)
                 for i, changes in document["cdc_flags"].items()}
        retained = {}
        for kept in document["retained"]:
            table = _table(kept["table"])
            retained[table.id] = RetainedTable(table, kept["until_segment"],
                                               {u.name: u for u in map(_type, kept["user_types"])})
        version = uuid.UUID(document["version"]) if document["version"] else None
    except (ValueError, KeyError, TypeError) as exc:
        raise SchemaStoreError(f"cannot read the stored schema {path}: {exc}") from exc
    return SchemaHistory(current, version, flags, retained)


def _table_json(table: Table) -> dict[str, Any]:
    return {
        "keyspace": table.keyspace, "name": table.name, "id": str(table.id), "cdc": table.cdc,
        "altered_at": table.altered_at,
        "columns": [[c.name, c.type, c.kind.value, c.position, c.clustering_order.value] for c in table.columns],
        "dropped_columns": [[d.name, d.type, d.dropped_time, d.kind.value] for d in table.dropped_columns.values()],
    }


def _table(data: dict[str, Any]) -> Table:
    columns = tuple(Column(name, type_, ColumnKind(kind), position, ClusteringOrder(order))
                    for name, type_, kind, position, order in data["columns"])
    dropped = {name: DroppedColumn(name, type_, time, ColumnKind(kind)) for name, type_, time, kind in
               data["dropped_columns"]}
    return Table(data["keyspace"], data["name"], uuid.UUID(data["id"]), columns, data["cdc"], dropped,
                 data["altered_at"])


def _type_json(udt: UserType) -> list:
    return [udt.keyspace, udt.name, list(udt.field_names), list(udt.field_types)]


def _type(data: list) -> UserType:
    keyspace, name, field_names, field_types = data
    return UserType(keyspace, name, tuple(field_names), tuple(field_types))
