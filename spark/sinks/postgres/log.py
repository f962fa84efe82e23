"""PostgreSQL sink: CDC log rows and dead letters, exactly once through a ledger of batch ids.

Tables (in `schema`, default ``ringtail``):

``cdc_log``
    LOG_ROW's columns under the same names: binaries as bytea, ``cdc$time`` as uuid, the JSON
    columns as jsonb (``columns`` and ``deleted_elements`` as objects of parsed JSON values),
    ``deleted_columns`` as text[], timestamps as timestamptz, ``source`` as jsonb.
    Key (keyspace, "table", "cdc$stream_id", "cdc$time", "cdc$batch_seq_no").
``dead_letters``
    DEAD_LETTER's columns and the batch that wrote them; key (topic, partition, "offset", reason).
``batches``
    The ledger: (app_id, batch_id) with the digest of the source offsets the batch covered, whether it
    is finished, and the rows and dead letters it inserted.
``batch_parts``
    The ledger of parts: (app_id, batch_id, part) with the rows each part inserted.
``cdc_generation_timestamps``, ``cdc_streams_descriptions_v2``
    The generation description tables, ``streams`` as bytea[] in shard order.

A batch goes in from the executors, part by part (`parts`): the driver claims (app_id, batch_id) in the
ledger, or stops when it is there finished with the same offsets (a replay; other offsets are refused,
`ledger.BatchMismatch`); each task formats its partition's rows as CSV (Spark expressions, then Arrow's
CSV writer), and in one transaction claims its part, COPYs the rows into a temporary table and INSERTs
them … ON CONFLICT DO NOTHING, which also drops copies of a change read from several replicas (by casts
alone when the part's JSON texts are all plain, `plain_rows`; value by value otherwise); then the
driver inserts the dead letters and records the counts, in one transaction. Executors connect with the
sink's DSN as it is: files it names (sslrootcert, sslcert, sslkey) must be at those paths on them.
"""
from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark.streams.generations import Generations

from ..contract import MicroBatch, Resolved, Sink, generation_rows, resolved_rows
from ..parts import held_to_write, part_digest, write_each_part
from ..staged import column, csv_chunk, micros, object_of_texts, plain_rows

log = logging.getLogger(__name__)

_CSV_SCHEMA = "csv binary"


def ident(name: str) -> str:
    """A PostgreSQL identifier, always quoted."""
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class _Column:
    name: str
    type: str  # in the target table
    staged: str  # in the staging table, as the CSV carries it
    spark: Callable[[], Column]  # LOG_ROW / DEAD_LETTER row -> the staged value (on the executors)
    load: str = "{s}"  # staged column {s} -> target value; {json} is the text -> jsonb function
    # For a part whose rows are all plain (`plain_rows`): the value in a second staged column `<name>$plain`,
    # when it differs, and its load, when it differs.
    plain: Callable[[], Column] | None = None
    plain_load: str | None = None

    def staged_names(self) -> list[str]:
        return [self.name, f"{self.name}$plain"] if self.plain else [self.name]

    def staged_values(self) -> list[Column]:
        return [self.spark(), self.plain()] if self.plain else [self.spark()]


def _bytea(name: str) -> Callable[[], Column]:
    return lambda: F.concat(F.lit("\\x"), F.hex(F.col(name)))  # bytea's hex input form


def _json_text(name: str) -> Callable[[], Column]:
    return lambda: F.to_json(F.col(name))


def _text_array(name: str) -> Callable[[], Column]:
    """A list of texts in PostgreSQL's array input form: each element quoted, its quotes and backslashes
    escaped."""
    return lambda: F.concat(F.lit("{"), F.array_join(F.transform(F.col(name), lambda text: F.concat(
        F.lit('"'), F.regexp_replace(text, r'(["\\])', r"\\$1"), F.lit('"'))), ","), F.lit("}"))


_TIMESTAMP = "(timestamptz 'epoch' + {s} * interval '1 microsecond')"  # exact for any µs count


def _jsonb(value: str) -> str:
    """Text -> jsonb through {json}: json_value, or lenient_jsonb to retry a batch that held invalid JSON."""
    return "{json}(" + value + ")"


