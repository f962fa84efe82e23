"""Delta Lake tables on any Hadoop-compatible path (local disk by default).

Two layouts of the log. `log` (the default): one `cdc_log` table for every base table (partitioned by
keyspace and table), values as JSON text. `typed`: a table per base table, `typed/<keyspace>/<table>`,
in ScyllaDB's CDC log layout with every column in its own Spark type (`typed_log`); it gains columns
when its base table does (Delta's schema merge), and its names keep any character (column mapping by
name). Rows of a table that no longer exists and never had a typed log go to `cdc_log`, so none is lost.

A row the job read late (more than `dedup_watermark` after its write: `spark.delivery.pipeline`) may be a
replica's copy of a change logged long before: it is looked up in the table by its key first and
appended only when absent. In `cdc_log` the look-up reads only the files whose write times cover the
late rows' (Delta's file statistics); a typed log has no write-time column, and its look-up reads the
key columns of the whole table.

Every table is appended to with Delta's idempotent writes: the transaction carries (app id, batch id),
and Delta skips a write whose version it has already committed for that app id, so a replayed batch
adds nothing. The commit's user metadata keeps the batch's source offsets too (`ledger`): before an
append, the newest batch of the app id in the table's history is looked up (once per table), and a
batch Delta would skip that is not its replay is refused. Dead letters go to `dead_letters`.

A third layout, `mirror`, keeps no log: each base table's mirror, what `SELECT *` of it returns
(`mirror`).
"""
from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, get_args

import pyarrow as pa
from delta.tables import DeltaTable
from py4j.protocol import Py4JJavaError
from pyspark.errors import AnalysisException
from pyspark.errors.exceptions.captured import CapturedException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import ArrayType, BinaryType, LongType, StringType, StructField, StructType, TimestampType
from pyspark.util import inheritable_thread_target

from schemas.runtime.access import CassandraCluster
from schemas.runtime.session import connect
from schemas.tables.loader import read_table
from spark import rows as R
from spark.mirror.layout import MirrorLayout
from spark.mirror.tables import Layouts, merge_batch, prepare_tables
from spark.streams.generations import Generations

from ..contract import MicroBatch, Resolved, Sink, generation_rows, of_tables, resolved_rows
from .mirror import DeltaMirrorStore, known_mirrors
from ..layouts import MIRROR, Layout
from ..ledger import is_newest_replay
from ..mirror_parts import table_changes, table_counts
from ..log_table import typed_log_layout
from ..typed_log import TYPED_REFUSALS, TypedLog, typed_source

# File statistics of the log (set when Delta creates it) only for the times readers filter on: by
# default Delta computes them for the first 32 columns, a third of a write's time (the JSON text
# columns' minimums and maximums, which no query can use).
STATS_COLUMNS, LOG_STATS = "delta.dataSkippingStatsColumns", "write_time,write_time_us,kafka_time"
# Tables whose typed logs or mirrors a batch writes at once (`DeltaSink._each_table`).
CONCURRENT_TABLES = 4
# The key of ringtail's entry in a commit's user metadata: the app id, batch id and source offsets.
LEDGER = "ringtail"

# What identifies a change's row in `cdc_log` and in a typed log: `cdc$time` holds its write time and a
# digest of its content (and partition key), so every replica's copy has the same.
LOG_KEY = ("keyspace", "table", "partition_key", "cdc$time", "cdc$batch_seq_no")
TYPED_KEY = ("cdc$stream_id", "cdc$time", "cdc$batch_seq_no")
# (lowest, highest) write time in µs of a batch's late rows (of one table, for a typed log); None: none.
Span = tuple[int, int] | None

log = logging.getLogger(__name__)

TIMESTAMPS = StructType([StructField("time", TimestampType(), False), StructField("expired", TimestampType())])
RESOLVED = StructType([StructField("app_id", StringType(), False), StructField("keyspace_name", StringType(), False),
                       StructField("table_name", StringType(), False), StructField("resolved", TimestampType(), False),
                       StructField("resolved_us", LongType(), False)])
