"""Cassandra sink: ScyllaDB-style CDC log tables next to their base tables.

Rows of base table ``ks.t`` go to ``ks.t_scylla_cdc_log`` (see :mod:`.log_table`), created on first
sight and widened (ALTER TABLE ADD) when the base table gained columns. Every write is an upsert of
a row whose primary key (stream id, cdc$time, cdc$batch_seq_no) is derived from the change, with
the change's write time as cell timestamp; a replayed batch rewrites the same cells, which makes
the sink exactly once by idempotence, with no ledger.

Rows are converted and written on the executors (each Python worker keeps one driver session),
so the JSON decoding scales with the cluster. A log table's partition is a stream id, which a node's
changes share (one per vnode and shard): the rows of one partition go together in unlogged batches
(one mutation each, below Cassandra's batch size warning), so a task sends a request per few kilobytes
of rows rather than one per row. The native core encodes those requests' statements straight from the
Arrow batch (`.native`); the Python encoder (`LogRowEncoder` and the driver's ``bind``, the reference)
binds the rows it leaves, and those of a batch refused as invalid, sent again one by one. Each task first
checks that the sink has laid out every table and column its rows name; one that meets a new one writes
nothing more, and ``write`` lays them out (creates or widens the log tables) and writes the batch again, so
it reads `rows` twice then, and the caller should persist the batch.

A row that cannot be converted (a value not of its column's type), or that Cassandra refuses as
invalid, becomes a dead letter with reason ``unwritable`` rather than failing the batch on every
replay; timeouts and the like fail the task, which Spark retries. Dead letters go to
``<keyspace>.dead_letters`` keyed by (topic, partition, offset, reason). Call ``prepare`` before
the first ``write``.
"""
from __future__ import annotations

import atexit
import functools
import logging
import threading
from dataclasses import dataclass
from collections.abc import Mapping as MappingABC
from typing import Any, Iterable, Iterator, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
from cassandra import ConsistencyLevel, InvalidRequest
from cassandra.concurrent import execute_concurrent, execute_concurrent_with_args
from cassandra.query import UNSET_VALUE, BatchStatement, BatchType
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from schemas.runtime.access import CassandraSecurity
from schemas.tables.loader import read_table
from spark.streams.generations import Generations
from spark.streams.storage import DEFAULT_KEYSPACE, GenerationStore, Replication

from ..contract import MicroBatch, Resolved, Sink, resolved_rows
from ..log_table import LOG_SUFFIX, LogLayout, LogRowEncoder, quote
from .native import EncodedBatch, encoded_batches, native_insert, send_encoded_batches

log = logging.getLogger(__name__)

DEAD_LETTERS_TABLE = "dead_letters"
RESOLVED_TABLE = "resolved"  # each table's resolved timestamp, per writer (spark.delivery.resolved)
_RESOLVED_DDL = ("CREATE TABLE IF NOT EXISTS {table} (app_id text, keyspace_name text, table_name text,"
                 " resolved timestamp, resolved_us bigint, PRIMARY KEY (app_id, keyspace_name, table_name))")
UNWRITABLE = "unwritable"
DEFAULT_LOG_TTL = 86_400  # ScyllaDB's default cdc ttl; 0 keeps log rows forever
_CHUNK = 2_000  # rows bound and sent per execute_concurrent call
# The bound values a batch of one partition's rows holds at most: below batch_size_warn_threshold's
# default (5 KiB), which Cassandra compares with the batch's mutation (the values and a little more).
_BATCH_BYTES = 4_096
_DETAIL_LIMIT = 2_000

_DEAD_LETTER_COLUMNS: tuple[tuple[str, str], ...] = (
    ("topic", "text"), ("partition", "int"), ("offset", "bigint"), ("reason", "text"),
    ("detail", "text"), ("kafka_time", "timestamp"), ("key", "blob"), ("value", "blob"),
    ("keyspace", "text"), ("table", "text"), ("write_time_us", "bigint"), ("change_id", "text"),
    ("batch_id", "bigint"),
)
_DEAD_LETTER_DDL = (
    "CREATE TABLE IF NOT EXISTS {table} ("
    + ", ".join(f"{quote(n)} {t}" for n, t in _DEAD_LETTER_COLUMNS)
    + ', PRIMARY KEY (("topic", "partition"), "offset", "reason"))'
)
_DEAD_LETTER_INSERT = (
    "INSERT INTO {table} (" + ", ".join(quote(n) for n, _ in _DEAD_LETTER_COLUMNS) + ") VALUES ("
    + ", ".join("?" * len(_DEAD_LETTER_COLUMNS)) + ")"
)

