"""PostgreSQL mirror: per base table `ks.t`, a table `"ks"."t"` (schema: the keyspace) holding what
`SELECT * FROM ks.t` returns, merged cell by cell by Cassandra's rules (`spark.mirror`), and beside it
`"ks"."t$state"`, the cells with their timestamps that decide it (a row per partition and per row:
`partition`, `row`, `state` as JSON text, `expires`).

A micro-batch is merged on the executors (`mirror_parts`): the driver creates or alters the tables the
batch's changes name; each task merges its buckets' changes and writes their states and mirror rows in
one transaction with its part in the ledger (`parts`: a part committed once is skipped); the dead
letters after them. Writers of one mirror take turns per bucket: a task locks its (table, bucket) rows
of `<schema>.mirror_buckets` first.

Columns in their PostgreSQL types (`types`). A mirror table gains the columns its base table
gains and loses those it drops. A value PostgreSQL cannot hold fails the micro-batch with a
`MirrorError` naming the row.
"""
from __future__ import annotations

import functools
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from schemas.runtime.access import CassandraCluster
from spark.mirror.engine import MirrorRow, StateKey, StoredState
from spark.mirror.layout import MirrorLayout
from spark.mirror.tables import MERGE_CHUNK, Layouts, merge_batch, prepare_tables
from spark.mirror.values import StoreColumn, row_values

from ..contract import MicroBatch
from ..mirror_parts import BUCKETS, MirrorPart, MirrorParts, merge_on_executors
from .log import Ledger, PostgresSink, ident, schema_statements
from .types import copy_staged, pg_column


STATE_SUFFIX = "$state"


def _columns(layout: MirrorLayout) -> list[StoreColumn]:
    types = {c.name: c.type for c in (*layout.key_columns, *layout.columns)}
    return [pg_column(name, layout.cql(types[name])) for name in layout.names()]


