"""MySQL / MariaDB mirror: per base table `ks.t`, a table `ks`.`t` (database: the keyspace) holding what
`SELECT * FROM ks.t` returns, merged cell by cell by Cassandra's rules (`spark.mirror`), and beside it
`ks`.`t$state`, the cells with their timestamps that decide it.

A row is found by an invisible column, `ringtail$key` (a digest of its partition and clustering), so
`SELECT *` shows the base table's columns only and keys of any length are indexed. One transaction per
micro-batch: the ledger entry (a replay is skipped), each table's states and rows, the dead letters;
the tables are created or altered before it (MySQL commits DDL by itself). Writers of one mirror take
turns (`GET_LOCK` per table).

Columns in MySQL's types (`types`); a value MySQL cannot hold fails the micro-batch with a
`MirrorError` naming the row.
"""
from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from pyspark.sql import DataFrame

from schemas.runtime.access import CassandraCluster
from spark.mirror.engine import MirrorRow, StateKey, StoredState
from spark.mirror.layout import MirrorLayout
from spark.mirror.state import canonical
from spark.mirror.tables import Layouts, batch_changes, merge_batch, prepare_tables
from spark.mirror.values import row_values

from ..contract import MicroBatch, chunks
from .connection import connect_dsn
from .log import _SCHEMA, MySqlSink
from .types import CHUNK, mysql_column, quote


_KEY = "ringtail$key"


def digest(partition: bytes, row: str) -> bytes:
    """The key a row or a state is found by: partition and row key, any length, in 16 bytes."""
    return hashlib.blake2b(partition + b"\x00" + row.encode(), digest_size=16).digest()


class MySqlMirrorStore:
    """One table's mirror and states, in the micro-batch's transaction (`spark.mirror.engine.MirrorStore`)."""

    def __init__(self, conn: Any, layout: MirrorLayout) -> None:
        self.conn, self.layout = conn, layout
        types = {c.name: c.type for c in (*layout.key_columns, *layout.columns)}
        self.columns = [mysql_column(n, layout.cql(types[n])) for n in layout.names()]
        database = quote(layout.keyspace)
        self.table = f"{database}.{quote(layout.table)}"
        self.state = f"{database}.{quote(layout.table + '$state')}"

    def prepare(self) -> None:
        """Create the tables, or bring the mirror's columns to the base table's (DDL: outside the batch's
        transaction); take this table's turn."""
        layout = self.layout
        with self.conn.cursor() as cursor:
            cursor.execute("SELECT GET_LOCK(%s, 600)", (f"ringtail.mirror.{layout.qualified}"[:64],))
            cursor.execute(f"CREATE DATABASE IF NOT EXISTS {quote(layout.keyspace)}"
                           " DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin")
            body = ", ".join(f"{quote(c.name)} {c.type}" for c in self.columns)
            cursor.execute(f"CREATE TABLE IF NOT EXISTS {self.table} ({body}, {quote(_KEY)} BINARY(16) NOT NULL"
                           f" DEFAULT '' INVISIBLE, PRIMARY KEY ({quote(_KEY)}))"
                           " DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin")
            cursor.execute(f"CREATE TABLE IF NOT EXISTS {self.state} (k BINARY(16) NOT NULL PRIMARY KEY,"
                           " p BINARY(16) NOT NULL, `partition` LONGBLOB NOT NULL, `row` LONGTEXT NOT NULL,"
                           " state LONGTEXT NOT NULL, expires BIGINT, INDEX (p), INDEX (expires))"
                           " DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin")
            cursor.execute("SELECT column_name FROM information_schema.columns WHERE table_schema = %s"
                           " AND table_name = %s", (layout.keyspace, layout.table))
            have = {name for (name,) in cursor.fetchall()} - {_KEY}
            for column in self.columns:
                if column.name not in have:
                    cursor.execute(f"ALTER TABLE {self.table} ADD COLUMN {quote(column.name)} {column.type}")
            for name in have - {c.name for c in self.columns}:
                cursor.execute(f"ALTER TABLE {self.table} DROP COLUMN {quote(name)}")
        self.conn.commit()

    def _states(self, where: str, values: Sequence[Any]) -> dict[StateKey, str]:
        found: dict[StateKey, str] = {}
        with self.conn.cursor() as cursor:
            for chunk in chunks(values, CHUNK):
                cursor.execute(f"SELECT `partition`, `row`, state FROM {self.state} WHERE {where} IN"
                               f" ({', '.join(['%s'] * len(chunk))})", chunk)
                found.update(((bytes(p), r), s) for p, r, s in cursor.fetchall())
        return found

    def load(self, keys: Collection[StateKey]) -> dict[StateKey, str]:
        return self._states("k", [digest(p, r) for p, r in keys])

    def load_partitions(self, partitions: Collection[bytes]) -> dict[StateKey, str]:
        return self._states("p", [digest(p, "") for p in partitions])

    def due(self, now: int) -> list[StateKey]:
        with self.conn.cursor() as cursor:
            cursor.execute(f"SELECT `partition`, `row` FROM {self.state} WHERE expires <= %s", (now,))
            return [(bytes(p), r) for p, r in cursor.fetchall()]

    def save(self, states: list[StoredState], rows: list[MirrorRow]) -> None:
        with self.conn.cursor() as cursor:
            gone = [digest(s.partition, s.row) for s in states if s.state is None]
            for chunk in chunks(gone, CHUNK):
                cursor.execute(f"DELETE FROM {self.state} WHERE k IN ({', '.join(['%s'] * len(chunk))})", chunk)
            kept = [(digest(s.partition, s.row), digest(s.partition, ""), s.partition, s.row, s.state, s.expires)
                    for s in states if s.state is not None]
            for chunk in chunks(kept, CHUNK):
                cursor.executemany(f"INSERT INTO {self.state} (k, p, `partition`, `row`, state, expires) VALUES"
                                   " (%s, %s, %s, %s, %s, %s) ON DUPLICATE KEY UPDATE state = VALUES(state),"
                                   " expires = VALUES(expires)", chunk)
            keys = [self._key(r) for r in rows]
            for chunk in chunks(keys, CHUNK):
                cursor.execute(f"DELETE FROM {self.table} WHERE {quote(_KEY)} IN ({', '.join(['%s'] * len(chunk))})",
                               chunk)
            names = ", ".join(quote(c.name) for c in self.columns) + ", " + quote(_KEY)
            written = [row_values(self.layout, self.columns, r, "MySQL") + [k]
                       for r, k in zip(rows, keys) if r.values is not None]
            for chunk in chunks(written, CHUNK):
                cursor.executemany(f"INSERT INTO {self.table} ({names}) VALUES"
                                   f" ({', '.join(['%s'] * (len(self.columns) + 1))})", chunk)

    def _key(self, row: MirrorRow) -> bytes:
        return digest(row.partition, canonical([row.key[c.name] for c in self.layout.clustering]))


