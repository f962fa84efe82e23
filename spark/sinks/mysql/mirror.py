"""MySQL / MariaDB mirror: per base table `ks.t`, a table `ks`.`t` (database: the keyspace) holding what
`SELECT * FROM ks.t` returns, merged cell by cell by Cassandra's rules (`spark.mirror`), and beside it
`ks`.`t$state`, the cells with their timestamps that decide it.

A row is found by an invisible column, `ringtail$key` (a digest of its partition and clustering), so
`SELECT *` shows the base table's columns only and keys of any length are indexed. A micro-batch is
merged on the executors (`mirror_parts`): the driver creates or alters the tables first (MySQL commits
DDL by itself); each task merges its buckets' changes and loads their states and rows (`load`: each
replacing the one of its key) in one transaction with its part in the ledger (a part committed once is
skipped); the dead letters after them. Writers of one mirror take turns per bucket: a task locks its
(table, bucket) rows of `mirror_buckets` first.

Columns in MySQL's types (`types`); a value MySQL cannot hold fails the micro-batch with a
`MirrorError` naming the row.
"""
from __future__ import annotations

import functools
import hashlib
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from schemas.runtime.access import CassandraCluster
from spark.mirror.engine import MirrorRow, StateKey, StoredState
from spark.mirror.layout import MirrorError, MirrorLayout
from spark.mirror.state import RECORD, canonical
from spark.mirror.tables import MERGE_CHUNK, Layouts, merge_batch, prepare_tables
from spark.mirror.values import row_name, row_values

from ..contract import MicroBatch, chunks
from ..mirror_parts import BUCKETS, MirrorPart, MirrorParts, merge_on_executors
from .connection import connect_dsn
from .load import Target, load_rows
from .log import _SCHEMA, MySqlSink, write_part
from .types import CHUNK, binary, mysql_column, quote


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
        self.state_target = Target(self.state, ("k", "p", "partition", "row", "state", "expires"),
                                   frozenset(("k", "p", "partition")), replace=True)
        self.row_target = Target(self.table, (*(c.name for c in self.columns), _KEY),
                                 binary(self.columns) | {_KEY}, replace=True)

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
        return self._states("p", [digest(p, RECORD) for p in partitions])

    def due(self, now: int) -> list[StateKey]:
        with self.conn.cursor() as cursor:
            cursor.execute(f"SELECT `partition`, `row` FROM {self.state} WHERE expires <= %s", (now,))
            return [(bytes(p), r) for p, r in cursor.fetchall()]

    def save(self, states: list[StoredState], rows: list[MirrorRow]) -> None:
        layout = self.layout
        with self.conn.cursor() as cursor:
            gone = [digest(s.partition, s.row) for s in states if s.state is None]
            self._delete(cursor, self.state, "k", gone)
            records = {p: digest(p, RECORD) for p in {s.partition for s in states}}  # a partition's own key
            kept = [(records[s.partition] if s.row == RECORD else digest(s.partition, s.row), records[s.partition],
                     s.partition, s.row, s.state, s.expires) for s in states if s.state is not None]
            load_rows(self.conn, cursor, self.state_target, kept,
                      lambda i: f"{layout.qualified} state of row {kept[i][3]}", MirrorError)
            # A row written replaces the one of its key; a row no longer in `SELECT *` is removed.
            self._delete(cursor, self.table, _KEY, [self._key(r) for r in rows if r.values is None])
            shown = [r for r in rows if r.values is not None]
            load_rows(self.conn, cursor, self.row_target,
                      [row_values(layout, self.columns, r, "MySQL") + [self._key(r)] for r in shown],
                      lambda i: row_name(layout, shown[i]), MirrorError)

    @staticmethod
    def _delete(cursor: Any, table: str, key: str, keys: list[bytes]) -> None:
        for chunk in chunks(keys, CHUNK):
            cursor.execute(f"DELETE FROM {table} WHERE {quote(key)} IN ({', '.join(['%s'] * len(chunk))})", chunk)

    def _key(self, row: MirrorRow) -> bytes:
        return digest(row.partition, canonical([row.key[c.name] for c in self.layout.clustering]))