_COLUMNS_QUERY = "SELECT column_name, type FROM system_schema.columns WHERE keyspace_name = %s AND table_name = %s"

def _write_projection() -> list:
    """What the writers read of a LOG_ROW row (a function: columns need an active Spark context)."""
    return [
        *(F.col(n) for n in (
        "keyspace", "table", "cdc$stream_id", "cdc$time", "cdc$batch_seq_no", "cdc$operation", "cdc$ttl",
            "cdc$end_of_batch", "key", "columns", "deleted_columns", "deleted_elements", "write_time_us", "change_id",
        )),
        F.unix_millis("kafka_time").alias("kafka_time_ms"),
        F.col("source.topic").alias("source_topic"),
        F.col("source.partition").alias("source_partition"),
        F.col("source.offset").alias("source_offset"),
    ]


def _dead_letter_projection() -> list:
    """DEAD_LETTER columns in the order of the dead letters table (batch_id aside)."""
    return [
        "topic", "partition", "offset", "reason", "detail", F.unix_millis("kafka_time").alias("kafka_time"),
        "key", "value", "keyspace", "table", "write_time_us", "change_id",
    ]
# What a write task gives back: its counts (the first row), and a row for each table or column its rows name
# that the job gave no layout for (the column null for the table itself).
_TASK_RESULT = pa.schema([("written", pa.int64()), ("unwritable", pa.int64()), ("keyspace", pa.string()),
                          ("table", pa.string()), ("column", pa.string())])
_TASK_RESULT_DDL = "written long, unwritable long, keyspace string, table string, column string"


def _schema_lag(error: InvalidRequest) -> bool:
    """A refusal from a node that has not learnt of the log table or its new columns yet: retried
    with the task, not a fault of the row."""
    message = str(error).lower()
    return "unconfigured table" in message or "undefined column" in message


# A row to write, its bound INSERT, and the bytes of its values.
Bound = tuple[Mapping[str, Any], Any, int]
# A request (a bound INSERT, a batch of them, or an `EncodedBatch`) and the rows it writes.
Request = tuple[list[Mapping[str, Any]], Any]
# A base table, as (keyspace, table), and its rows of an Arrow batch.
TableRows = tuple[tuple[str, str], pa.RecordBatch]


def _unset_nulls(values: Iterable[Any]) -> tuple:
    return tuple(UNSET_VALUE if v is None else v for v in values)