class MySqlMirrorSink(MySqlSink):
    """The MySQL sink in mirror layout: mirrors instead of the log (dead letters and the ledger in the DSN's
    database, as the log's sink keeps them)."""

    # Its rows are written from the driver, in one transaction, so the job reads the batch first.
    reads_batch_whole = False

    def write_parts(self, batch: MicroBatch) -> None:
        self._write_on_driver(batch)

    merges_cells = True

    def __init__(self, dsn: str, app_id: str = "ringtail",
                 cluster: CassandraCluster = CassandraCluster(("127.0.0.1",)), chunk: int = 20_000) -> None:
        super().__init__(dsn, app_id)
        self.layouts = Layouts(cluster)
        self.chunk = chunk

    def _schema_statements(self) -> tuple[str, ...]:
        return (*_SCHEMA, "CREATE TABLE IF NOT EXISTS mirrors (keyspace VARCHAR(255) NOT NULL,"
                          " `table` VARCHAR(255) NOT NULL, PRIMARY KEY (keyspace, `table`))")

    def _before_batch(self, conn: Any, rows: DataFrame) -> Any:
        batch = batch_changes(rows)
        return batch, self._tables(conn, batch, batch)

    def purge(self) -> None:
        """Remove what has expired from every mirror of this sink."""
        conn = connect_dsn(self.dsn)
        try:
            with conn.cursor() as cursor:
                cursor.execute("SELECT keyspace, `table` FROM mirrors")
                known = [tuple(k) for k in cursor.fetchall()]
            merge_batch(self._tables(conn, known), {}, self.chunk, purge=True)
            conn.commit()
        finally:
            conn.close()

    def _tables(self, conn: Any, names: Iterable[tuple[str, str]], batch: dict | None = None) -> list:
        """Each table to merge into, its tables created or altered (DDL: before the transaction)."""
        def store_of(layout: MirrorLayout) -> MySqlMirrorStore:
            store = MySqlMirrorStore(conn, layout)
            store.prepare()
            with conn.cursor() as cursor:
                cursor.execute("INSERT IGNORE INTO mirrors VALUES (%s, %s)", (layout.keyspace, layout.table))
            conn.commit()
            return store

        return prepare_tables(self.layouts, names, store_of, batch)

    def _write_rows(self, cursor: Any, rows: DataFrame, prepared: Any) -> int:
        batch, tables = prepared
        return merge_batch(tables, batch, self.chunk).changes

    def close(self) -> None:
        self.layouts.close()
