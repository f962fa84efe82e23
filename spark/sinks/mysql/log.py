"""MySQL / MariaDB sink: CDC log rows and dead letters, exactly once through a ledger of batch ids, as
the PostgreSQL sink does.

Tables (in the DSN's database): ``cdc_log`` (LOG_ROW's columns under the same names; binaries as
varbinary/blob, JSON columns as JSON text with `columns` and `deleted_elements` objects of the values,
times as DATETIME(6) UTC; key keyspace, table, stream id, time, batch sequence number), ``dead_letters``,
the ledgers ``batches`` and ``batch_parts`` and the generation tables ``cdc_generation_timestamps`` and
``cdc_streams_descriptions_v2`` (streams as a JSON array of `0x…` ids in shard order).

A batch goes in from the executors, part by part, as the PostgreSQL sink's does (`parts`): the driver
claims (app_id, batch_id) in the ledger, or stops when it is there finished with the same source offsets
(a replay; other offsets are refused, `ledger.BatchMismatch`); each task inserts its partition's rows in
one transaction with its part's entry in ``batch_parts`` (a copy of a change read from another replica
is ignored by the key); then the driver inserts the dead letters and records the counts. JSON cannot hold NaN or the infinities: such values are written as the strings "NaN",
"Infinity", "-Infinity".
"""
from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, Row

from spark.streams.generations import Generations

from ..contract import MicroBatch, Sink, chunks, generation_rows
from ..parts import DRIVER_PART, held_to_write, part_digest, write_each_row_part
from .connection import connect_dsn

log = logging.getLogger(__name__)
_CHUNK = 500

_LOG_TABLE = (
    "CREATE TABLE IF NOT EXISTS cdc_log (keyspace VARCHAR(255) NOT NULL, `table` VARCHAR(255) NOT NULL,"
    " `cdc$stream_id` VARBINARY(16) NOT NULL, `cdc$time` CHAR(36) NOT NULL, `cdc$batch_seq_no` INT NOT NULL,"
    " `cdc$operation` TINYINT NOT NULL, `cdc$ttl` BIGINT, `cdc$end_of_batch` BOOLEAN NOT NULL, `key` JSON NOT NULL,"
    " columns JSON NOT NULL, deleted_columns JSON NOT NULL, deleted_elements JSON NOT NULL,"
    " write_time DATETIME(6) NOT NULL, write_time_us BIGINT NOT NULL, partition_key BLOB NOT NULL, token BIGINT,"
    " generation DATETIME(6), change_id VARCHAR(64) NOT NULL, kafka_time DATETIME(6) NOT NULL, source JSON NOT NULL,"
    " PRIMARY KEY (keyspace, `table`, `cdc$stream_id`, `cdc$time`, `cdc$batch_seq_no`))"
    " DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin")
# Every table but the log (the mirror's sink keeps these too).
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS dead_letters (topic VARCHAR(255) NOT NULL, `partition` INT NOT NULL,"
    " `offset` BIGINT NOT NULL, reason VARCHAR(64) NOT NULL, detail TEXT NOT NULL, kafka_time DATETIME(6) NOT NULL,"
    " `key` BLOB, `value` LONGBLOB, keyspace VARCHAR(255), `table` VARCHAR(255), write_time_us BIGINT,"
    " change_id VARCHAR(64), app_id VARCHAR(255) NOT NULL, batch_id BIGINT NOT NULL,"
    " PRIMARY KEY (topic, `partition`, `offset`, reason)) DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin",
    "CREATE TABLE IF NOT EXISTS batches (app_id VARCHAR(255) NOT NULL, batch_id BIGINT NOT NULL,"
    " `rows` BIGINT NOT NULL, dead_letters BIGINT NOT NULL,"
    " written_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), offsets VARCHAR(64),"
    " PRIMARY KEY (app_id, batch_id))",
    "CREATE TABLE IF NOT EXISTS batch_parts (app_id VARCHAR(255) NOT NULL, batch_id BIGINT NOT NULL,"
    " part VARCHAR(64) NOT NULL, `rows` BIGINT NOT NULL,"
    " written_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), PRIMARY KEY (app_id, batch_id, part))",
    "CREATE TABLE IF NOT EXISTS cdc_generation_timestamps (time DATETIME(6) PRIMARY KEY, expired DATETIME(6))",
    "CREATE TABLE IF NOT EXISTS cdc_streams_descriptions_v2 (time DATETIME(6) NOT NULL, range_end BIGINT NOT NULL,"
    " streams JSON NOT NULL, PRIMARY KEY (time, range_end))",
)
_LOG_COLUMNS = ("keyspace", "table", "cdc$stream_id", "cdc$time", "cdc$batch_seq_no", "cdc$operation", "cdc$ttl",
                "cdc$end_of_batch", "key", "columns", "deleted_columns", "deleted_elements", "write_time",
                "write_time_us", "partition_key", "token", "generation", "change_id", "kafka_time", "source")
_DEAD_LETTER_COLUMNS = ("topic", "partition", "offset", "reason", "detail", "kafka_time", "key", "value",
                        "keyspace", "table", "write_time_us", "change_id")


