"""Load a SchemaSnapshot from a live cluster's `system_schema` tables through cassandra-driver.

Every table is loaded, CDC or not: one mutation can carry a CDC table beside non-CDC tables, and its
partition updates cannot be stepped over without decoding them. Materialized views are tables too
(their writes are in the commit log under the view's id).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from schemas.runtime.access import CassandraSecurity

from .model import ClusteringOrder, Column, ColumnKind, DroppedColumn, SchemaSnapshot, Table, UserType

_QUERIES = {
    "tables": "SELECT keyspace_name, table_name, id, cdc, writetime(cdc) AS altered_at FROM system_schema.tables",
    "views": "SELECT keyspace_name, view_name, id FROM system_schema.views",
    "columns": "SELECT keyspace_name, table_name, column_name, kind, position, clustering_order, type "
               "FROM system_schema.columns",
    # As a number: some system tables carry dropped times past what a Python datetime holds.
    "dropped_columns": "SELECT keyspace_name, table_name, column_name, toUnixTimestamp(dropped_time) AS dropped_ms,"
                       " kind, type FROM system_schema.dropped_columns",
    "types": "SELECT keyspace_name, type_name, field_names, field_types FROM system_schema.types",
}


_READS = 6  # at most, while DDL goes on; the last read is taken then (a torn one fails to build, or a miss refreshes)


def _column(row: Any) -> Column:
    kind = ColumnKind(row.kind)
    keyed = kind in (ColumnKind.PARTITION_KEY, ColumnKind.CLUSTERING)
    return Column(
        name=row.column_name,
        type=row.type,
        kind=kind,
        position=row.position if keyed else -1,
        clustering_order=ClusteringOrder(row.clustering_order),
    )


def snapshot_from_rows(rows: dict[str, list[Any]]) -> SchemaSnapshot:
    """Build a snapshot from the rows of the `_QUERIES` (named tuples with those columns)."""
    columns: dict[tuple[str, str], list[Column]] = defaultdict(list)
    for row in rows["columns"]:
        columns[(row.keyspace_name, row.table_name)].append(_column(row))
    dropped: dict[tuple[str, str], dict[str, DroppedColumn]] = defaultdict(dict)
    for row in rows["dropped_columns"]:
        dropped[(row.keyspace_name, row.table_name)][row.column_name] = DroppedColumn(
            name=row.column_name,
            type=row.type,
            # system_schema keeps milliseconds; the model (like cell timestamps) uses microseconds.
            dropped_time=row.dropped_ms * 1000,
            kind=ColumnKind(row.kind) if row.kind else ColumnKind.REGULAR,
        )
    tables = [
        Table(keyspace=ks, name=name, id=table_id, columns=tuple(columns[(ks, name)]), cdc=bool(cdc),
              dropped_columns=dropped.get((ks, name), {}), altered_at=altered_at)
        for ks, name, table_id, cdc, altered_at in (
            *((r.keyspace_name, r.table_name, r.id, r.cdc, r.altered_at) for r in rows["tables"]),
            *((r.keyspace_name, r.view_name, r.id, False, None) for r in rows["views"]),
        )
    ]
    user_types = [
        UserType(keyspace=r.keyspace_name, name=r.type_name, field_names=tuple(r.field_names or ()),
                 field_types=tuple(r.field_types or ()))
        for r in rows["types"]
    ]
    return SchemaSnapshot.of(tables, user_types)


def read_table(session: Any, keyspace: str, table: str) -> tuple[Table | None, Mapping[str, UserType]]:
    """One table (None when it does not exist) and its keyspace's UDTs by name: the snapshot's queries
    narrowed to them."""
    one_table = " WHERE keyspace_name = %s AND table_name = %s"
    rows = {name: list(session.execute(_QUERIES[name] + one_table, (keyspace, table)))
            for name in ("tables", "columns", "dropped_columns")}
    rows["views"] = []
    rows["types"] = list(session.execute(_QUERIES["types"] + " WHERE keyspace_name = %s", (keyspace,)))
    snapshot = snapshot_from_rows(rows)
    return snapshot.table_by_name(keyspace, table), snapshot.types_of(keyspace)


def read_snapshot(session: Any) -> tuple[uuid.UUID | None, SchemaSnapshot]:
    """The cluster's schema version and snapshot, read through an open driver session.

    A DDL statement reaches system_schema table by table (a dropped column leaves `columns` before it
    enters `dropped_columns`, a new table's row can be there before its columns), and the schema
    version changes only after: one read can catch a statement half applied, with the version before
    and after it the same. So the schema is read until two reads in a row agree, version and rows.
    """
    last = None
    for _ in range(_READS):
        version = _schema_version(session)
        rows = {name: list(session.execute(query)) for name, query in _QUERIES.items()}
        if last == (version, rows):
            break
        last = version, rows
    return version, snapshot_from_rows(rows)


def _schema_version(session: Any) -> uuid.UUID | None:
    row = session.execute("SELECT schema_version FROM system.local").one()
    return row.schema_version if row else None


def load_schema(host: str, port: int = 9042, security: CassandraSecurity | None = None) -> SchemaSnapshot:
    """Connect, read the schema, disconnect (for one-shot tools such as `dump --cassandra`)."""
    from schemas.runtime.session import connect

    cluster, session = connect([host], port, security)
    try:
        return read_snapshot(session)[1]
    finally:
        cluster.shutdown()