STREAMS = StructType([StructField("time", TimestampType(), False), StructField("range_end", LongType(), False),
                      StructField("streams", ArrayType(BinaryType()), False)])


def newest_batch(spark: SparkSession, path: str, app: str) -> tuple[int, str | None] | None:
    """The newest batch `app` committed to the table at `path`, with its offsets, from the commits' user
    metadata; read newest first, in growing windows (other writers' commits may come between)."""
    if not DeltaTable.isDeltaTable(spark, path):
        return None
    table = DeltaTable.forPath(spark, path)
    for limit in (100, 10_000, None):
        history = table.history(limit) if limit else table.history()
        commits = history.select("version", "userMetadata").orderBy(F.desc("version")).collect()
        for commit in commits:
            entry = _ledger_entry(commit.userMetadata)
            if entry.get("app") == app:
                return entry["batch"], entry["offsets"]
        if limit is None or len(commits) < limit:
            return None
    return None


def _span_columns() -> tuple:
    """The aggregates of the late rows' write-time span, as `_late_span` reads them."""
    late_time = F.when(F.col(R.LATE), F.col("write_time_us"))
    return F.min(late_time), F.max(late_time)


def _late_span(bounds) -> Span:
    low, high = bounds
    return None if low is None else (low, high)


def _ledger_entry(metadata: str | None) -> dict:
    """ringtail's entry in a commit's user metadata; {} in another writer's commit (any text)."""
    try:
        value = json.loads(metadata) if metadata else {}
    except ValueError:
        return {}
    return value.get(LEDGER, {}) if isinstance(value, dict) else {}


