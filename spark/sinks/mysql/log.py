"""MySQL / MariaDB sink: CDC log rows and dead letters, exactly once through a ledger of batch ids, as
the PostgreSQL sink does.

Tables (in the DSN's database): ``cdc_log`` (LOG_ROW's columns under the same names; binaries as
varbinary/blob, JSON columns as JSON text with `columns` and `deleted_elements` objects of the values,
times as DATETIME(6) UTC; key keyspace, table, stream id, time, batch sequence number), ``dead_letters``,
the ledgers ``batches`` and ``batch_parts`` and the generation tables ``cdc_generation_timestamps`` and
``cdc_streams_descriptions_v2`` (streams as a JSON array of `0x…` ids in shard order).

A batch goes in from the executors, part by part, as the PostgreSQL sink's does (`parts`): the driver
claims (app_id, batch_id) in the ledger, or stops when it is there finished with the same source offsets
(a replay; other offsets are refused, `ledger.BatchMismatch`); each task, in one transaction with its
part's entry in ``batch_parts``, loads its partition's rows into a temporary table and inserts them into
``cdc_log`` (a copy of a change read from another replica is ignored by the key); then the driver inserts
the dead letters and records the counts.

A part's values are made on the executors by Spark expressions (`_STAGED`; its JSON objects assembled from
the texts when the part's rows are all plain, `staged.plain_rows`), written as CSV by Arrow and loaded with
`LOAD DATA LOCAL INFILE` (a third of the time the multi-row inserts it replaced took); a server that
refuses local files (MySQL 8's default, `local_infile=OFF`) gets them by multi-row inserts, said once per
executor. JSON cannot hold NaN or the infinities: in a part that holds them, such values are written as the
strings "NaN", "Infinity", "-Infinity", and a text that is not JSON at all as a JSON string.
"""
from __future__ import annotations

import functools
import json
import logging
import math
import random
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark.streams.generations import Generations

from ..contract import MicroBatch, Resolved, Sink, chunks, generation_rows, resolved_rows
from ..parts import held_to_write, part_digest, write_each_part
from ..staged import column, csv_chunk, micros, object_of_texts, plain_rows
from .connection import connect_dsn
from .load import load_file

log = logging.getLogger(__name__)
_CHUNK = 500
# InnoDB's ER_LOCK_DEADLOCK; a part's transaction is run again this many times at most.
_DEADLOCK, DEADLOCK_ATTEMPTS = 1213, 5

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
    # Each table's resolved timestamp, per writer (spark.delivery.resolved): the newest stays.
    "CREATE TABLE IF NOT EXISTS resolved (app_id VARCHAR(255) NOT NULL, keyspace_name VARCHAR(255) NOT NULL,"
    " table_name VARCHAR(255) NOT NULL, resolved DATETIME(6) NOT NULL, resolved_us BIGINT NOT NULL,"
    " PRIMARY KEY (app_id, keyspace_name, table_name))",
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


def _strict(text: str | None) -> Any:
    """A JSON text's value with NaN and the infinities as strings; a text that is not JSON as that string."""
    if text is None:
        return None
    try:
        return _finite(json.loads(text))
    except ValueError:
        return text


def json_text(text: str) -> str:
    """A JSON text as strict JSON."""
    return json.dumps(_strict(text), separators=(",", ":"), ensure_ascii=False)


def _json_object(texts: dict[str, str] | None) -> str:
    return json.dumps({k: _strict(v) for k, v in (texts or {}).items()}, separators=(",", ":"), ensure_ascii=False)


_INSERT_DEAD_LETTERS = _insert("dead_letters", _DEAD_LETTER_COLUMNS + ("app_id", "batch_id"))


@dataclass(frozen=True)
class _Staged:
    """A `cdc_log` column as a part stages it: its text made on the executors (`spark`), held by a temporary
    table, and its load from there (`load`, the staged column as {s}). A JSON column also has its text for
    a part of plain rows (`plain`, when it differs) and the Python making `spark`'s text strict JSON for a
    row that is not plain (`strict`)."""

    name: str
    spark: Callable[[], Column]
    load: str = "{s}"
    plain: Callable[[], Column] | None = None
    strict: Callable[[str | None], str] | None = None

    def values(self) -> list[Column]:
        return [self.spark(), self.plain()] if self.plain else [self.spark()]


def _hex(name: str) -> Callable[[], Column]:
    return lambda: F.hex(F.col(name))


def _object(text: str | None) -> str:
    """Spark's JSON of a map of JSON texts (`to_json`) as the strict JSON object of their values."""
    return _json_object(json.loads(text) if text is not None else None)