def _json_object(staged: str) -> str:
    """A JSON object of JSON texts (Spark's to_json of a map) as a jsonb object of their values; an empty
    one (most rows' deleted elements) without the subquery, a third of the insert's time otherwise."""
    value = _jsonb("coalesce(e.value, 'null')")
    return (f"CASE WHEN {staged} = '{{}}' THEN '{{}}'::jsonb ELSE"
            f" (SELECT coalesce(jsonb_object_agg(e.key, {value}), '{{}}'::jsonb)"
            f" FROM json_each_text(({staged})::json) e) END")


LOG_COLUMNS: tuple[_Column, ...] = (
    _Column("keyspace", "text NOT NULL", "text", column("keyspace")),
    _Column("table", "text NOT NULL", "text", column("table")),
    _Column("cdc$stream_id", "bytea NOT NULL", "bytea", _bytea("cdc$stream_id")),
    _Column("cdc$time", "uuid NOT NULL", "uuid", column("cdc$time")),
    _Column("cdc$batch_seq_no", "integer NOT NULL", "integer", column("cdc$batch_seq_no")),
    _Column("cdc$operation", "smallint NOT NULL", "smallint", column("cdc$operation")),
    _Column("cdc$ttl", "bigint", "bigint", column("cdc$ttl")),
    _Column("cdc$end_of_batch", "boolean NOT NULL", "boolean", column("cdc$end_of_batch")),
    _Column("key", "jsonb NOT NULL", "text", column("key"), _jsonb("{s}"), plain_load="({s})::jsonb"),
    _Column("columns", "jsonb NOT NULL", "text", _json_text("columns"), _json_object("{s}"),
            object_of_texts("columns"), "({s})::jsonb"),
    _Column("deleted_columns", "text[] NOT NULL", "text", _text_array("deleted_columns"), "({s})::text[]"),
    _Column("deleted_elements", "jsonb NOT NULL", "text", _json_text("deleted_elements"), _json_object("{s}"),
            object_of_texts("deleted_elements"), "({s})::jsonb"),
    _Column("write_time", "timestamptz NOT NULL", "bigint", micros("write_time"), _TIMESTAMP),
    _Column("write_time_us", "bigint NOT NULL", "bigint", column("write_time_us")),
    _Column("partition_key", "bytea NOT NULL", "bytea", _bytea("partition_key")),
    _Column("token", "bigint", "bigint", column("token")),
    _Column("generation", "timestamptz", "bigint", micros("generation"), _TIMESTAMP),
    _Column("change_id", "text NOT NULL", "text", column("change_id")),
    _Column("kafka_time", "timestamptz NOT NULL", "bigint", micros("kafka_time"), _TIMESTAMP),
    _Column("source", "jsonb NOT NULL", "text", _json_text("source"), "({s})::jsonb"),
)
LOG_KEY = ("keyspace", "table", "cdc$stream_id", "cdc$time", "cdc$batch_seq_no")

DEAD_LETTER_COLUMNS: tuple[_Column, ...] = (
    _Column("topic", "text NOT NULL", "text", column("topic")),
    _Column("partition", "integer NOT NULL", "integer", column("partition")),
    _Column("offset", "bigint NOT NULL", "bigint", column("offset")),
    _Column("reason", "text NOT NULL", "text", column("reason")),
    _Column("detail", "text NOT NULL", "text", column("detail")),
    _Column("kafka_time", "timestamptz NOT NULL", "bigint", micros("kafka_time"), _TIMESTAMP),
    _Column("key", "bytea", "bytea", _bytea("key")),
    _Column("value", "bytea", "bytea", _bytea("value")),
    _Column("keyspace", "text", "text", column("keyspace")),
    _Column("table", "text", "text", column("table")),
    _Column("write_time_us", "bigint", "bigint", column("write_time_us")),
    _Column("change_id", "text", "text", column("change_id")),
)
DEAD_LETTER_KEY = ("topic", "partition", "offset", "reason")