class RowWriter:
    """Writes LOG_ROW rows through one session: encoders and prepared statements are cached per layout."""

    def __init__(self, session: Any, *, keyspace: str, consistency: int, concurrency: int) -> None:
        self.session = session
        self.consistency = consistency
        self.concurrency = concurrency
        send_encoded_batches(session)
        self._dead_letters = self._prepare(_DEAD_LETTER_INSERT.format(table=f"{quote(keyspace)}.{DEAD_LETTERS_TABLE}"))
        self._encoders: dict[LogLayout, tuple[LogRowEncoder, Any, Any]] = {}

    def _prepare(self, cql: str) -> Any:
        statement = self.session.prepare(cql)
        statement.consistency_level = self.consistency
        return statement

    def _encoder(self, layout: LogLayout) -> tuple[LogRowEncoder, Any, Any]:
        """(the reference encoder, the prepared INSERT, the native maker of its values or None) of `layout`."""
        found = self._encoders.get(layout)
        if found is None:
            found = self._encoders[layout] = (LogRowEncoder(layout), self._prepare(layout.insert_statement()),
                                              native_insert(layout))
        return found

    def write(self, rows: Iterable[Mapping[str, Any]], layouts: Mapping[tuple[str, str], LogLayout],
              batch_id: int) -> tuple[int, int]:
        """(rows written, rows made dead letters) of rows as mappings, each bound by the reference."""
        failed: list = []
        return self._write(self._bound_requests(rows, layouts, batch_id, failed), layouts, failed, batch_id)

    def write_tables(self, tables: Iterable[TableRows], layouts: Mapping[tuple[str, str], LogLayout],
                     batch_id: int) -> tuple[int, int]:
        """`write` of an Arrow batch split by table (`tables`): each table's rows in requests the native core
        encoded, those it leaves (and all of them without a native core) bound by the reference."""
        failed: list = []
        return self._write(self._batch_requests(tables, layouts, batch_id, failed), layouts, failed, batch_id)

    def _write(self, requests: Iterable[Request], layouts: Mapping[tuple[str, str], LogLayout], failed: list,
               batch_id: int) -> tuple[int, int]:
        written, pending, rows = 0, [], 0
        for request in requests:
            pending.append(request)
            rows += len(request[0])
            if rows >= _CHUNK:
                written += self._send(pending, layouts, failed, batch_id)
                pending, rows = [], 0
        written += self._send(pending, layouts, failed, batch_id)
        if failed:
            execute_concurrent_with_args(self.session, self._dead_letters, failed, concurrency=self.concurrency)
            log.warning("%d log rows could not be written and went to the dead letters", len(failed))
        return written, len(failed)

    def _bound_requests(self, rows: Iterable[Mapping[str, Any]], layouts: Mapping[tuple[str, str], LogLayout],
                        batch_id: int, failed: list, limit: int = _BATCH_BYTES) -> Iterator[Request]:
        """The rows bound by the reference, as requests (`_requests`) of at most `limit` bytes of values, made
        `_CHUNK` rows at a time."""
        pending: list[Bound] = []
        for item in self._bind(rows, layouts, batch_id, failed):
            pending.append(item)
            if len(pending) >= _CHUNK:
                yield from _requests(pending, self.consistency, limit)
                pending = []
        yield from _requests(pending, self.consistency, limit)

    def _bind(self, rows: Iterable[Mapping[str, Any]], layouts: Mapping[tuple[str, str], LogLayout], batch_id: int,
              failed: list) -> Iterator[Bound]:
        """Each row bound; a row that cannot be bound joins `failed` as a dead letter."""
        for row in rows:
            layout = layouts.get((row["keyspace"], row["table"]))
            if layout is None:
                missing = LookupError(f"{row['keyspace']}.{row['table']} has no schema and no log table")
                failed.append(self._dead_letter(row, missing, batch_id))
                continue
            encoder, insert, _ = self._encoder(layout)  # outside the try: a failed prepare is retried, not the row's
            try:
                bound = insert.bind(encoder.encode(row))
            except Exception as exc:  # any conversion or binding failure is this row's alone
                failed.append(self._dead_letter(row, exc, batch_id))
                continue
            yield row, bound, sum(len(v) for v in bound.values if isinstance(v, bytes))

    def _batch_requests(self, tables: Iterable[TableRows], layouts: Mapping[tuple[str, str], LogLayout],
                        batch_id: int, failed: list) -> Iterator[Request]:
        for table, table_rows in tables:
            layout = layouts.get(table)
            _, insert, native = self._encoder(layout) if layout is not None else (None, None, None)
            if native is None:
                yield from self._bound_requests(table_rows.to_pylist(), layouts, batch_id, failed)
                continue
            requests, left = encoded_batches(native, table_rows, insert.query_id, _BATCH_BYTES)
            if left:
                yield from self._bound_requests(table_rows.take(left).to_pylist(), layouts, batch_id, failed)
            for routing_key, statements, written in requests:
                yield ([_BatchRow(table_rows, i) for i in written],
                       EncodedBatch(statements, routing_key, layout.keyspace, self.consistency))

    def _send(self, requests: list[Request], layouts: Mapping[tuple[str, str], LogLayout], failed: list,
              batch_id: int) -> int:
        """Sends the requests; a batch the server refuses as invalid is sent again row by row (bound by the
        reference, which binds the same bytes), and a row it refuses joins `failed`; any other error (timeout,
        unavailable) raises so that Spark retries the task."""
        written = 0
        while requests:
            results = execute_concurrent(self.session, [(statement, None) for _, statement in requests],
                                         concurrency=self.concurrency, raise_on_first_error=False)
            again: list[Request] = []
            for (rows, _), (success, outcome) in zip(requests, results):
                if success:
                    written += len(rows)
                elif not isinstance(outcome, InvalidRequest) or _schema_lag(outcome):
                    raise outcome
                elif len(rows) > 1:
                    again += self._bound_requests(rows, layouts, batch_id, failed, limit=0)  # which of them: each alone
                else:
                    failed.append(self._dead_letter(rows[0], outcome, batch_id))
            requests = again
        return written

    @staticmethod
    def _dead_letter(row: Mapping[str, Any], exc: Exception, batch_id: int) -> tuple:
        detail = f"{type(exc).__name__}: {exc}"[:_DETAIL_LIMIT]
        return _unset_nulls((
            row.get("source_topic"), row.get("source_partition"), row.get("source_offset"), UNWRITABLE, detail,
            row.get("kafka_time_ms"), None, None, row.get("keyspace"), row.get("table"), row.get("write_time_us"),
            row.get("change_id"), batch_id,
        ))

    def write_dead_letters(self, rows: Iterable[Sequence[Any]], batch_id: int) -> int:
        count, chunk = 0, []
        for row in rows:
            chunk.append(_unset_nulls((*row, batch_id)))
            if len(chunk) >= _CHUNK:
                count += self._send_dead_letters(chunk)
                chunk = []
        return count + self._send_dead_letters(chunk)

    def _send_dead_letters(self, chunk: list) -> int:
        if chunk:
            execute_concurrent_with_args(self.session, self._dead_letters, chunk, concurrency=self.concurrency)
        return len(chunk)