_UNHEX, _NULLABLE = "UNHEX({s})", "NULLIF({s}, '')"
_TIME = "TIMESTAMPADD(MICROSECOND, {s}, '1970-01-01 00:00:00')"  # exact for any µs count, UTC (the session's)
_STAGED: tuple[_Staged, ...] = (
    _Staged("keyspace", column("keyspace")),
    _Staged("table", column("table")),
    _Staged("cdc$stream_id", _hex("cdc$stream_id"), _UNHEX),
    _Staged("cdc$time", column("cdc$time")),
    _Staged("cdc$batch_seq_no", column("cdc$batch_seq_no")),
    _Staged("cdc$operation", column("cdc$operation")),
    _Staged("cdc$ttl", column("cdc$ttl"), _NULLABLE),
    _Staged("cdc$end_of_batch", lambda: F.col("cdc$end_of_batch").cast("int")),
    _Staged("key", column("key"), strict=json_text),
    _Staged("columns", lambda: F.to_json(F.col("columns")), plain=object_of_texts("columns"), strict=_object),
    _Staged("deleted_columns", lambda: F.to_json(F.coalesce(F.col("deleted_columns"),
                                                            F.array().cast("array<string>")))),
    _Staged("deleted_elements", lambda: F.to_json(F.col("deleted_elements")),
            plain=object_of_texts("deleted_elements"), strict=_object),
    _Staged("write_time", micros("write_time"), _TIME),
    _Staged("write_time_us", column("write_time_us")),
    _Staged("partition_key", _hex("partition_key"), _UNHEX),
    _Staged("token", column("token"), _NULLABLE),
    _Staged("generation", micros("generation"), _TIME.replace("{s}", _NULLABLE)),
    _Staged("change_id", column("change_id")),
    _Staged("kafka_time", micros("kafka_time"), _TIME),
    _Staged("source", lambda: F.to_json(F.col("source"))),
)
_STAGING = "ringtail_log_staging"
_STAGING_TABLE = (f"CREATE TEMPORARY TABLE {_STAGING} ({', '.join(f'c{i} LONGTEXT' for i in range(len(_STAGED)))})"
                  " DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin")
# Arrow's CSV: every value quoted, quotes doubled, nothing escaped by backslash; a null is an empty field
# (loaded as '', hence NULLIF for the columns that may be null).
_LOAD = (f"LOAD DATA LOCAL INFILE %s INTO TABLE {_STAGING} CHARACTER SET utf8mb4 FIELDS TERMINATED BY ','"
         " OPTIONALLY ENCLOSED BY '\"' ESCAPED BY '' LINES TERMINATED BY '\\n'")
_FILL = f"INSERT INTO {_STAGING} VALUES ({', '.join(['%s'] * len(_STAGED))})"
_FROM_STAGING = (f"INSERT INTO cdc_log ({', '.join(f'`{c.name}`' for c in _STAGED)})"
                 f" SELECT {', '.join(c.load.replace('{s}', f'c{i}') for i, c in enumerate(_STAGED))} FROM {_STAGING}"
                 " ON DUPLICATE KEY UPDATE `keyspace` = `keyspace`")


def staged_values(rows: DataFrame) -> DataFrame:
    """The log rows' staged texts (`_STAGED`, a JSON column's plain text after its own), then whether the row
    is plain (`plain_rows`)."""
    return rows.select(*_staged_expressions())


@functools.cache
def _staged_expressions() -> tuple[Column, ...]:
    """`staged_values`' expressions, built once (calls into the driver's JVM) and reused by every batch."""
    values = [value for staged in _STAGED for value in staged.values()]
    return (*(v.alias(f"c{i}") for i, v in enumerate(values)), plain_rows().alias("plain"))


def staged_part(batches: Iterable[pa.RecordBatch]) -> pa.Table | None:
    """A part's `staged_values` as the temporary table takes them: a JSON column's plain text where the
    row is plain, its `strict` text elsewhere; None for a part without rows."""
    batches = [b for b in batches if b.num_rows]
    if not batches:
        return None
    table = pa.Table.from_batches(batches)
    flags = table.column(table.num_columns - 1)
    all_plain = pc.all(flags).as_py()
    out, at = [], 0
    for staged in _STAGED:
        usual = table.column(at)
        plain = table.column(at + 1) if staged.plain else usual
        at += 2 if staged.plain else 1
        if staged.strict is None or all_plain:
            out.append(plain)
        else:
            out.append(pa.array([p if flag else staged.strict(u) for u, p, flag in
                                 zip(usual.to_pylist(), plain.to_pylist(), flags.to_pylist())], pa.string()))
    return pa.table(out, names=[f"c{i}" for i in range(len(_STAGED))])


def load_part(conn: Any, cursor: Any, part: pa.Table, csv: bytes) -> int:
    """Load a part (`staged_part`, and its CSV) into the temporary table and insert it into the log, in the
    open transaction; how many rows were new."""
    cursor.execute(_STAGING_TABLE)
    if load_file(conn, cursor, _LOAD, csv) is None:
        insert_rows(cursor, _FILL, zip(*(column.to_pylist() for column in part.columns)))
    written = cursor.execute(_FROM_STAGING)
    cursor.execute(f"DROP TEMPORARY TABLE {_STAGING}")
    return written


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