def lock_buckets(cursor: Any, layout: MirrorLayout, buckets: Sequence[int]) -> None:
    """Take the table's turn in these buckets, in the open transaction, in ascending order: a bucket at a time,
    each by its whole key. InnoDB reads `bucket IN (…)` by the key's prefix (keyspace, table) and locks every
    bucket it passes, so the tasks of one batch, in buckets of their own, took turns for the whole table."""
    for bucket in sorted(buckets):
        cursor.execute("SELECT bucket FROM mirror_buckets WHERE keyspace = %s AND `table` = %s AND bucket = %s"
                       " FOR UPDATE", (layout.keyspace, layout.table, bucket))


@dataclass(frozen=True)
class MySqlMirrorParts(MirrorParts):
    """`MirrorParts` into MySQL: each part in a transaction of its own (`log.write_part`), reading committed
    rows only."""

    dsn: str = field(repr=False)
    app_id: str

    def write(self, part: MirrorPart) -> int:
        return write_part(self.dsn, self.app_id, self.batch_id, part.name, functools.partial(self._merge, part),
                          local_infile=True, read_committed=True)

    def _merge(self, part: MirrorPart, conn: Any, cursor: Any) -> int:
        return part.merge(self.layouts, functools.partial(lock_buckets, cursor),
                          functools.partial(MySqlMirrorStore, conn), self.chunk)


class MySqlMirrorSink(MySqlSink):
    """The MySQL sink in mirror layout: mirrors instead of the log (dead letters and the ledger in the DSN's
    database, as the log's sink keeps them)."""

    merges_cells = True
    # Its write reads the batch twice (which tables, then the changes), so the job reads it whole first.
    reads_batch_whole = False

    def __init__(self, dsn: str, app_id: str = "ringtail",
                 cluster: CassandraCluster = CassandraCluster(("127.0.0.1",)), chunk: int = MERGE_CHUNK) -> None:
        super().__init__(dsn, app_id)
        self.layouts = Layouts(cluster)
        self.chunk = chunk

    def _schema_statements(self) -> tuple[str, ...]:
        return (*_SCHEMA, "CREATE TABLE IF NOT EXISTS mirrors (keyspace VARCHAR(255) NOT NULL,"
                          " `table` VARCHAR(255) NOT NULL, PRIMARY KEY (keyspace, `table`))",
                "CREATE TABLE IF NOT EXISTS mirror_buckets (keyspace VARCHAR(255) NOT NULL, `table` VARCHAR(255)"
                " NOT NULL, bucket INT NOT NULL, PRIMARY KEY (keyspace, `table`, bucket))")

    def write_parts(self, batch: MicroBatch) -> None:
        merge_on_executors(batch.rows, functools.partial(self.parts_of, batch.id))

    def parts_of(self, batch_id: int, counts: Mapping[tuple[str, str], int]) -> MySqlMirrorParts:
        """The tables of a batch holding `counts` changes per table made ready; what merges its parts."""
        conn = connect_dsn(self.dsn)
        try:
            tables = self._tables(conn, counts, counts)
        finally:
            conn.close()  # and so its locks taken for the DDL
        return MySqlMirrorParts(batch_id, tuple(layout for layout, _ in tables), self.chunk, self.dsn, self.app_id)

    def purge(self) -> None:
        """Remove what has expired from every mirror of this sink (on the driver: a few states)."""
        conn = connect_dsn(self.dsn, local_infile=True)
        try:
            with conn.cursor() as cursor:
                cursor.execute("SELECT keyspace, `table` FROM mirrors")
                known = [tuple(k) for k in cursor.fetchall()]
            tables = self._tables(conn, known)
            with conn.cursor() as cursor:
                for layout, _ in tables:
                    lock_buckets(cursor, layout, range(BUCKETS))
            merge_batch(tables, {}, purge=True)
            conn.commit()
        finally:
            conn.close()

    def _tables(self, conn: Any, names: Iterable[tuple[str, str]], counts: Mapping[tuple[str, str], int] | None = None
                ) -> list:
        """Each table to merge into, its tables created or altered (DDL: before any transaction)."""
        def store_of(layout: MirrorLayout) -> MySqlMirrorStore:
            store = MySqlMirrorStore(conn, layout)
            store.prepare()
            with conn.cursor() as cursor:
                cursor.execute("INSERT IGNORE INTO mirrors VALUES (%s, %s)", (layout.keyspace, layout.table))
                cursor.executemany("INSERT IGNORE INTO mirror_buckets VALUES (%s, %s, %s)",
                                   [(layout.keyspace, layout.table, b) for b in range(BUCKETS)])
            conn.commit()
            return store

        return prepare_tables(self.layouts, names, store_of, counts)

    def close(self) -> None:
        self.layouts.close()