# JSON cannot hold NaN or the infinities, jsonb cannot hold \u0000: json_value sends texts that may
# contain them (rare) to lenient_jsonb, which quotes the non-finite numbers or, failing that, keeps the
# text as a JSON string. Only lenient_jsonb pays for a subtransaction.
_JSON_FUNCTIONS = (
    r"""CREATE OR REPLACE FUNCTION {schema}.lenient_jsonb(v text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $body$
BEGIN
    RETURN v::jsonb;
EXCEPTION WHEN others THEN
    BEGIN
        RETURN regexp_replace(v, '(^|[\[,:\s])(-?Infinity|NaN)(?=[\],}\s]|$)', '\1"\2"', 'g')::jsonb;
    EXCEPTION WHEN others THEN
        RETURN to_jsonb(v);
    END;
END
$body$""",
    r"""CREATE OR REPLACE FUNCTION {schema}.json_value(v text) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $body$
SELECT CASE WHEN v ~ '(NaN|Infinity|\\u0000)' THEN {schema}.lenient_jsonb(v) ELSE v::jsonb END
$body$""",
)


def _table_ddl(qualified: str, columns: tuple[_Column, ...], key: tuple[str, ...], extra: str = "") -> str:
    body = ", ".join(f"{ident(c.name)} {c.type}" for c in columns)
    return f"CREATE TABLE IF NOT EXISTS {qualified} ({body}{extra}, PRIMARY KEY ({', '.join(map(ident, key))}))"


def schema_statements(schema: str, log: bool = True) -> list[str]:
    """The DDL of every table of the sink, safe to repeat; without `log`, all but the log's (a mirror's)."""
    s = ident(schema)
    return [
        f"CREATE SCHEMA IF NOT EXISTS {s}",
        *([_table_ddl(f"{s}.cdc_log", LOG_COLUMNS, LOG_KEY)] if log else []),
        _table_ddl(f"{s}.dead_letters", DEAD_LETTER_COLUMNS, DEAD_LETTER_KEY,
                   ", app_id text NOT NULL, batch_id bigint NOT NULL"),
        f"CREATE TABLE IF NOT EXISTS {s}.batches (app_id text NOT NULL, batch_id bigint NOT NULL,"
        " rows bigint NOT NULL, dead_letters bigint NOT NULL, written_at timestamptz NOT NULL DEFAULT now(),"
        " offsets text, PRIMARY KEY (app_id, batch_id))",
        # A ledger created before it kept offsets: its rows keep none, and are taken on trust.
        f"ALTER TABLE {s}.batches ADD COLUMN IF NOT EXISTS offsets text",
        # Before batches went in part by part, each was one transaction: every row held is finished.
        f"ALTER TABLE {s}.batches ADD COLUMN IF NOT EXISTS done boolean NOT NULL DEFAULT true",
        f"CREATE TABLE IF NOT EXISTS {s}.batch_parts (app_id text NOT NULL, batch_id bigint NOT NULL,"
        " part text NOT NULL, rows bigint NOT NULL, written_at timestamptz NOT NULL DEFAULT now(),"
        " PRIMARY KEY (app_id, batch_id, part))",
        f"CREATE TABLE IF NOT EXISTS {s}.cdc_generation_timestamps (time timestamptz PRIMARY KEY,"
        " expired timestamptz)",
        f"CREATE TABLE IF NOT EXISTS {s}.cdc_streams_descriptions_v2 (time timestamptz NOT NULL,"
        " range_end bigint NOT NULL, streams bytea[] NOT NULL, PRIMARY KEY (time, range_end))",
        # Each table's resolved timestamp, per writer (spark.delivery.resolved): the newest stays.
        f"CREATE TABLE IF NOT EXISTS {s}.resolved (app_id text NOT NULL, keyspace_name text NOT NULL, table_name text"
        " NOT NULL, resolved timestamptz NOT NULL, resolved_us bigint NOT NULL, PRIMARY KEY (app_id,"
        " keyspace_name, table_name))",
        *(f.replace("{schema}", s) for f in _JSON_FUNCTIONS),
    ]


def staging_statement(table: str, columns: tuple[_Column, ...]) -> str:
    body = ", ".join(f"{ident(name)} {c.staged}" for c in columns for name in c.staged_names())
    return f"CREATE TEMPORARY TABLE {ident(table)} ({body}) ON COMMIT DROP"


def copy_statement(table: str, columns: tuple[_Column, ...]) -> str:
    names = ", ".join(ident(name) for c in columns for name in c.staged_names())
    return f"COPY {ident(table)} ({names}) FROM STDIN (FORMAT csv)"