def _insert(table: str, columns: Iterable[str]) -> str:
    """An insert that leaves a row already there as it is (a copy from another replica) and fails on
    anything else: INSERT IGNORE would turn a value that does not fit into a warning."""
    names = list(columns)
    return (f"INSERT INTO {table} ({', '.join(f'`{c}`' for c in names)}) VALUES ({', '.join(['%s'] * len(names))})"
            f" ON DUPLICATE KEY UPDATE `{names[0]}` = `{names[0]}`")


def _finite(value: Any) -> Any:
    """`value` with NaN and the infinities as strings, which JSON can hold."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, list):
        return [_finite(v) for v in value]
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    return value


def json_text(text: str) -> str:
    """A JSON text as strict JSON."""
    return json.dumps(_finite(json.loads(text)), separators=(",", ":"), ensure_ascii=False)


def _json_object(texts: dict[str, str] | None) -> str:
    return json.dumps({k: _finite(json.loads(v)) for k, v in (texts or {}).items()}, separators=(",", ":"),
                      ensure_ascii=False)


def log_row_values(row: Row) -> tuple:
    return (row.keyspace, row.table, bytes(row["cdc$stream_id"]), row["cdc$time"], row["cdc$batch_seq_no"],
            row["cdc$operation"], row["cdc$ttl"], row["cdc$end_of_batch"], json_text(row.key),
            _json_object(row.columns), json.dumps(list(row.deleted_columns or ()), ensure_ascii=False),
            _json_object(row.deleted_elements), row.write_time, row.write_time_us, bytes(row.partition_key),
            row.token, row.generation, row.change_id, row.kafka_time,
            json.dumps(row.source.asDict(), separators=(",", ":")))


_INSERT_LOG = _insert("cdc_log", _LOG_COLUMNS)
_INSERT_DEAD_LETTERS = _insert("dead_letters", _DEAD_LETTER_COLUMNS + ("app_id", "batch_id"))


def insert_rows(cursor: Any, statement: str, values: Iterable[tuple]) -> int:
    """How many of the rows were new (`_insert` counts no row already there)."""
    count = 0
    for chunk in chunks(values, _CHUNK):
        count += cursor.executemany(statement, chunk)
    return count


def claim_part(cursor: Any, app_id: str, batch_id: int, part: str) -> bool:
    """Claim a part in the open transaction: False when an attempt has committed it (one whose transaction
    is open is waited for). A duplicate key leaves the row as it is: no change, no row counted."""
    return cursor.execute("INSERT INTO batch_parts (app_id, batch_id, part, `rows`) VALUES (%s, %s, %s, 0)"
                          " ON DUPLICATE KEY UPDATE part = part", (app_id, batch_id, part)) == 1


def record_part(cursor: Any, app_id: str, batch_id: int, part: str, written: int) -> None:
    cursor.execute("UPDATE batch_parts SET `rows` = %s WHERE app_id = %s AND batch_id = %s AND part = %s",
                   (written, app_id, batch_id, part))


def write_part(dsn: str, app_id: str, batch_id: int, part: str, write: Callable[[Any, Any, Any], int],
               prepare: Callable[[Any], Any] = lambda conn: None) -> int:
    """Step 2 of `parts` for one part, in one transaction: claimed, written (`write(conn, cursor, prepared)`:
    how many rows were new) and recorded; 0 when an attempt has committed it. `prepare(conn)` runs before
    the transaction: DDL, which MySQL commits by itself (it would commit the claim with it)."""
    conn = connect_dsn(dsn)
    try:
        prepared = prepare(conn)
        written = 0
        with conn.cursor() as cursor:
            if claim_part(cursor, app_id, batch_id, part):
                written = write(conn, cursor, prepared)
                record_part(cursor, app_id, batch_id, part, written)
        conn.commit()
        return written
    except BaseException:
        conn.rollback()
        raise
    finally:
        conn.close()


@dataclass(frozen=True)
class LogParts:
    """Writes a batch's log rows from the executors, a part per partition (step 2 of `parts`, run by
    `write_each_row_part`); picklable, so Spark ships it to them."""

    dsn: str = field(repr=False)
    app_id: str
    batch_id: int

    def __call__(self, rows: Iterator[Row]) -> int | None:
        values = [log_row_values(row) for row in rows]
        if not values:
            return None
        return write_part(self.dsn, self.app_id, self.batch_id, part_digest(repr(v).encode() for v in values),
                          lambda conn, cursor, _: insert_rows(cursor, _INSERT_LOG, values))


class MySqlSink(Sink):
    # Its write is one action over the batch's partitions, on the executors.
    reads_batch_whole = True

    def __init__(self, dsn: str, app_id: str = "ringtail") -> None:
        self.dsn, self.app_id = dsn, app_id

    def prepare(self) -> None:
        conn = connect_dsn(self.dsn)
        try:
            with conn.cursor() as cursor:
                for statement in self._schema_statements():
                    cursor.execute(statement)
                # MySQL has no ADD COLUMN IF NOT EXISTS. A ledger created before it kept offsets: its rows keep
                # none, and are taken on trust; before batches went in part by part: each row is finished.
                for column, definition in (("offsets", "VARCHAR(64)"), ("done", "BOOLEAN NOT NULL DEFAULT TRUE")):
                    cursor.execute("SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE()"
                                   " AND table_name = 'batches' AND column_name = %s", (column,))
                    if cursor.fetchone()[0] == 0:
                        cursor.execute(f"ALTER TABLE batches ADD COLUMN {column} {definition}")
            conn.commit()
        finally:
            conn.close()

    def _schema_statements(self) -> tuple[str, ...]:
        return (_LOG_TABLE, *_SCHEMA)

    def close(self) -> None:
        pass  # each batch opens and closes its own connection

    def write(self, batch: MicroBatch) -> None:
        if self.claim(batch):
            self.write_parts(batch)
            self.finish(batch)

    def claim(self, batch: MicroBatch) -> bool:
        """Step 1 of `parts`: whether the batch is to be written (False: a replay of a finished one). A
        batch claimed by another writer's open transaction is waited for."""
        import pymysql

        conn = connect_dsn(self.dsn)
        try:
            with conn.cursor() as cursor:
                try:
                    cursor.execute("INSERT INTO batches (app_id, batch_id, `rows`, dead_letters, offsets, done)"
                                   " VALUES (%s, %s, 0, 0, %s, FALSE)", (self.app_id, batch.id, batch.offsets))
                    conn.commit()
                    return True
                except pymysql.IntegrityError:
                    cursor.execute("SELECT offsets, done FROM batches WHERE app_id = %s AND batch_id = %s",
                                   (self.app_id, batch.id))
                    held, done = cursor.fetchone()
        finally:
            conn.close()
        return held_to_write(self.app_id, batch.id, batch.offsets, held, bool(done))

    def write_parts(self, batch: MicroBatch) -> None:
        """Step 2: the batch's rows, from the executors, a part per partition."""
        write_each_row_part(batch.rows, LogParts(self.dsn, self.app_id, batch.id))

    def finish(self, batch: MicroBatch) -> None:
        """Step 3: the dead letters, and the batch marked finished with its counts, in one transaction."""
        conn = connect_dsn(self.dsn)
        try:
            with conn.cursor() as cursor:
                letters = insert_rows(cursor, _INSERT_DEAD_LETTERS,
                                      (tuple(r[c] for c in _DEAD_LETTER_COLUMNS) + (self.app_id, batch.id)
                                       for r in batch.dead_letters.toLocalIterator())) if batch.has_dead_letters() else 0
                cursor.execute("UPDATE batches SET `rows` = (SELECT COALESCE(SUM(`rows`), 0) FROM batch_parts"
                               " WHERE app_id = %s AND batch_id = %s), dead_letters = %s, done = TRUE"
                               " WHERE app_id = %s AND batch_id = %s",
                               (self.app_id, batch.id, letters, self.app_id, batch.id))
                cursor.execute("SELECT `rows` FROM batches WHERE app_id = %s AND batch_id = %s", (self.app_id, batch.id))
                written = cursor.fetchone()[0]
            conn.commit()
        finally:
            conn.close()
        log.info("batch %d: %d log rows and %d dead letters written", batch.id, written, letters)

    def _write_on_driver(self, batch: MicroBatch) -> None:
        """Step 2 for a layout written from the driver (`_write_rows`): one part, in one transaction."""
        write_part(self.dsn, self.app_id, batch.id, DRIVER_PART,
                   lambda conn, cursor, prepared: self._write_rows(cursor, batch.rows, prepared),
                   lambda conn: self._before_batch(conn, batch.rows))

    def _before_batch(self, conn: Any, rows: DataFrame) -> Any:
        """What must happen before the batch's transaction (DDL, which MySQL commits by itself); handed
        to `_write_rows`."""
        return None

    def _write_rows(self, cursor: Any, rows: DataFrame, prepared: Any) -> int:
        """Write the batch's rows from the driver in the open transaction (a layout written there); how
        many were written."""
        return insert_rows(cursor, _INSERT_LOG, (log_row_values(r) for r in rows.toLocalIterator()))

    def publish_generations(self, generations: Generations) -> None:
        timestamps, streams = generation_rows(generations)
        conn = connect_dsn(self.dsn)
        try:
            with conn.cursor() as cursor:
                # Ranges before timestamps, as ScyllaDB publishes; one transaction makes both visible at once.
                cursor.executemany("INSERT INTO cdc_streams_descriptions_v2 (time, range_end, streams)"
                                   " VALUES (%s, %s, %s) ON DUPLICATE KEY UPDATE streams = VALUES(streams)",
                                   [(t, end, json.dumps(["0x" + s.hex() for s in ids])) for t, end, ids in streams])
                cursor.executemany("INSERT INTO cdc_generation_timestamps (time, expired) VALUES (%s, %s)"
                                   " ON DUPLICATE KEY UPDATE expired = COALESCE(VALUES(expired), expired)",
                                   timestamps)
            conn.commit()
        finally:
            conn.close()