class PostgresMirrorStore:
    """One table's mirror and states, in the micro-batch's transaction (`spark.mirror.engine.MirrorStore`)."""

    def __init__(self, conn: Any, layout: MirrorLayout) -> None:
        self.conn, self.layout = conn, layout
        schema = ident(layout.keyspace)
        self.table = f"{schema}.{ident(layout.table)}"
        self.state = f"{schema}.{ident(layout.table + STATE_SUFFIX)}"
        self.columns = _columns(layout)
        self._staging = ident(f"ringtail$rows${layout.keyspace}.{layout.table}"[:63])

    def prepare(self) -> None:
        """Create the tables, or bring the mirror's columns to the base table's; take this table's turn."""
        conn, layout = self.conn, self.layout
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"ringtail.mirror.{layout.qualified}",))
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {ident(layout.keyspace)}")
        body = ", ".join(f"{ident(c.name)} {c.type}" for c in self.columns)
        conn.execute(f"CREATE TABLE IF NOT EXISTS {self.table} ({body})")
        keys = ", ".join(ident(c.name) for c in layout.key_columns)
        conn.execute(f"CREATE INDEX IF NOT EXISTS {ident((layout.table + '$key')[:63])} ON {self.table} ({keys})")
        conn.execute(f"CREATE TABLE IF NOT EXISTS {self.state} (partition bytea NOT NULL, \"row\" text NOT NULL,"
                     " state text NOT NULL, expires bigint, PRIMARY KEY (partition, \"row\"))")
        conn.execute(f"CREATE INDEX IF NOT EXISTS {ident((layout.table + '$expires')[:63])} ON {self.state}"
                     " (expires) WHERE expires IS NOT NULL")
        have = {name for (name,) in conn.execute("SELECT column_name FROM information_schema.columns"
                                                 " WHERE table_schema = %s AND table_name = %s",
                                                 (layout.keyspace, layout.table)).fetchall()}
        for column in self.columns:
            if column.name not in have:
                conn.execute(f"ALTER TABLE {self.table} ADD COLUMN {ident(column.name)} {column.type}")
        for name in have - {c.name for c in self.columns}:
            conn.execute(f"ALTER TABLE {self.table} DROP COLUMN {ident(name)}")

    def load(self, keys: Collection[StateKey]) -> dict[StateKey, str]:
        if not keys:
            return {}
        partitions, rows = zip(*keys)
        return self._states("(partition, \"row\") IN (SELECT * FROM unnest(%b::bytea[], %b::text[]))",
                            (list(partitions), list(rows)))

    def load_partitions(self, partitions: Collection[bytes]) -> dict[StateKey, str]:
        return self._states("partition = ANY(%b::bytea[])", (list(partitions),)) if partitions else {}

    def due(self, now: int) -> list[StateKey]:
        return [(bytes(p), r) for p, r in self.conn.execute(
            f"SELECT partition, \"row\" FROM {self.state} WHERE expires <= %s", (now,)).fetchall()]

    def _states(self, where: str, parameters: tuple) -> dict[StateKey, str]:
        rows = self.conn.execute(f"SELECT partition, \"row\", state FROM {self.state} WHERE {where}", parameters)
        return {(bytes(p), r): s for p, r, s in rows.fetchall()}

    def save(self, states: list[StoredState], rows: list[MirrorRow]) -> None:
        conn = self.conn
        gone = [s for s in states if s.state is None]
        kept = [s for s in states if s.state is not None]
        if gone:
            conn.execute(f"DELETE FROM {self.state} WHERE (partition, \"row\") IN"
                         " (SELECT * FROM unnest(%b::bytea[], %b::text[]))",
                         ([s.partition for s in gone], [s.row for s in gone]))
        if kept:
            conn.execute(f"INSERT INTO {self.state} (partition, \"row\", state, expires) SELECT * FROM"
                         " unnest(%b::bytea[], %b::text[], %b::text[], %b::bigint[])"
                         " ON CONFLICT (partition, \"row\") DO UPDATE SET state = EXCLUDED.state,"
                         " expires = EXCLUDED.expires",
                         ([s.partition for s in kept], [s.row for s in kept], [s.state for s in kept],
                          [s.expires for s in kept]))
        if rows:
            self._replace(rows)

    def _replace(self, rows: Sequence[MirrorRow]) -> None:
        """Remove each row's key from the mirror, then write the rows that have values, through a staging
        table of the mirror's columns and a flag."""
        staging = self._staging
        names = [c.name for c in self.columns]
        copy_staged(self.conn, staging, self.table, [*names, "ringtail$write"], (self._values(r) for r in rows),
                    "\"ringtail$write\" boolean NOT NULL")
        with self.conn.cursor() as cursor:
            partition = [c.name for c in self.layout.partition_key]
            match = " AND ".join([f"m.{ident(n)} = s.{ident(n)}" for n in partition]
                                 + [f"m.{ident(c.name)} IS NOT DISTINCT FROM s.{ident(c.name)}"
                                    for c in self.layout.clustering])
            cursor.execute(f"DELETE FROM {self.table} m USING {staging} s WHERE {match}")
            columns = ", ".join(map(ident, names))
            cursor.execute(f"INSERT INTO {self.table} ({columns}) SELECT {columns} FROM {staging}"
                           " WHERE \"ringtail$write\"")

    def _values(self, row: MirrorRow) -> list[Any]:
        return [*row_values(self.layout, self.columns, row, "PostgreSQL"), row.values is not None]


def lock_buckets(conn: Any, schema: str, layout: MirrorLayout, buckets: Sequence[int]) -> None:
    """Take the table's turn in these buckets, in the open transaction, in ascending order."""
    conn.execute(f"SELECT bucket FROM {ident(schema)}.mirror_buckets WHERE keyspace = %s AND \"table\" = %s"
                 " AND bucket = ANY(%s) ORDER BY bucket FOR UPDATE", (layout.keyspace, layout.table, list(buckets)))