def insert_statement(schema: str, target: str, staging: str, columns: tuple[_Column, ...],
                     extra: tuple[str, ...] = (), *, lenient: bool = False, plain: bool = False) -> str:
    """INSERT … SELECT from the staging table, each value through its column's load expression;
    `extra` target columns take query parameters. `lenient` parses every JSON text as lenient_jsonb;
    `plain`, for a part of plain rows (`plain_rows`), loads their plain values by casts."""
    s = ident(schema)
    json = f"{s}.lenient_jsonb" if lenient else f"{s}.json_value"

    def value(column: _Column) -> str:
        name, load = column.name, column.load
        if plain:
            name, load = column.staged_names()[-1], column.plain_load or load
        return load.replace("{s}", f"s.{ident(name)}").replace("{json}", json)

    names = [ident(c.name) for c in columns] + [ident(n) for n in extra]
    values = [value(c) for c in columns] + ["%s"] * len(extra)
    return (f"INSERT INTO {s}.{ident(target)} ({', '.join(names)}) SELECT {', '.join(values)}"
            f" FROM {ident(staging)} s ON CONFLICT DO NOTHING")


@dataclass(frozen=True)
class Inserts:
    """The statements that take a staging table into its target, tried in turn until one takes the part:
    for a part of plain rows the plain one first (`plain_rows`), then the usual one, then the same with
    every JSON text lenient (a part holding text that is not JSON)."""

    plain: str | None
    usual: str
    lenient: str

    @classmethod
    def of(cls, schema: str, target: str, staging: str, columns: tuple[_Column, ...], extra: tuple[str, ...] = ()
           ) -> Inserts:
        def statement(**options) -> str:
            return insert_statement(schema, target, staging, columns, extra, **options)

        has_plain = any(c.plain or c.plain_load for c in columns)
        return cls(statement(plain=True) if has_plain else None, statement(), statement(lenient=True))

    def in_turn(self, plain: bool) -> list[str]:
        return [self.plain, self.usual, self.lenient] if plain and self.plain else [self.usual, self.lenient]


def _csv_chunks(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: one CSV chunk per Arrow batch, formatted on the executor."""
    for batch in batches:
        if batch.num_rows:
            yield pa.RecordBatch.from_arrays([pa.array([csv_chunk(batch)], pa.binary())], ["csv"])


def staged_columns(frame: DataFrame, columns: tuple[_Column, ...],
                   plain: Callable[[], Column] | None = None) -> DataFrame:
    """`frame`'s values in the staging table's column order, as the CSV carries them; with `plain`,
    whether the row is plain after them (for the executor, not staged)."""
    return frame.select(*_staged_expressions(columns, plain))


@functools.lru_cache(maxsize=32)
def _staged_expressions(columns: tuple[_Column, ...], plain: Callable[[], Column] | None) -> tuple[Column, ...]:
    """`staged_columns`' expressions, built once (calls into the driver's JVM) and reused by every batch."""
    values = [value for c in columns for value in c.staged_values()]
    flag = [] if plain is None else [plain()]
    return tuple(v.alias(f"c{i}") for i, v in enumerate(values + flag))


def staged(frame: DataFrame, columns: tuple[_Column, ...]) -> DataFrame:
    """`frame` as CSV chunks in the staging table's column order."""
    return staged_columns(frame, columns).mapInArrow(_csv_chunks, _CSV_SCHEMA)


def connect(dsn: str) -> Any:
    import psycopg

    return psycopg.connect(dsn, autocommit=True)


def load(conn: Any, chunks: Iterable[bytes], columns: tuple[_Column, ...], staging: str,
         inserts: Inserts, parameters: tuple, plain: bool = False) -> int:
    """COPY CSV `chunks` into a staging table and insert it, in the open transaction; how many rows were
    new. `plain`: the rows are (`plain_rows`). A part holding text that is not JSON is inserted with that
    text kept as JSON strings, rather than failing on every replay."""
    import psycopg

    conn.execute(staging_statement(staging, columns))
    with conn.cursor() as cursor:
        with cursor.copy(copy_statement(staging, columns)) as copy:
            for chunk in chunks:
                copy.write(chunk)
        *tried, last = inserts.in_turn(plain)
        for statement in tried:
            try:
                with conn.transaction():  # a savepoint, to go on to the next after the error
                    cursor.execute(statement, parameters or None)
                return cursor.rowcount
            except psycopg.errors.DataError as exc:
                if statement is inserts.usual:
                    log.warning("invalid JSON in a batch, stored as text: %s", exc)
        cursor.execute(last, parameters or None)
        return cursor.rowcount


