"""MySQL's typed log: per base table `ks.t`, a log `ks`.`t_scylla_cdc_log` (database: the keyspace) in
ScyllaDB's log layout (`log_table.LogLayout`, counters too), each column in its MySQL type
(`types`; the stream id as VARBINARY(16)), keyed by (`cdc$stream_id`, `cdc$time`,
`cdc$batch_seq_no`).

As PostgreSQL's typed log (`postgres.typed`): each column's CQL type is its comment, so the log keeps the
columns its base table drops and gains those it gains; values of columns it never had go to
`cdc$other_columns` (JSON); rows of a dropped table that never had one go to `cdc_log`. The driver creates
and alters the tables (MySQL commits DDL by itself); the executors write the rows, a part per partition
in one transaction with its entry in the ledger of parts (`parts`); a row already there (a replica's
copy) is left as it is.
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from schemas.cql import parse_type
from schemas.runtime.access import CassandraCluster
from spark.mirror.tables import Layouts
from spark.mirror.values import StoreColumn

from ..contract import MicroBatch
from ..log_table import BATCH_SEQ_NO, LOG_SUFFIX, STREAM_ID, TIME, LogLayout, LogRowValues
from .connection import connect_dsn
from .log import MySqlSink, write_part
from .load import Target, load_rows
from .types import binary, mysql_column, quote
from ..typed_log import OTHER_COLUMNS, TypedLogError, change_name
from ..contract import of_tables
from ..parts import write_each_part
from ..typed_sql import TypedPart, sql_log_layout, typed_layouts, typed_part_rows, typed_row


def _stream_id(text: str) -> bytes:
    return bytes.fromhex(text[2:])


class MySqlTypedLog:
    """One base table's typed log."""

    def __init__(self, conn: Any, layout: LogLayout) -> None:
        self.conn, self.layout = conn, layout
        udts = {u.name: u for u in layout.user_types}
        self.types = layout.columns()
        self.columns = [StoreColumn(n, "VARBINARY(16)", _stream_id) if n == STREAM_ID
                        else mysql_column(n, parse_type(t, udts, layout.keyspace)) for n, t in self.types.items()]
        self.columns.append(StoreColumn(OTHER_COLUMNS, "JSON", lambda value: json.dumps(value, ensure_ascii=False)))
        self.table = f"{quote(layout.keyspace)}.{quote(layout.table)}"
        self.values = LogRowValues(layout)
        self.target = Target(self.table, tuple(c.name for c in self.columns), binary(self.columns))

    def prepare(self) -> None:
        """Create the log, or add the columns it lacks; each column's CQL type in its comment."""
        layout = self.layout
        with self.conn.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE IF NOT EXISTS {quote(layout.keyspace)}"
                           " DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin")
            body = ", ".join(f"{quote(c.name)} {c.type}{self._comment(c.name)}" for c in self.columns)
            key = ", ".join(quote(n) for n in (STREAM_ID, TIME, BATCH_SEQ_NO))
            cursor.execute(f"CREATE TABLE IF NOT EXISTS {self.table} ({body}, PRIMARY KEY ({key}))"
                           " DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin")
            cursor.execute("SELECT column_name FROM information_schema.columns WHERE table_schema = %s"
                           " AND table_name = %s", (layout.keyspace, layout.table))
            have = {name for (name,) in cursor.fetchall()}
            for column in self.columns:
                if column.name not in have:
                    cursor.execute(f"ALTER TABLE {self.table} ADD COLUMN {quote(column.name)} {column.type}"
                                   f"{self._comment(column.name)}")
        self.conn.commit()

    def _comment(self, name: str) -> str:
        text = self.types.get(name)
        return "" if text is None else " COMMENT '" + text.replace("\\", "\\\\").replace("'", "''") + "'"

    def write(self, cursor: Any, rows: Sequence[dict]) -> int:
        """Insert `rows` (LOG_ROW's, of this base table) in the open transaction; how many were new (a row
        already there, a replica's copy or a replay, is left as it is)."""
        return load_rows(self.conn, cursor, self.target, [self._row(r) for r in rows],
                         lambda i: change_name(self.layout, rows[i]), TypedLogError)

    def _row(self, row: dict) -> list[Any]:
        return typed_row(self.values, self.columns, row, "MySQL")


def logged_types(cursor: Any, keyspace: str, table: str) -> dict[str, str]:
    """The columns of an existing log table and the CQL type each was made for (its comment)."""
    cursor.execute("SELECT column_name, column_comment FROM information_schema.columns WHERE table_schema = %s"
                   " AND table_name = %s", (keyspace, table))
    return {name: comment for name, comment in cursor.fetchall() if comment}


@dataclass(frozen=True)
class TypedParts:
    """Writes a batch's rows into their typed logs from the executors, a part per partition (step 2 of
    `parts`, run by `write_each_part`), the logs made ready by the driver; picklable."""

    dsn: str = field(repr=False)
    app_id: str
    batch_id: int
    layouts: dict[tuple[str, str], LogLayout]

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> int | None:
        part = TypedPart.of(batches)
        if part is None:
            return None
        return write_part(self.dsn, self.app_id, self.batch_id, part.name, lambda conn, cursor: sum(
            MySqlTypedLog(conn, self.layouts[table]).write(cursor, table_rows) for table, table_rows in part.tables()),
                          local_infile=True)


class MySqlTypedSink(MySqlSink):
    """The MySQL sink in typed layout: a typed log per base table (dead letters, the ledger, the generations
    and the logs of tables without one as the log's sink keeps them, in the DSN's database)."""

    def __init__(self, dsn: str, app_id: str = "ringtail",
                 cluster: CassandraCluster = CassandraCluster(("127.0.0.1",))) -> None:
        super().__init__(dsn, app_id)
        self.tables = Layouts(cluster)

    def write_parts(self, batch: MicroBatch) -> None:
        conn = connect_dsn(self.dsn)
        try:
            def layout_of(keyspace: str, table: str) -> LogLayout | None:
                with conn.cursor() as cursor:
                    layout = sql_log_layout(self.tables, keyspace, table,
                                            logged_types(cursor, keyspace, table + LOG_SUFFIX))
                if layout is not None:
                    MySqlTypedLog(conn, layout).prepare()
                return layout

            layouts, untyped = typed_layouts(batch.rows, layout_of)
        finally:
            conn.close()
        if layouts:
            parts = TypedParts(self.dsn, self.app_id, batch.id, layouts)
            write_each_part(typed_part_rows(batch.rows, layouts), parts)
        if untyped:
            super().write_parts(dataclasses.replace(batch, rows=of_tables(batch.rows, untyped)))

    def close(self) -> None:
        self.tables.close()