@dataclass(frozen=True)
class PostgresMirrorParts(MirrorParts):
    """`MirrorParts` into PostgreSQL: each part in a transaction of the ledger's (`Ledger.write_part`)."""

    dsn: str = field(repr=False)
    ledger: Ledger

    def write(self, part: MirrorPart) -> int:
        return self.ledger.write_part(self.dsn, self.batch_id, part.name, functools.partial(self._merge, part))

    def _merge(self, part: MirrorPart, conn: Any) -> int:
        return part.merge(self.layouts, functools.partial(lock_buckets, conn, self.ledger.schema),
                          functools.partial(PostgresMirrorStore, conn), self.chunk)


class PostgresMirrorSink(PostgresSink):
    """The PostgreSQL sink in mirror layout: mirrors instead of the log (dead letters, the ledger and the
    generations as the log's sink keeps them, in `schema`)."""

    merges_cells = True
    # Its write reads the batch twice (which tables, then the changes), so the job reads it whole first.
    reads_batch_whole = False

    def __init__(self, dsn: str, schema: str = "ringtail", app_id: str = "ringtail",
                 cluster: CassandraCluster = CassandraCluster(("127.0.0.1",)), chunk: int = MERGE_CHUNK) -> None:
        super().__init__(dsn, schema, app_id)
        self.layouts = Layouts(cluster)
        self.chunk = chunk

    def _schema_statements(self) -> list[str]:
        s = ident(self.schema)
        return schema_statements(self.schema, log=False) + [
            f"CREATE TABLE IF NOT EXISTS {s}.mirrors (keyspace text NOT NULL, \"table\" text NOT NULL,"
            " PRIMARY KEY (keyspace, \"table\"))",
            f"CREATE TABLE IF NOT EXISTS {s}.mirror_buckets (keyspace text NOT NULL, \"table\" text NOT NULL,"
            " bucket integer NOT NULL, PRIMARY KEY (keyspace, \"table\", bucket))"]

    def write_parts(self, batch: MicroBatch) -> None:
        merge_on_executors(batch.rows, functools.partial(self.parts_of, batch.id))

    def parts_of(self, batch_id: int, counts: Mapping[tuple[str, str], int]) -> PostgresMirrorParts:
        """The tables of a batch holding `counts` changes per table made ready; what merges its parts."""
        with self._connect() as conn, conn.transaction():
            tables = self._tables(conn, counts, counts)
        return PostgresMirrorParts(batch_id, tuple(layout for layout, _ in tables), self.chunk, self.dsn,
                                   self.ledger)

    def purge(self) -> None:
        """Remove what has expired from every mirror of this sink (on the driver: a few states)."""
        with self._connect() as conn, conn.transaction():
            known = conn.execute(f"SELECT keyspace, \"table\" FROM {ident(self.schema)}.mirrors").fetchall()
            tables = self._tables(conn, [tuple(k) for k in known])
            for layout, _ in tables:
                lock_buckets(conn, self.schema, layout, range(BUCKETS))
            merge_batch(tables, {}, purge=True)

    def _tables(self, conn: Any, names: Iterable[tuple[str, str]], counts: Mapping[tuple[str, str], int] | None = None
                ) -> list:
        def store_of(layout: MirrorLayout) -> PostgresMirrorStore:
            store = PostgresMirrorStore(conn, layout)
            store.prepare()
            s = ident(self.schema)
            conn.execute(f"INSERT INTO {s}.mirrors VALUES (%s, %s) ON CONFLICT DO NOTHING",
                         (layout.keyspace, layout.table))
            conn.execute(f"INSERT INTO {s}.mirror_buckets SELECT %s, %s, generate_series(0, %s) ON CONFLICT DO NOTHING",
                         (layout.keyspace, layout.table, BUCKETS - 1))
            return store

        return prepare_tables(self.layouts, names, store_of, counts)

    def close(self) -> None:
        self.layouts.close()