@dataclass(frozen=True)
class Ledger:
    """The statements of the batch ledger and of the ledger of parts (`parts`) of one writer."""

    schema: str
    app_id: str

    def claim(self, conn: Any, batch_id: int, offsets: str) -> bool:
        """Claim the batch (step 1 of `parts`): whether it is to be written, False for a replay of a
        finished one. A batch claimed by another writer's open transaction is waited for."""
        s = ident(self.schema)
        if conn.execute(f"INSERT INTO {s}.batches (app_id, batch_id, rows, dead_letters, offsets, done)"
                        " VALUES (%s, %s, 0, 0, %s, false) ON CONFLICT DO NOTHING",
                        (self.app_id, batch_id, offsets)).rowcount:
            return True
        held, done = conn.execute(f"SELECT offsets, done FROM {s}.batches WHERE app_id = %s AND batch_id = %s",
                                  (self.app_id, batch_id)).fetchone()
        return held_to_write(self.app_id, batch_id, offsets, held, done)

    def claim_part(self, conn: Any, batch_id: int, part: str) -> bool:
        """Claim a part in the open transaction: False when an attempt has committed it (one whose
        transaction is open is waited for)."""
        return conn.execute(f"INSERT INTO {ident(self.schema)}.batch_parts (app_id, batch_id, part, rows)"
                            " VALUES (%s, %s, %s, 0) ON CONFLICT DO NOTHING",
                            (self.app_id, batch_id, part)).rowcount == 1

    def record_part(self, conn: Any, batch_id: int, part: str, written: int) -> None:
        conn.execute(f"UPDATE {ident(self.schema)}.batch_parts SET rows = %s"
                     " WHERE app_id = %s AND batch_id = %s AND part = %s", (written, self.app_id, batch_id, part))

    def write_part(self, dsn: str, batch_id: int, part: str, write: Callable[[Any], int]) -> int:
        """Step 2 for one part, in one transaction: claimed, written (`write(conn)`: how many rows were new)
        and recorded; 0 when an attempt has committed it."""
        with connect(dsn) as conn, conn.transaction():
            if not self.claim_part(conn, batch_id, part):
                return 0
            written = write(conn)
            self.record_part(conn, batch_id, part, written)
            return written

    def finish(self, conn: Any, batch_id: int, dead_letters: int) -> int:
        """Mark the batch finished in the open transaction (step 3): its rows the sum of its parts'; that sum."""
        s = ident(self.schema)
        (rows,) = conn.execute(f"UPDATE {s}.batches SET rows = (SELECT coalesce(sum(rows), 0) FROM {s}.batch_parts"
                               " WHERE app_id = %s AND batch_id = %s), dead_letters = %s, done = true"
                               " WHERE app_id = %s AND batch_id = %s RETURNING rows",
                               (self.app_id, batch_id, dead_letters, self.app_id, batch_id)).fetchone()
        return rows


@dataclass(frozen=True)
class LogParts:
    """Writes a batch's log rows from the executors, a part per partition (step 2 of `parts`, run by
    `write_each_part` on the Arrow batches); picklable, so Spark ships it to them."""

    dsn: str = field(repr=False)
    ledger: Ledger
    batch_id: int
    inserts: Inserts

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> int | None:
        chunks, plain = [], True
        for batch in batches:  # the staged columns, then whether each row is plain
            if batch.num_rows:
                *staged, flags = batch.columns
                chunks.append(csv_chunk(pa.RecordBatch.from_arrays(staged, batch.schema.names[:-1])))
                plain = plain and pc.all(flags).as_py()
        if not chunks:
            return None
        return self.ledger.write_part(self.dsn, self.batch_id, part_digest(chunks), lambda conn: load(
            conn, chunks, LOG_COLUMNS, PostgresSink.LOG_STAGING, self.inserts, (), plain))