def write_part(dsn: str, app_id: str, batch_id: int, part: str, write: Callable[[Any, Any], int],
               local_infile: bool = False, read_committed: bool = False) -> int:
    """Step 2 of `parts` for one part, in one transaction: claimed, written (`write(conn, cursor)`: how
    many rows were new, from what the part holds, so it can run again) and recorded; 0 when an attempt has
    committed it. `local_infile`: the connection may send files for LOAD DATA LOCAL; `read_committed`: the
    transaction takes no gap locks, which would make concurrent parts that delete and insert by random keys
    wait on each other.

    A transaction InnoDB ends as a deadlock's victim (the parts of a batch lock rows of the same tables side
    by side) is run again whole, up to `DEADLOCK_ATTEMPTS` times: InnoDB has rolled it all back, the claim
    with it."""
    import pymysql

    attempt = 1
    while True:
        try:
            return _write_part_once(dsn, app_id, batch_id, part, write, local_infile, read_committed)
        except pymysql.err.OperationalError as exc:
            if exc.args[0] != _DEADLOCK or attempt == DEADLOCK_ATTEMPTS:
                raise
        time.sleep(random.uniform(0.01, 0.05) * attempt)  # apart from the transaction it met
        attempt += 1
        log.warning("part %s of batch %d of %s: chosen as a deadlock's victim and rolled back; written again"
                    " (attempt %d of %d)", part, batch_id, app_id, attempt, DEADLOCK_ATTEMPTS)


def _write_part_once(dsn: str, app_id: str, batch_id: int, part: str, write: Callable[[Any, Any], int],
                     local_infile: bool, read_committed: bool) -> int:
    conn = connect_dsn(dsn, local_infile=local_infile)
    try:
        written = 0
        with conn.cursor() as cursor:
            if read_committed:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL READ COMMITTED")
            if claim_part(cursor, app_id, batch_id, part):
                written = write(conn, cursor)
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
    `write_each_part` on the `staged_values`); picklable, so Spark ships it to them."""

    dsn: str = field(repr=False)
    app_id: str
    batch_id: int

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> int | None:
        part = staged_part(batches)
        if part is None:
            return None
        csv = b"".join(csv_chunk(batch) for batch in part.to_batches())
        return write_part(self.dsn, self.app_id, self.batch_id, part_digest([csv]),
                          lambda conn, cursor: load_part(conn, cursor, part, csv), local_infile=True)


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
                for name, definition in (("offsets", "VARCHAR(64)"), ("done", "BOOLEAN NOT NULL DEFAULT TRUE")):
                    cursor.execute("SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE()"
                                   " AND table_name = 'batches' AND column_name = %s", (name,))
                    if cursor.fetchone()[0] == 0:
                        cursor.execute(f"ALTER TABLE batches ADD COLUMN {name} {definition}")
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
        write_each_part(staged_values(batch.rows), LogParts(self.dsn, self.app_id, batch.id))

    def finish(self, batch: MicroBatch) -> None:
        """Step 3: the dead letters, and the batch marked finished with its counts, in one transaction."""
        conn = connect_dsn(self.dsn)
        try:
            with conn.cursor() as cursor:
                letters = (insert_rows(cursor, _INSERT_DEAD_LETTERS,
                                       (tuple(r[c] for c in _DEAD_LETTER_COLUMNS) + (self.app_id, batch.id)
                                        for r in batch.dead_letters.toLocalIterator()))
                           if batch.has_dead_letters() else 0)
                cursor.execute("UPDATE batches SET `rows` = (SELECT COALESCE(SUM(`rows`), 0) FROM batch_parts"
                               " WHERE app_id = %s AND batch_id = %s), dead_letters = %s, done = TRUE"
                               " WHERE app_id = %s AND batch_id = %s",
                               (self.app_id, batch.id, letters, self.app_id, batch.id))
                cursor.execute("SELECT `rows` FROM batches WHERE app_id = %s AND batch_id = %s",
                               (self.app_id, batch.id))
                written = cursor.fetchone()[0]
            conn.commit()
        finally:
            conn.close()
        log.info("batch %d: %d log rows and %d dead letters written", batch.id, written, letters)

    def publish_resolved(self, resolved: list[Resolved]) -> None:
        conn = connect_dsn(self.dsn)
        try:
            with conn.cursor() as cursor:
                # Left to right: `resolved` is compared with the old resolved_us before that one moves.
                cursor.executemany("INSERT INTO resolved (app_id, keyspace_name, table_name, resolved, resolved_us)"
                                   " VALUES (%s, %s, %s, %s, %s) ON DUPLICATE KEY UPDATE"
                                   " resolved = IF(VALUES(resolved_us) > resolved_us, VALUES(resolved), resolved),"
                                   " resolved_us = GREATEST(resolved_us, VALUES(resolved_us))",
                                   resolved_rows(self.app_id, resolved))
            conn.commit()
        finally:
            conn.close()

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
