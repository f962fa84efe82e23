"""PostgreSQL's typed log: per base table `ks.t`, a log `"ks"."t_scylla_cdc_log"` (schema: the keyspace)
in ScyllaDB's log layout (`log_table.LogLayout`, counters too), each column in its PostgreSQL type
(`types`), keyed by (`cdc$stream_id`, `cdc$time`, `cdc$batch_seq_no`).

It gains the columns its base table gains and keeps those it drops: each column's CQL type is its
comment, so the log stays writable after a drop (and after its base table is gone). Values of a column
the log never had and the base table no longer lists are kept as JSON text in `cdc$other_columns`
(jsonb); rows of a dropped table that never had a typed log go to the sink's `cdc_log`. The driver makes
each log ready (DDL); the executors write the rows, a part per partition in one transaction with its
entry in the ledger of parts (`parts`); a row already there (a replica's copy) is left as it is. A value that
does not fit its column fails the batch with a `TypedLogError` naming the change.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from schemas.cql import parse_type
from schemas.runtime.access import CassandraCluster
from spark.mirror.tables import Layouts
from spark.mirror.values import StoreColumn

from ..log_table import BATCH_SEQ_NO, LOG_SUFFIX, STREAM_ID, TIME, LogLayout, LogRowValues
from .log import Ledger, PostgresSink, ident
from .types import copy_staged, pg_column
from ..typed_log import OTHER_COLUMNS
from ..contract import MicroBatch, of_tables
from ..parts import write_each_part
from ..typed_sql import TypedPart, sql_log_layout, typed_layouts, typed_part_rows, typed_row


def _other(value: Any) -> Any:
    from psycopg.types.json import Jsonb

    return Jsonb(value)


class PostgresTypedLog:
    """One base table's typed log, in the micro-batch's transaction."""

    def __init__(self, conn: Any, layout: LogLayout) -> None:
        self.conn, self.layout = conn, layout
        udts = {u.name: u for u in layout.user_types}
        self.types = layout.columns()
        self.columns = [pg_column(n, parse_type(t, udts, layout.keyspace)) for n, t in self.types.items()]
        self.columns.append(StoreColumn(OTHER_COLUMNS, "jsonb", _other))
        self.table = f"{ident(layout.keyspace)}.{ident(layout.table)}"
        self.values = LogRowValues(layout)

    def prepare(self) -> None:
        """Create the log, or add the columns it lacks; each column's CQL type in its comment."""
        conn, layout = self.conn, self.layout
        # Concurrent CREATE … IF NOT EXISTS can still collide in the catalog; writers of one log take turns.
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"ringtail.typed.{layout.qualified_table}",))
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {ident(layout.keyspace)}")
        body = ", ".join(f"{ident(c.name)} {c.type}" for c in self.columns)
        key = ", ".join(ident(n) for n in (STREAM_ID, TIME, BATCH_SEQ_NO))
        conn.execute(f"CREATE TABLE IF NOT EXISTS {self.table} ({body}, PRIMARY KEY ({key}))")
        have = set(logged_types(conn, layout.keyspace, layout.table)) | {OTHER_COLUMNS}
        for column in self.columns:
            if column.name not in have:
                conn.execute(f"ALTER TABLE {self.table} ADD COLUMN IF NOT EXISTS {ident(column.name)} {column.type}")
                conn.execute(f"COMMENT ON COLUMN {self.table}.{ident(column.name)} IS"
                             f" {_literal(self.types[column.name])}")

    def write(self, rows: Sequence[dict]) -> int:
        """Insert `rows` (LOG_ROW's, of this base table); how many were new."""
        staging = ident(f"ringtail$typed${self.layout.keyspace}.{self.layout.table}"[:63])
        names = [c.name for c in self.columns]
        copy_staged(self.conn, staging, self.table, names, (self._row(r) for r in rows))
        columns = ", ".join(map(ident, names))
        cursor = self.conn.execute(f"INSERT INTO {self.table} ({columns}) SELECT {columns} FROM {staging}"
                                   " ON CONFLICT DO NOTHING")
        return cursor.rowcount

    def _row(self, row: dict) -> list[Any]:
        return typed_row(self.values, self.columns, row, "PostgreSQL")


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def logged_types(conn: Any, keyspace: str, table: str) -> dict[str, str]:
    """The columns of an existing log table and the CQL type each was made for (its comment); {} when the
    table does not exist."""
    rows = conn.execute("SELECT a.attname, col_description(a.attrelid, a.attnum) FROM pg_attribute a"
                        " WHERE a.attrelid = to_regclass(%s) AND a.attnum > 0 AND NOT a.attisdropped",
                        (f"{ident(keyspace)}.{ident(table)}",)).fetchall()
    return {name: comment for name, comment in rows if comment is not None}


@dataclass(frozen=True)
class TypedParts:
    """Writes a batch's rows into their typed logs from the executors, a part per partition (step 2 of
    `parts`, run by `write_each_part`), the logs made ready by the driver; picklable."""

    dsn: str = field(repr=False)
    ledger: Ledger
    batch_id: int
    layouts: dict[tuple[str, str], LogLayout]

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> int | None:
        part = TypedPart.of(batches)
        if part is None:
            return None
        return self.ledger.write_part(self.dsn, self.batch_id, part.name, lambda conn: sum(
            PostgresTypedLog(conn, self.layouts[table]).write(table_rows) for table, table_rows in part.tables()))


class PostgresTypedSink(PostgresSink):
    """The PostgreSQL sink in typed layout: a typed log per base table (dead letters, the ledger, the
    generations and the logs of tables without one as the log's sink keeps them, in `schema`)."""

    def __init__(self, dsn: str, schema: str = "ringtail", app_id: str = "ringtail",
                 cluster: CassandraCluster = CassandraCluster(("127.0.0.1",))) -> None:
        super().__init__(dsn, schema, app_id)
        self.tables = Layouts(cluster)

    def write_parts(self, batch: MicroBatch) -> None:
        with self._connect() as conn:
            def layout_of(keyspace: str, table: str) -> LogLayout | None:
                layout = sql_log_layout(self.tables, keyspace, table, logged_types(conn, keyspace, table + LOG_SUFFIX))
                if layout is not None:
                    with conn.transaction():
                        PostgresTypedLog(conn, layout).prepare()
                return layout

            layouts, untyped = typed_layouts(batch.rows, layout_of)
        if layouts:
            parts = TypedParts(self.dsn, self.ledger, batch.id, layouts)
            write_each_part(typed_part_rows(batch.rows, layouts), parts)
        if untyped:
            super().write_parts(dataclasses.replace(batch, rows=of_tables(batch.rows, untyped)))

    def close(self) -> None:
        self.tables.close()