class PostgresSink(Sink):
    """CDC log rows, dead letters and generations in PostgreSQL.

    dsn: a libpq connection string or URI. schema: where the tables live. app_id: names the writer
    in the batch ledger, so two streaming queries writing the same tables keep separate ledgers.
    """

    LOG_STAGING = "ringtail_log_staging"
    _DEAD_LETTER_STAGING = "ringtail_dead_letter_staging"
    # Its write is one action over the batch's partitions, on the executors.
    reads_batch_whole = True

    def __init__(self, dsn: str, schema: str = "ringtail", app_id: str = "ringtail") -> None:
        self.dsn = dsn
        self.schema = schema
        self.app_id = app_id
        self.ledger = Ledger(schema, app_id)
        self._insert_rows = Inserts.of(schema, "cdc_log", self.LOG_STAGING, LOG_COLUMNS)
        self._insert_dead_letters = Inserts.of(schema, "dead_letters", self._DEAD_LETTER_STAGING, DEAD_LETTER_COLUMNS,
                                               ("app_id", "batch_id"))

    def _connect(self):
        return connect(self.dsn)

    def prepare(self) -> None:
        with self._connect() as conn, conn.transaction():
            # Concurrent CREATE … IF NOT EXISTS can still collide in the catalog; take turns.
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('ringtail.postgres_sink.prepare'))")
            for statement in self._schema_statements():
                conn.execute(statement)

    def _schema_statements(self) -> list[str]:
        return schema_statements(self.schema)

    def close(self) -> None:
        pass  # each batch opens and closes its own connections

    def write(self, batch: MicroBatch) -> None:
        if self.claim(batch):
            self.write_parts(batch)
            self.finish(batch)

    def claim(self, batch: MicroBatch) -> bool:
        """Step 1 of `parts`: whether the batch is to be written (False: a replay of a finished one)."""
        with self._connect() as conn:
            return self.ledger.claim(conn, batch.id, batch.offsets)

    def write_parts(self, batch: MicroBatch) -> None:
        """Step 2: the batch's rows, from the executors, a part per partition."""
        parts = LogParts(self.dsn, self.ledger, batch.id, self._insert_rows)
        write_each_part(staged_columns(batch.rows, LOG_COLUMNS, plain_rows), parts)

    def finish(self, batch: MicroBatch) -> None:
        """Step 3: the dead letters, and the batch marked finished with its counts, in one transaction."""
        with self._connect() as conn, conn.transaction():
            letters = 0
            if batch.has_dead_letters():
                chunks = (chunk.csv for chunk in staged(batch.dead_letters, DEAD_LETTER_COLUMNS).toLocalIterator())
                letters = load(conn, chunks, DEAD_LETTER_COLUMNS, self._DEAD_LETTER_STAGING,
                               self._insert_dead_letters, (self.app_id, batch.id))
            written = self.ledger.finish(conn, batch.id, letters)
        log.info("batch %d: %d log rows and %d dead letters inserted", batch.id, written, letters)

    def publish_resolved(self, resolved: list[Resolved]) -> None:
        with self._connect() as conn, conn.transaction(), conn.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO {ident(self.schema)}.resolved (app_id, keyspace_name, table_name, resolved, resolved_us)"
                " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (app_id, keyspace_name, table_name) DO UPDATE SET"
                " resolved = EXCLUDED.resolved, resolved_us = EXCLUDED.resolved_us"
                " WHERE resolved.resolved_us < EXCLUDED.resolved_us",
                resolved_rows(self.app_id, resolved))

    def publish_generations(self, generations: Generations) -> None:
        timestamps, streams = generation_rows(generations)
        s = ident(self.schema)
        with self._connect() as conn, conn.transaction(), conn.cursor() as cursor:
            # Ranges before timestamps, as ScyllaDB publishes; one transaction makes both visible at once.
            cursor.executemany(
                f"INSERT INTO {s}.cdc_streams_descriptions_v2 (time, range_end, streams) VALUES (%s, %s, %s)"
                " ON CONFLICT (time, range_end) DO UPDATE SET streams = EXCLUDED.streams"
                " WHERE cdc_streams_descriptions_v2.streams IS DISTINCT FROM EXCLUDED.streams",
                streams,
            )
            cursor.executemany(
                f"INSERT INTO {s}.cdc_generation_timestamps (time, expired) VALUES (%s, %s)"
                " ON CONFLICT (time) DO UPDATE SET expired = coalesce(EXCLUDED.expired,"
                " cdc_generation_timestamps.expired)",
                timestamps,
            )