class _BatchRow(MappingABC):
    """A row of an Arrow batch, made a dict only when read (for its dead letter, or to bind it alone)."""

    __slots__ = ("rows", "index", "_row")

    def __init__(self, rows: pa.RecordBatch, index: int) -> None:
        self.rows, self.index, self._row = rows, index, None

    def _dict(self) -> dict[str, Any]:
        if self._row is None:
            self._row = self.rows.slice(self.index, 1).to_pylist()[0]
        return self._row

    def __getitem__(self, name: str) -> Any:
        return self._dict()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._dict())

    def __len__(self) -> int:
        return len(self._dict())


def _tables(rows: pa.RecordBatch) -> Iterator[TableRows]:
    """The rows of each base table in `rows`: (keyspace, table) and its rows."""
    pairs = pa.Table.from_batches([rows.select(["keyspace", "table"])]).group_by(
        ["keyspace", "table"], use_threads=False).aggregate([])
    if pairs.num_rows == 1:
        yield (pairs["keyspace"][0].as_py(), pairs["table"][0].as_py()), rows
        return
    for keyspace, table in zip(pairs["keyspace"].to_pylist(), pairs["table"].to_pylist()):
        yield (keyspace, table), rows.filter(pc.and_(pc.equal(rows["keyspace"], keyspace),
                                                     pc.equal(rows["table"], table)))


def _requests(pending: list[Bound], consistency: int, limit: int) -> list[Request]:
    """The bound rows as requests: the rows of one partition of one table in unlogged batches of at most
    `limit` bytes of values, a row alone as itself."""
    partitions: dict[tuple, list] = {}
    for item in pending:
        bound = item[1]
        partitions.setdefault((bound.prepared_statement.query_id, bound.routing_key), []).append(item)
    groups = []
    for items in partitions.values():
        size, rows = 0, []
        for item in items:
            if rows and size + item[2] > limit:
                groups.append(rows)
                size, rows = 0, []
            rows.append(item)
            size += item[2]
        groups.append(rows)
    requests: list[Request] = []
    for rows in groups:
        if len(rows) == 1:
            requests.append(([rows[0][0]], rows[0][1]))
            continue
        batch = BatchStatement(BatchType.UNLOGGED, consistency_level=consistency)
        for _, bound, _ in rows:
            batch.add(bound)
        requests.append(([row for row, _, _ in rows], batch))
    return requests


@dataclass(frozen=True)
class _Connection:
    """Where executors connect and how (it keys the per-process cache)."""

    hosts: tuple[str, ...]
    port: int
    security: CassandraSecurity | None


