"""What the commit log's own schema rows tell of tables no snapshot saw.

A CREATE TABLE writes, in one mutation of `system_schema`, the table's row of `tables` (its id and
`cdc` flag) and a row of `columns` per column; an ALTER that adds columns writes their rows; a CREATE
or ALTER TYPE writes the type's row of `types`. A table created and dropped between two refreshes of
the live schema is known only from them: `LoggedTables` keeps those rows for tables the schema does not
know (and the types read), and builds the table when a change of it is read.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from connector.commitlog import Cell, Change

from schemas.tables.model import ClusteringOrder, Column, ColumnKind, Table, UserType

MAX_TABLES = 1_000  # tables kept, the oldest forgotten first: DDL has no bound, memory has


@dataclass
class FlagRow:
    cdc: bool
    at: int  # µs: the write time of the `cdc` cell


@dataclass
class _Rows:
    entry: tuple[int, int]  # (segment id, entry offset) of the last row: one DDL statement's rows
    table_id: uuid.UUID | None = None
    flag: FlagRow | None = None
    columns: dict[str, tuple[Column, tuple[int, int]]] = field(default_factory=dict)  # name → (column, entry)


class LoggedTables:
    def __init__(self, max_tables: int = MAX_TABLES) -> None:
        self.max_tables = max_tables
        self._rows: dict[tuple[str, str], _Rows] = {}  # (keyspace, table name) → its rows, oldest first
        self._types: dict[tuple[str, str], UserType] = {}  # (keyspace, type name) → its last row, oldest first

    def type_row(self, udt: UserType) -> None:
        """A row of `system_schema.types`: a user type as its CREATE or last ALTER left it."""
        key = (udt.keyspace, udt.name)
        self._types.pop(key, None)
        self._types[key] = udt
        while len(self._types) > self.max_tables:
            del self._types[next(iter(self._types))]

    def types_of(self, keyspace: str) -> dict[str, UserType]:
        """The user types of `keyspace` whose rows were read, by name."""
        return {name: udt for (ks, name), udt in self._types.items() if ks == keyspace}

    def table_row(self, change: Change, table_id: uuid.UUID, flag: FlagRow) -> None:
        """A row of `system_schema.tables` of a table the schema does not know."""
        rows = self._rows_of(change)
        if rows.table_id not in (None, table_id):  # dropped and created again: only this statement's columns
            rows.columns = {name: kept for name, kept in rows.columns.items() if kept[1] == rows.entry}
        rows.table_id, rows.flag = table_id, flag

    def column_row(self, change: Change, column: Column) -> None:
        """A row of `system_schema.columns` of a table the schema does not know by its name."""
        rows = self._rows_of(change)
        rows.columns[column.name] = column, rows.entry

    def table(self, table_id: uuid.UUID) -> tuple[Table, FlagRow] | None:
        """The table with this id as its rows describe it and its `cdc` flag; None when unknown, or
        when its rows do not make a table (its CREATE was before the log read)."""
        for (keyspace, name), rows in self._rows.items():
            if rows.table_id == table_id and rows.flag is not None:
                try:
                    table = Table(keyspace, name, table_id, tuple(c for c, _ in rows.columns.values()),
                                  rows.flag.cdc)
                except ValueError:
                    return None
                return table, rows.flag
        return None

    def _rows_of(self, change: Change) -> _Rows:
        key = (change.partition_key[0], change.clustering[0])
        entry = (change.position.segment_id, change.position.entry_offset)
        rows = self._rows.pop(key, None) or _Rows(entry)
        rows.entry = entry
        self._rows[key] = rows  # the newest last
        while len(self._rows) > self.max_tables:
            del self._rows[next(iter(self._rows))]
        return rows


def column_row(change: Change) -> Column | None:
    """The column a row of `system_schema.columns` defines; None for a deletion or a partial row."""
    cells = {name: cell.value for name, cell in change.cells.items() if isinstance(cell, Cell)}
    if len(change.clustering) != 2 or any(cells.get(name) is None for name in ("kind", "type")):
        return None
    kind = ColumnKind(cells["kind"])
    keyed = kind in (ColumnKind.PARTITION_KEY, ColumnKind.CLUSTERING)
    return Column(change.clustering[1], cells["type"], kind, cells.get("position", -1) if keyed else -1,
                  ClusteringOrder(cells.get("clustering_order") or "none"))


def type_row(change: Change) -> UserType | None:
    """The user type a row of `system_schema.types` defines; None for a deletion or a partial row."""
    names, types = change.cells.get("field_names"), change.cells.get("field_types")
    if not (isinstance(names, Cell) and isinstance(types, Cell)) or names.value is None or types.value is None:
        return None
    return UserType(change.partition_key[0], change.clustering[0], tuple(names.value), tuple(types.value))
