"""MySQL / MariaDB sink: CDC log rows and dead letters, exactly once through a ledger of batch ids, as
the PostgreSQL sink does.

Tables (in the DSN's database): ``cdc_log`` (LOG_ROW's columns under the same names; binaries as
varbinary/blob, JSON columns as JSON text with `columns` and `deleted_elements` objects of the values,
times as DATETIME(6) UTC; key keyspace, table, stream id, time, batch sequence number), ``dead_letters``,
the ledger ``batches`` and the generation tables ``cdc_generation_timestamps`` and
``cdc_streams_descriptions_v2`` (streams as a JSON array of `0x…` ids in shard order).

A batch is one transaction: claim (app_id, batch_id) in the ledger, or stop when it is there with the
same source offsets (a replay; other offsets are refused, `ledger.BatchMismatch`); insert the rows (a
copy of a change read from another replica is ignored by the key); the same for dead letters; record
the counts. JSON cannot hold NaN or the infinities: such values are written as the strings "NaN",
"Infinity", "-Infinity".
"""
from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import unquote, urlsplit

from pyspark.sql import DataFrame, Row

from spark.streams.generations import Generations

from .. import MicroBatch, Sink, chunks, generation_rows
from ..ledger import is_replay
from ..settings import without_password
from .settings import tls_options

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


def connect_dsn(dsn: str) -> Any:
    """A PyMySQL connection from `mysql://user[:password]@host[:port]/database[?ssl_ca=…]` (`tls_options`),
    in UTC, autocommit off."""
    import pymysql

    parts = urlsplit(dsn)
    if parts.scheme not in ("mysql", "mariadb") or not parts.path.strip("/"):
        raise ValueError(f"DSN {without_password(dsn)!r}: give it as mysql://user[:password]@host[:port]/database")
    return pymysql.connect(host=parts.hostname or "127.0.0.1", port=parts.port or 3306,
                           user=unquote(parts.username or ""), password=unquote(parts.password or ""),
                           database=parts.path.strip("/"), charset="utf8mb4", autocommit=False,
                           init_command="SET time_zone = '+00:00'", connect_timeout=10, **tls_options(parts.query))


class MySqlSink(Sink):
    def __init__(self, dsn: str, app_id: str = "ringtail") -> None:
        self.dsn, self.app_id = dsn, app_id

    def prepare(self) -> None:
        conn = connect_dsn(self.dsn)
        try:
            with conn.cursor() as cursor:
                for statement in self._schema_statements():
                    cursor.execute(statement)
                # A ledger created before it kept offsets (MySQL has no ADD COLUMN IF NOT EXISTS): its rows
                # keep none, and are taken on trust.
                cursor.execute("SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE()"
                               " AND table_name = 'batches' AND column_name = 'offsets'")
                if cursor.fetchone()[0] == 0:
                    cursor.execute("ALTER TABLE batches ADD COLUMN offsets VARCHAR(64)")
            conn.commit()
        finally:
            conn.close()

    def _schema_statements(self) -> tuple[str, ...]:
        return (_LOG_TABLE, *_SCHEMA)

    def close(self) -> None:
        pass  # each batch opens and closes its own connection

    def write(self, batch: MicroBatch) -> None:
        rows, dead_letters, batch_id = batch.rows, batch.dead_letters, batch.id
        import pymysql

        conn = connect_dsn(self.dsn)
        try:
            prepared = self._before_batch(conn, rows)
            with conn.cursor() as cursor:
                # Claiming first also serializes two writers of one batch: the second waits on the row lock.
                try:
                    cursor.execute("INSERT INTO batches (app_id, batch_id, `rows`, dead_letters, offsets)"
                                   " VALUES (%s, %s, 0, 0, %s)", (self.app_id, batch_id, batch.offsets))
                except pymysql.IntegrityError:
                    cursor.execute("SELECT offsets FROM batches WHERE app_id = %s AND batch_id = %s",
                                   (self.app_id, batch_id))
                    held = cursor.fetchone()[0]
                    conn.rollback()
                    if is_replay(self.app_id, batch_id, batch.offsets, held):
                        log.info("batch %d of %s is already written; skipped", batch_id, self.app_id)
                        return
                written = self._write_rows(cursor, rows, prepared)
                letters = self._insert(cursor, _insert("dead_letters", _DEAD_LETTER_COLUMNS + ("app_id", "batch_id")),
                                       (tuple(r[c] for c in _DEAD_LETTER_COLUMNS) + (self.app_id, batch_id)
                                        for r in dead_letters.toLocalIterator()))
                cursor.execute("UPDATE batches SET `rows` = %s, dead_letters = %s WHERE app_id = %s AND batch_id = %s",
                               (written, letters, self.app_id, batch_id))
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
        finally:
            conn.close()
        log.info("batch %d: %d log rows and %d dead letters written", batch_id, written, letters)

    def _before_batch(self, conn: Any, rows: DataFrame) -> Any:
        """What must happen before the batch's transaction (DDL, which MySQL commits by itself); handed
        to `_write_rows`."""
        return None

    def _write_rows(self, cursor: Any, rows: DataFrame, prepared: Any) -> int:
        """Write the batch's rows in the open transaction; how many were written."""
        return self._insert(cursor, _insert("cdc_log", _LOG_COLUMNS),
                            (log_row_values(r) for r in rows.toLocalIterator()))

    @staticmethod
    def _insert(cursor: Any, statement: str, values: Iterator[tuple]) -> int:
        """Rows sent (a copy of a change already there included)."""
        count = 0
        for chunk in chunks(values, _CHUNK):
            cursor.executemany(statement, chunk)
            count += len(chunk)
        return count

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