@dataclass(frozen=True)
class _WriteJob:
    connection: _Connection
    keyspace: str
    consistency: int
    concurrency: int
    layouts: tuple[LogLayout, ...]
    # The names each table's rows may hold and be written by `layouts` (a table without a layout: its rows
    # become dead letters).
    known: Mapping[tuple[str, str], frozenset[str]]
    batch_id: int


_WRITERS: dict[tuple, RowWriter] = {}
_WRITERS_LOCK = threading.Lock()


def _executor_writer(job: _WriteJob) -> RowWriter:
    """One session and writer per Python worker process, reused by every task it runs."""
    key = (job.connection, job.keyspace, job.consistency, job.concurrency)
    with _WRITERS_LOCK:
        writer = _WRITERS.get(key)
        if writer is None or writer.session.is_shutdown:
            from schemas.runtime.session import connect

            cluster, session = connect(job.connection.hosts, job.connection.port, job.connection.security)
            atexit.register(cluster.shutdown)
            writer = _WRITERS[key] = RowWriter(session, keyspace=job.keyspace, consistency=job.consistency,
                                               concurrency=job.concurrency)
    return writer


def _write_partition(job: _WriteJob, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    layouts = {(layout.keyspace, layout.base): layout for layout in job.layouts}
    written = unwritable = 0
    unlaid: set[tuple[str, str, str | None]] = set()
    for batch in batches:
        if not batch.num_rows:
            continue
        tables = list(_tables(batch))
        unlaid |= _unlaid(tables, job.known)
        if unlaid:  # the driver lays them out and writes the batch again: the rest of the task only looks
            continue
        w, u = _executor_writer(job).write_tables(tables, layouts, job.batch_id)
        written += w
        unwritable += u
    items = sorted(unlaid, key=lambda item: (item[0], item[1], item[2] or ""))
    yield pa.RecordBatch.from_pydict({
        "written": [written] + [0] * len(items), "unwritable": [unwritable] + [0] * len(items),
        "keyspace": [None] + [i[0] for i in items], "table": [None] + [i[1] for i in items],
        "column": [None] + [i[2] for i in items],
    }, schema=_TASK_RESULT)


def _unlaid(tables: Iterable[TableRows],
            known: Mapping[tuple[str, str], frozenset[str]]) -> set[tuple[str, str, str | None]]:
    """The tables (`_tables`) `known` lacks, as (keyspace, table, None), and the columns their rows name that it
    lacks, as (keyspace, table, column)."""
    out: set[tuple[str, str, str | None]] = set()
    for table, table_rows in tables:
        names = known.get(table)
        if names is None:
            out.add((*table, None))
            continue
        named = pa.chunked_array([_entries(table_rows.column(c)) for c in ("columns", "deleted_columns",
                                                                           "deleted_elements")], pa.string())
        out.update((*table, name) for name in pc.unique(named).to_pylist() if name not in names)
    return out


def _named(unlaid: Mapping[tuple[str, str], set[str]]) -> str:
    """What a task reported, for the log: each new table, and each known table's new columns."""
    return "; ".join(f"{keyspace}.{table}" + (f" columns {', '.join(sorted(columns))}" if columns else " (a new table)")
                     for (keyspace, table), columns in sorted(unlaid.items()))


def _entries(column: pa.Array) -> pa.Array:
    """A map column's keys or a list column's values, of the column's rows only (a slice's too)."""
    start, end = column.offsets[0].as_py(), column.offsets[-1].as_py()
    return (column.keys if isinstance(column, pa.MapArray) else column.values).slice(start, end - start)


class CassandraSink(Sink):
    """ScyllaDB-style CDC log tables in Cassandra; dead letters and generations in `keyspace`.

    session: an open cassandra-driver session for the driver's work (schema, DDL, dead letters,
        generations); without one the sink connects to `hosts`:`port` itself.
    hosts, port, security: where executors connect, and how (authentication, TLS); by default the
        session's contact points.
    keyspace: ringtail's keyspace for dead letters, generation tables and resolved timestamps.
    app_id: the writer, whose resolved timestamps are its own.
    ttl: default TTL of new log tables in seconds, as ScyllaDB's cdc ``ttl`` option; 0 keeps rows.
    on_executors: convert and write rows on the executors; False does it on the driver.
    """

    def __init__(
        self,
        session: Any = None,
        *,
        hosts: Sequence[str] | None = None,
        port: int | None = None,
        keyspace: str = DEFAULT_KEYSPACE,
        replication: Replication = None,
        ttl: int = DEFAULT_LOG_TTL,
        consistency: int = ConsistencyLevel.LOCAL_QUORUM,
        concurrency: int = 64,
        on_executors: bool = True,
        security: CassandraSecurity | None = None,
        app_id: str = "ringtail",
    ) -> None:
        if ttl < 0:
            raise ValueError(f"ttl must be non-negative, got {ttl}")
        self._cluster = None
        if session is None:
            from schemas.runtime.session import connect

            self._cluster, session = connect(list(hosts or ("127.0.0.1",)), port or 9042, security)
        if hosts is None:
            hosts = tuple(str(h) for h in session.cluster.contact_points)
        self.session = session
        self.keyspace, self.app_id = keyspace, app_id
        self.replication = replication
        self.ttl = ttl
        self.consistency = consistency
        self.concurrency = concurrency
        self.on_executors = on_executors
        self._connection = _Connection(tuple(hosts), port or session.cluster.port, security)
        self._store = GenerationStore(session, keyspace)
        self._writer: RowWriter | None = None
        self._layouts: dict[tuple[str, str], LogLayout | None] = {}
        self._unknown: dict[tuple[str, str], frozenset[str]] = {}

    def close(self) -> None:
        if self._cluster is not None:
            self._cluster.shutdown()

    def prepare(self) -> None:
        self._store.create_schema(self.replication)
        self.session.execute(_DEAD_LETTER_DDL.format(table=f"{quote(self.keyspace)}.{DEAD_LETTERS_TABLE}"))
        self.session.execute(_RESOLVED_DDL.format(table=f"{quote(self.keyspace)}.{RESOLVED_TABLE}"))

    @property
    def writer(self) -> RowWriter:
        if self._writer is None:
            self._writer = RowWriter(self.session, keyspace=self.keyspace, consistency=self.consistency,
                                     concurrency=self.concurrency)
        return self._writer

    def write(self, batch: MicroBatch) -> None:
        rows, dead_letters, batch_id = batch.rows, batch.dead_letters, batch.id
        projected = rows.select(*_write_projection())
        if self.on_executors:
            written, unwritable, unlaid = self._write_on_executors(projected, batch_id)
            if unlaid:
                # Tables or columns new to this sink: laid out (log tables created or widened), then the batch
                # is written again whole; the rows the first pass wrote get the same cells again.
                log.info("batch %d names tables or columns new to this sink (%s): writing it again once they are"
                         " laid out", batch_id, _named(unlaid))
                for (keyspace, table), columns in unlaid.items():
                    self.layout(keyspace, table, columns)
                written, unwritable, unlaid = self._write_on_executors(projected, batch_id)
                if unlaid:  # every name was made known above: a fault of this sink, not of the rows
                    raise RuntimeError(f"batch {batch_id}: still no layout for {sorted(unlaid)}")
        else:
            referenced = _referenced(rows)
            layouts = {key: self.layout(*key, columns) for key, columns in referenced.items()}
            # Tables without a layout still go through the writer, whose rows become dead letters.
            written, unwritable = self.writer.write(
                (row.asDict() for row in projected.toLocalIterator()),
                {key: layout for key, layout in layouts.items() if layout is not None}, batch_id,
            ) if referenced else (0, 0)
        # Known once the pass above read the batch: a batch without dead letters is not read again for them.
        letters = self.writer.write_dead_letters(
            (tuple(row) for row in dead_letters.select(*_dead_letter_projection()).toLocalIterator()),
            batch_id) if batch.has_dead_letters() else 0
        log.info("batch %d: %d log rows written, %d unwritable, %d dead letters", batch_id, written, unwritable,
                 letters)

    def _write_on_executors(self, rows: DataFrame, batch_id: int) -> tuple[int, int, dict[tuple[str, str], set[str]]]:
        """One pass of the executors over the rows with the layouts this sink knows: (rows written, rows made
        dead letters, and the tables and columns the rows name that it does not know). A task meeting one of
        those writes nothing more, and its other batches' names are reported too."""
        job = _WriteJob(self._connection, self.keyspace, self.consistency, self.concurrency,
                        tuple(layout for layout in self._layouts.values() if layout is not None),
                        {key: self._known(key) for key in self._layouts}, batch_id)
        written = unwritable = 0
        unlaid: dict[tuple[str, str], set[str]] = {}
        for row in rows.mapInArrow(functools.partial(_write_partition, job), _TASK_RESULT_DDL).collect():
            written += row.written
            unwritable += row.unwritable
            if row.table is not None:
                columns = unlaid.setdefault((row.keyspace, row.table), set())
                if row.column is not None:
                    columns.add(row.column)
        return written, unwritable, unlaid

    def _known(self, key: tuple[str, str]) -> frozenset[str]:
        """The columns of a table this sink has laid out that its rows may name: its log's, and those it no
        longer has (whose values are skipped)."""
        layout = self._layouts[key]
        return (layout.data_names if layout else frozenset()) | self._unknown.get(key, frozenset())

    def layout(self, keyspace: str, table: str, columns: Iterable[str] = ()) -> LogLayout | None:
        """The log layout of base table `keyspace`.`table`, its log table created or widened so it
        has every column in `columns`; reloaded from the cluster when it lacks one of them."""
        key = (keyspace, table)
        needed = frozenset(columns)
        if key in self._layouts and needed <= self._known(key):
            return self._layouts[key]
        layout = self._load_layout(keyspace, table)
        if layout is not None:
            self._sync_log_table(layout)
        known = layout.data_names if layout else frozenset()
        unknown = (needed | self._unknown.get(key, frozenset())) - known
        if unknown - self._unknown.get(key, frozenset()):
            log.warning("%s.%s: no such column now, values skipped: %s", keyspace, table, ", ".join(sorted(unknown)))
        self._unknown[key] = unknown
        self._layouts[key] = layout
        return layout

    def _load_layout(self, keyspace: str, table: str) -> LogLayout | None:
        base, user_types = read_table(self.session, keyspace, table)
        if base is not None:
            return LogLayout.of_table(base, user_types)
        existing = self._log_columns(keyspace, table + LOG_SUFFIX)
        if existing:  # the base table was dropped; its log stays writable as it is
            return LogLayout.of_log_table(keyspace, table, existing, user_types)
        return None

    def _log_columns(self, keyspace: str, table: str) -> dict[str, str]:
        return {row.column_name: row.type for row in self.session.execute(_COLUMNS_QUERY, (keyspace, table))}

    def _sync_log_table(self, layout: LogLayout) -> None:
        existing = self._log_columns(layout.keyspace, layout.table)
        if not existing:
            log.info("creating %s.%s", layout.keyspace, layout.table)
            self.session.execute(layout.create_statement(self.ttl))
            existing = self._log_columns(layout.keyspace, layout.table)
        statement = layout.add_statement(existing)
        if statement is not None:
            log.info("widening %s.%s: %s", layout.keyspace, layout.table, statement)
            self.session.execute(statement)

    def publish_resolved(self, resolved: list[Resolved]) -> None:
        # Written at the resolved time itself: Cassandra keeps the newest, whatever order writers take.
        statement = self.session.prepare(
            f"INSERT INTO {quote(self.keyspace)}.{RESOLVED_TABLE}"
            " (app_id, keyspace_name, table_name, resolved, resolved_us) VALUES (?, ?, ?, ?, ?) USING TIMESTAMP ?")
        execute_concurrent_with_args(self.session, statement,
                                     [(*row, row[4]) for row in resolved_rows(self.app_id, resolved)],
                                     raise_on_first_error=True)

    def publish_generations(self, generations: Generations) -> None:
        for generation in generations.generations:
            if generation.description is not None:  # one known by timestamp only has nothing to publish
                self._store.publish(generation)


def _referenced(rows: DataFrame) -> dict[tuple[str, str], set[str]]:
    """The base tables in `rows` and the data columns their rows name (one small Spark job)."""
    names = F.array_distinct(F.concat(F.map_keys("columns"), F.col("deleted_columns"), F.map_keys("deleted_elements")))
    out: dict[tuple[str, str], set[str]] = {}
    for row in rows.select("keyspace", "table", F.explode_outer(names).alias("column")).distinct().collect():
        columns = out.setdefault((row["keyspace"], row["table"]), set())
        if row["column"] is not None:
            columns.add(row["column"])
    return out