class DeltaSink(Sink):
    # A publication is a Delta commit of its own, about a second (bench/resolved.py).
    resolved_every = 30.0

    def __init__(self, spark: SparkSession, path: Path | str, app_id: str = "ringtail", layout: str = "log",
                 cluster: CassandraCluster | None = None, concurrent_tables: int = CONCURRENT_TABLES) -> None:
        """`cluster`: where the `typed` and `mirror` layouts read their base tables' schemas;
        `concurrent_tables`: how many tables' logs or mirrors those layouts write at once."""
        if layout not in get_args(Layout):
            raise ValueError(f"layout {layout!r}: one of {', '.join(get_args(Layout))}")
        if layout != "log" and cluster is None:
            raise ValueError(f"the {layout} layout needs the Cassandra cluster, for its tables' schemas")
        if concurrent_tables < 1:
            raise ValueError(f"concurrent_tables must be at least 1, got {concurrent_tables}")
        self.concurrent_tables = concurrent_tables
        self.spark = spark
        self.path = str(path).rstrip("/")
        self.app_id = app_id
        self.layout = layout
        self.cluster = cluster
        self._session = None
        # Each typed log as this sink last wrote it (Delta's schema merge keeps every column), so the table's
        # schema is read once per sink and its rows' expressions are built once per layout, not per batch.
        self._typed: dict[str, TypedLog] = {}
        self._resolved: dict[tuple, tuple] | None = None  # (app, keyspace, table) → this writer's newest row
        self.merges_cells = layout == MIRROR
        self._mirrors = Layouts(cluster) if layout == MIRROR else None
        self._prepared: dict[str, MirrorLayout] = {}
        # Per table: the newest batch of this app id it holds, with its offsets (None: none).
        self._newest: dict[str, tuple[int, str | None] | None] = {}
        self._primer: ThreadPoolExecutor | None = None  # `_prime_next_append`'s one thread
        # An append reads the batch in one action; a mirror reads it in several (the tables it holds, then
        # each table's changes).
        self.reads_batch_whole = layout != MIRROR

    def table(self, name: str) -> str:
        return f"{self.path}/{name}"

    def prepare(self) -> None:
        pass  # Delta creates a table with its first write

    def close(self) -> None:
        if self._session is not None:
            self._session.cluster.shutdown()
            self._session = None
        if self._mirrors is not None:
            self._mirrors.close()
        if self._primer is not None:
            self._primer.shutdown(cancel_futures=True)
            self._primer = None

    def _append(self, frame: DataFrame, name: str, batch: MicroBatch, *partitioning: str, **options: str) -> None:
        app = f"{self.app_id}:{name}"
        if name not in self._newest:
            self._newest[name] = newest_batch(self.spark, self.table(name), app)
        newest, offsets = self._newest[name] or (None, None)
        if is_newest_replay(app, batch.id, batch.offsets, newest, offsets):
            log.info("batch %d of %s is in %s already; skipped", batch.id, app, self.table(name))
            return
        metadata = json.dumps({LEDGER: {"app": app, "batch": batch.id, "offsets": batch.offsets}})
        (frame.write.format("delta").mode("append").partitionBy(*partitioning)
         .option("txnAppId", app).option("txnVersion", batch.id).option("userMetadata", metadata).options(**options)
         .save(self.table(name)))
        self._newest[name] = (batch.id, batch.offsets)
        self._prime_next_append(name)

    def _prime_next_append(self, name: str) -> None:
        """Have the table's state read for its next idempotent append, in the background. Delta 4.0 reads
        the versions of idempotent writes (set transactions) from the whole state of the snapshot a commit
        leaves, rebuilt by a Spark job: about 0.5 s of each small batch on two cores, on the batch's path. Rebuilt
        between batches, the next append finds it done (the snapshot stays Delta's current one until another
        commit). A failure is left to that append, which reads the state again."""
        if self._primer is None:
            self._primer = ThreadPoolExecutor(1, thread_name_prefix="ringtail-delta-primer")
        jvm, session, path = self.spark._jvm, self.spark._jsparkSession, self.table(name)

        def prime() -> None:
            try:
                jvm.org.apache.spark.sql.delta.DeltaLog.forTable(session, path).unsafeVolatileSnapshot().transactions()
            except Exception as exc:  # noqa: BLE001 - an optimisation only
                log.debug("reading the state of %s ahead of its next append failed: %s", path, exc)

        self._primer.submit(prime)

    def write(self, batch: MicroBatch) -> None:
        rows: DataFrame | None = batch.rows
        if self.layout == MIRROR:
            self._merge_batch(batch.rows)
            rows = None
        elif self.layout == "typed":
            rows = self._write_typed(batch)
        if rows is not None:
            late = F.col(R.LATE)
            span = _late_span(rows.agg(*_span_columns()).first())  # reads the batch: its one pass
            fresh = self._unheld(rows.where(~late).drop(R.LATE), rows.where(late).drop(R.LATE), "cdc_log",
                                 LOG_KEY, span)
            self._append(fresh, "cdc_log", batch, "keyspace", "table", **{STATS_COLUMNS: LOG_STATS})
        # Asked after the rows are written, whose read counted them: an empty append would still commit.
        if batch.has_dead_letters():
            self._append(batch.dead_letters, "dead_letters", batch)

    def purge(self) -> None:
        """Remove what has expired from every mirror under the path (on the driver: a few states)."""
        names = known_mirrors(self.spark, self.path)
        merge_batch(prepare_tables(self._mirrors, names, self._store_of), {}, purge=True)

    def _merge_batch(self, rows: DataFrame) -> None:
        """The batch's changes merged into each table's mirror on the executors (`DeltaMirrorStore.merged`),
        `concurrent_tables` tables at once; the driver plans and counts."""
        counts = table_counts(rows)
        now = int(time.time())

        def merge_table(layout: MirrorLayout, store: DeltaMirrorStore) -> None:
            result = store.merged(table_changes(rows, layout), now).persist()
            try:
                states, written = result.agg(F.count("state"), F.count("mirror")).first()
                if written:
                    store.replace(result.where(F.col("mirror").isNotNull()).select("mirror.*"))
                if states:
                    store.merge_states(result.where(F.col("state").isNotNull()).select("state.*"))
            finally:
                result.unpersist()
            log.info("mirror %s: %d changes merged; %d states and %d rows written", layout.qualified,
                     counts[(layout.keyspace, layout.table)], states, written)

        self._each_table([functools.partial(merge_table, *table)
                          for table in prepare_tables(self._mirrors, counts, self._store_of, counts)])

    def _each_table(self, tasks: list[Callable[[], Any]]) -> list[Any]:
        """What each task (one table's) returns, `concurrent_tables` of them run at once; the first failure is
        raised once every task has ended. A table's write is a few Spark jobs and a Delta commit, which the
        driver plans and commits one after the other: tables side by side keep the executors busy while it
        waits on each."""
        if len(tasks) <= 1:
            return [task() for task in tasks]
        with ThreadPoolExecutor(min(self.concurrent_tables, len(tasks)), thread_name_prefix="ringtail-tables") as pool:
            # Each thread takes the caller's Spark local properties (job group, description) and tags.
            inherit = inheritable_thread_target(self.spark)
            futures = [pool.submit(inherit(task)) for task in tasks]
        return [future.result() for future in futures]

    def _store_of(self, layout: MirrorLayout) -> DeltaMirrorStore:
        store = DeltaMirrorStore(self.spark, self.path, layout)
        # Its tables are created, or altered, when the base table is new to this sink or has changed.
        if self._prepared.get(layout.qualified) != layout:
            store.prepare()
            self._prepared[layout.qualified] = layout
        return store

    def _unheld(self, fresh: DataFrame, late: DataFrame | None, name: str, key: Sequence[str], span: Span
                ) -> DataFrame:
        """`fresh` rows and those `late` rows the table `name` does not hold (by `key`), to append; `span` None:
        there are no late rows (`late` may be None)."""
        if span is None:
            return fresh
        path = self.table(name)
        if not DeltaTable.isDeltaTable(self.spark, path):
            return fresh.unionByName(late)
        held = self.spark.read.format("delta").load(path)
        if "write_time_us" in held.columns:  # the log's file statistics leave out the other files
            held = held.where(F.col("write_time_us").between(*span))
        late, held = late.alias("late"), held.select(*(F.col(f"`{c}`") for c in key)).alias("held")
        same = [F.col(f"late.`{c}`").eqNullSafe(F.col(f"held.`{c}`")) for c in key]
        return fresh.unionByName(late.join(held, functools.reduce(lambda a, b: a & b, same), "left_anti"))

    def _write_typed(self, batch: MicroBatch) -> DataFrame | None:
        """Each table's rows to its typed log; the rows of tables without one (for `cdc_log`), or None."""
        rows = batch.rows
        self._schema_session()  # opened before the tables' threads, which share it
        spans = rows.groupBy("keyspace", "table").agg(*_span_columns()).collect()
        written = self._each_table([functools.partial(self._write_typed_table, batch, keyspace, table,
                                                      _late_span((low, high)))
                                    for keyspace, table, low, high in spans])
        untyped = [(keyspace, table) for (keyspace, table, _, _), has_log in zip(spans, written) if not has_log]
        return of_tables(rows, untyped) if untyped else None

    def _write_typed_table(self, batch: MicroBatch, keyspace: str, table: str, span: Span) -> bool:
        """One table's rows of the batch to its typed log; False: it has none (its base table is gone)."""
        name = f"typed/{keyspace}/{table}"
        typed = self._typed_log(keyspace, table, name)
        if typed is None:
            log.warning("%s.%s no longer exists and has no typed log: its rows go to cdc_log", keyspace, table)
            return False
        late = F.col(R.LATE)
        frame = batch.rows.where((F.col("keyspace") == keyspace) & (F.col("table") == table))
        # The late rows' frame only when there are some: Spark analyses each typed frame, a tenth of a second.
        parts = [frame.where(~late)] if span is None else [frame.where(~late), frame.where(late)]
        try:
            self._append_typed(name, span, batch, *(typed.frame(part) for part in parts))
        except (CapturedException, Py4JJavaError) as exc:
            if not any(refusal in str(exc) for refusal in TYPED_REFUSALS):
                raise
            log.warning("%s.%s: a value of batch %d does not fit the typed log as Spark reads it; making the"
                        " batch's rows in Python", keyspace, table, batch.id)
            self._append_typed(name, span, batch,
                               *(typed_source(part).mapInArrow(typed.encode(), typed.schema) for part in parts))
        return True

    def _append_typed(self, name: str, span: Span, batch: MicroBatch, fresh: DataFrame, late: DataFrame | None = None
                      ) -> None:
        """A batch's fresh rows of one table, and its late ones when `span` holds some (as its typed log's rows),
        to the typed log."""
        self._append(self._unheld(fresh, late, name, TYPED_KEY, span), name, batch, mergeSchema="true",
                     **{"delta.columnMapping.mode": "name"})

    def _schema_session(self):
        """The Cassandra session the typed layout reads its base tables' schemas with, opened once."""
        if self._session is None:
            _, self._session = connect(*self.cluster)
        return self._session

    def _typed_log(self, keyspace: str, table: str, name: str) -> TypedLog | None:
        """The base table's columns and those its typed log already has (a column dropped since keeps
        taking the values of rows written before the drop); None: neither exists."""
        base, user_types = read_table(self._schema_session(), keyspace, table)
        typed = self._typed.get(name)
        existing = typed.layout if typed is not None else None
        if existing is None:
            try:
                existing = TypedLog.of_schema(keyspace, table, self.spark.read.format("delta").load(
                    self.table(name)).schema, user_types).layout
            except AnalysisException:  # no typed log yet
                pass
        layout = typed_log_layout(base, user_types, existing)
        if layout is None:
            return None
        if typed is None or typed.layout != layout:
            typed = self._typed[name] = TypedLog(layout)
        return typed

    def publish_generations(self, generations: Generations) -> None:
        timestamps, streams = generation_rows(generations)
        # Both at once: each is a Spark job and a Delta commit that one driver thread plans and commits.
        with ThreadPoolExecutor(2, thread_name_prefix="ringtail-generations") as pool:
            written = [pool.submit(self._rewrite, name, rows, schema)
                       for name, rows, schema in (("cdc_generation_timestamps", timestamps, TIMESTAMPS),
                                                  ("cdc_streams_descriptions_v2", streams, STREAMS))]
        for table in written:
            table.result()

    def publish_resolved(self, resolved: list[Resolved]) -> None:
        """Each table's resolved timestamp in the small table `resolved`: this writer's rows replaced whole
        (`replaceWhere`, so other writers' stay as they are) with the newest of each."""
        path = self.table("resolved")
        exists = DeltaTable.isDeltaTable(self.spark, path)
        if self._resolved is None:  # what this writer published before: read once, then kept
            held = (self.spark.read.format("delta").load(path).where(F.col("app_id") == self.app_id).collect()
                    if exists else [])
            self._resolved = {tuple(row)[:3]: tuple(row) for row in held}
        newer = {row[:3]: row for row in resolved_rows(self.app_id, resolved)
                 if row[:3] not in self._resolved or self._resolved[row[:3]][4] < row[4]}
        if not newer:
            return
        rows = {**self._resolved, **newer}
        table = pa.Table.from_pylist([dict(zip(RESOLVED.names, row)) for row in rows.values()],
                                     schema=to_arrow_schema(RESOLVED))
        write = self.spark.createDataFrame(table, RESOLVED).coalesce(1).write.format("delta")
        if exists:
            quoted = self.app_id.replace("'", "''")
            write = write.mode("overwrite").option("replaceWhere", f"app_id = '{quoted}'")
        else:
            write = write.mode("append")
        write.save(path)
        self._resolved = rows

    def _rewrite(self, name: str, rows: list[tuple], schema: StructType) -> None:
        """A small table rewritten whole (a repeated publication leaves the same content), as one file."""
        path = self.table(name)
        # Handed to Spark as Arrow: a third less time than a list of rows, which Spark reads as an RDD.
        columns = to_arrow_schema(schema)
        table = pa.Table.from_pylist([dict(zip(columns.names, row)) for row in rows], schema=columns)
        write = self.spark.createDataFrame(table, schema).coalesce(1).write.format("delta")
        if DeltaTable.isDeltaTable(self.spark, path):
            write.mode("overwrite").option("overwriteSchema", "true").save(path)
        else:
            # Creating it by an append spares the overwrite's search of the (empty) table for files to remove.
            # Two writers creating it at once cannot both commit: the second's table metadata conflicts.
            write.mode("append").save(path)
