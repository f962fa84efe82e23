"""Every sink writing the same log rows, side by side in one run, each beside its floor.

    python bench/sinks.py [--rows N] [--repeat R] [--sinks delta,delta-mirror,…] [--held H] [--tables T]
                          [--concurrent-tables C] [--workers W]

Input: N log rows (default 50,000, about a second of capture; the job's batches of a backlog hold up to
200,000 changes, `max_changes_per_trigger`, as `--rows 200000` measures) in the job's `LOG_ROW` layout — a
table (`ringtail_bench.orders`, created in Cassandra) of an int key, a text, a bigint and a set<text> column,
one insert each, with every metadata column set and one of 16 stream ids (as a node of 16 vnodes gives, one
stream each); with `--tables T`, spread evenly over T such tables (`orders_0` … `orders_<T-1>`), as a batch
of a keyspace's many tables is (`--concurrent-tables C`: how many of them the Delta sink writes at once) —
built once as a persisted Spark DataFrame (local[2], or W workers of the local stack's Spark cluster:
`bench/cluster.py`), so
each sink is timed on its own write only: `sink.write` of a micro-batch of those rows and no dead
letters, from the call to its return, on a fresh target (a new Delta path, PostgreSQL schema, MariaDB
database, Cassandra keyspace, Kafka topic), after `prepare()` and one warm-up write of 1,000 rows that is
not counted. The sinks run in turns (A B C …, then again in the reverse order), R rounds (default 3);
each is shown as the median rows/s of its rounds with their range (min–max).

`delta` writes the one JSON log, `delta-typed` the table's typed log (`layout=typed`; `postgres-typed`,
`mysql-typed` likewise); `kafka` writes JSON values, `kafka-avro` Avro through the registry. The
`-mirror` sinks merge the same changes (each row carries its change's cells, as the job decodes them for
a mirror) into the table's mirror (`layout=mirror`): each an insert of a new row, whose state is looked
up, merged and written (with `--held H`, each mirror first holds H rows, keys 0 to H - 1 written an hour
before, given in untimed batches of 200,000 that each hold every so-many-th key: the measured changes then
update rows spread over all of the mirror's files, as a live mirror's changes do); `kafka-image` merges
them likewise into its state (in Delta, under the temporary directory) and produces each change's image
(`layout=image`), `http-image` posts them as JSON. HTTP posts to a local receiver
in this process that accepts every request and reads its body without parsing it (the floor of the JSON
encoding and the HTTP round trips, not of any real service, which parses on its own cores).

The floors, timed in the same turns on the same rows: `floor-delta`, a plain Delta append of the rows'
DataFrame; `floor-postgres`, a plain `COPY` of the rows (as the PostgreSQL sink stages them: CSV, made
before the clock starts) into a table without a key; `floor-mysql`, `LOAD DATA LOCAL INFILE` of the same
CSV into a MariaDB table without a key; `floor-delta-merge`, one Delta `MERGE` by key of the rows' values
(`k`, `v`, `n`, `tags`, made before the clock starts) into a table of 1,000 other rows (with `--held H`, of
the H rows a mirror holds, written as its are: each measured row then updates one), with the clauses and
table properties of the Delta mirror's, which makes two such `MERGE`s a batch (its rows, then their states)
after merging the changes; `floor-kafka`, a plain producer (acks=all, idempotent, as the
sink's) sending each row's JSON, made before the clock starts, and flushing; `floor-cassandra`, the Python
driver's `execute_concurrent` of a prepared INSERT per row (100 in flight) into a log table as the sink
makes it, with the values the sink binds, made before the clock starts. Needs the local stack
(`deploy/local/start`); prints figures, asserts nothing.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql.types import StringType, StructField, StructType  # noqa: E402

from cluster import add_workers_option, spark_placement  # noqa: E402 - bench/ is the script's directory
from deploy.local.endpoints import StackUnavailable  # noqa: E402
from services import stack_for_figures  # noqa: E402 - bench/ is the script's directory
from deploy.local.receiver import Receiver  # noqa: E402
from schemas.runtime.access import CassandraCluster  # noqa: E402
from spark import rows as R  # noqa: E402
from spark.delivery.pipeline import spark_session  # noqa: E402
from spark.job.config import JobSettings  # noqa: E402
from spark.sinks.contract import MicroBatch  # noqa: E402
from spark.sinks.registry import open_sink  # noqa: E402
from spark.sinks.settings import SinkContext  # noqa: E402

# Each a sink kind, with a variant of its settings after a dash; a floor, its target's plain load.
SINKS = ("delta", "delta-typed", "delta-mirror", "postgres", "postgres-typed", "postgres-mirror", "mysql",
         "mysql-typed", "mysql-mirror", "cassandra", "kafka", "kafka-avro", "kafka-image", "http", "http-image")
FLOORS = ("floor-delta", "floor-delta-merge", "floor-postgres", "floor-mysql", "floor-kafka", "floor-cassandra")
_VARIANTS = {"kafka-avro": {"format": "avro"}, "kafka-image": {"format": "avro", "layout": "image"},
             "http-image": {"layout": "image"},
             **{f"{sink}-{layout}": {"layout": layout} for sink in ("delta", "postgres", "mysql")
                for layout in ("typed", "mirror")}}
# The rows' source table; the Cassandra sink reads its schema to lay out the log table beside it.
BENCH_KEYSPACE = "ringtail_bench"
STREAMS = 16  # the stream ids of one node of 16 vnodes (the stack's), one stream per vnode
HELD_BATCH = 200_000  # the rows a mirror is given at a time before it is timed (`--held`)


def table_names(tables: int) -> list[str]:
    """The source tables the rows are spread over."""
    return ["orders"] if tables == 1 else [f"orders_{t}" for t in range(tables)]


def create_source_tables(stack, tables: int = 1) -> None:
    from schemas.runtime.session import connect

    cluster, session = connect([stack.cassandra_host], stack.cassandra_port)
    session.execute(f"CREATE KEYSPACE IF NOT EXISTS {BENCH_KEYSPACE} WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    for name in table_names(tables):
        session.execute(f"CREATE TABLE IF NOT EXISTS {BENCH_KEYSPACE}.{name} (k int PRIMARY KEY, v text, n bigint,"
                        " tags set<text>)")
    cluster.shutdown()


def log_rows(spark, count: int, offset: int = 0, stride: int = 1, age_us: int = 0, tables: int = 1):
    """`count` inserts of keys `offset`, `offset + stride`, …, written `age_us` before now, key k in table
    k mod `tables`."""
    names = table_names(tables)
    now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    micros = int(now.timestamp() * 1_000_000) - age_us
    streams = [uuid.uuid5(uuid.NAMESPACE_OID, f"stream {s}").bytes for s in range(STREAMS)]

    def row(i: int) -> tuple:
        k, written = offset + i * stride, micros + i
        cells = {"k": [], "s": False, "l": [written, 0, None], "d": None, "c": {
            "v": [written, 0, None, 0, f"value {k}"], "n": [written, 0, None, 0, k * 7],
            "tags": [written - 1, [["a", written, 0, None, 0, None], ["b", written, 0, None, 0, None]]]}}
        return (BENCH_KEYSPACE, names[k % tables], streams[k % STREAMS], str(uuid.uuid1()), 0, R.ROW_INSERT, None, True,
                json.dumps({"k": k}), {"v": json.dumps(f"value {k}"), "n": str(k * 7), "tags": '["a","b"]'},
                [], {}, now, written, k.to_bytes(4, "big"), k * 7919, now, f"{k:032x}", now,
                ("node1", 1, i * 40, 0, 0, "bench", 0, k, 1), json.dumps(cells))
    schema = StructType([*R.LOG_ROW.fields, StructField(R.CELLS, StringType())])
    return spark.createDataFrame([row(i) for i in range(count)], schema).repartition(2).persist()


def targets(stack, sink: str, run: str, tmp: Path, receiver_url: str) -> dict[str, str]:
    if sink == "delta":
        return {"path": str(tmp / run)}
    if sink == "postgres":
        return {"dsn": stack.postgres_dsn, "schema": run}
    if sink == "mysql":
        from spark.sinks.mysql.connection import connect_dsn

        conn = connect_dsn(stack.mysql_dsn)
        with conn.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE `{run}`")
        conn.close()
        return {"dsn": stack.mysql_dsn.rsplit("/", 1)[0] + f"/{run}"}
    if sink == "kafka":
        return {"topic": run}
    if sink == "http":
        return {"url": receiver_url}
    return {}


def cleanup(stack, sink: str, run: str) -> None:
    """Drop what a run created (Delta paths go with the temporary directory; a mirror lives in a schema
    or database named after the keyspace)."""
    if sink == "postgres":
        import psycopg

        with psycopg.connect(stack.postgres_dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {run}, {BENCH_KEYSPACE} CASCADE")
    elif sink == "mysql":
        from spark.sinks.mysql.connection import connect_dsn

        conn = connect_dsn(stack.mysql_dsn)
        with conn.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS `{run}`")
            cursor.execute(f"DROP DATABASE IF EXISTS `{BENCH_KEYSPACE}`")
        conn.close()
    elif sink == "cassandra":
        from schemas.runtime.session import connect

        cluster, session = connect([stack.cassandra_host], stack.cassandra_port)
        session.execute(f"DROP KEYSPACE IF EXISTS {run}")
        cluster.shutdown()
    elif sink == "kafka":
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
        made = [t for t in admin.list_topics(timeout=10).topics if t == run or t.startswith(f"{run}.")]
        for future in admin.delete_topics(made).values():
            future.result()


def csv_of(rows) -> bytes:
    """The rows as the PostgreSQL sink stages them (CSV, its staging columns), for the SQL floors."""
    from spark.sinks.postgres.log import LOG_COLUMNS, staged

    return b"".join(chunk.csv for chunk in staged(rows, LOG_COLUMNS).toLocalIterator())


def bound_values(stack, rows) -> tuple[object, list[list]]:
    """(the bench table's log layout, each row's values as the Cassandra sink binds them), for its floor."""
    from schemas.runtime.session import connect
    from schemas.tables.loader import read_table
    from spark.sinks.cassandra.sink import _write_projection
    from spark.sinks.log_table import LogLayout, LogRowEncoder

    cluster, session = connect([stack.cassandra_host], stack.cassandra_port)
    layout = LogLayout.of_table(*read_table(session, BENCH_KEYSPACE, "orders"))
    cluster.shutdown()
    encoder = LogRowEncoder(layout)
    return layout, [encoder.encode(row.asDict()) for row in rows.select(*_write_projection()).collect()]


def _delta_merge_seconds(rows, path: str, held: int) -> float:
    """Seconds of one `MERGE` of the rows' values into a Delta table as the mirror's (`floor-delta-merge`),
    which holds 1,000 other rows or, with `held`, keys 0 to `held` - 1 as a mirror does (`held_keys`)."""
    from delta.tables import DeltaTable

    from spark.sinks.delta.mirror import COLUMN_MAPPING

    def values(frame):
        return frame.select(F.get_json_object("key", "$.k").cast("int").alias("k"),
                            F.get_json_object(F.col("columns")["v"], "$").alias("v"),
                            F.col("columns")["n"].cast("bigint").alias("n"),
                            F.from_json(F.col("columns")["tags"], "array<string>").alias("tags"),
                            F.lit(True).alias("write"))

    def held_values(keys: range):
        frame = rows.sparkSession.range(keys.start, keys.stop, keys.step, 2).select(F.col("id").cast("int").alias("k"))
        return frame.select("k", F.concat(F.lit("value "), F.col("k").cast("string")).alias("v"),
                            (F.col("k").cast("bigint") * 7).alias("n"), F.array(F.lit("a"), F.lit("b")).alias("tags"))

    source = values(rows).persist()
    source.count()
    if held:
        for keys in held_keys(held):
            held_values(keys).write.format("delta").mode("append").options(**COLUMN_MAPPING).save(path)
    else:
        target = values(rows.limit(1_000)).withColumn("k", F.col("k") + 10_000_000).drop("write")
        target.write.format("delta").options(**COLUMN_MAPPING).save(path)
    columns = {c: f"s.{c}" for c in ("k", "v", "n", "tags")}
    started = time.perf_counter()
    (DeltaTable.forPath(rows.sparkSession, path).alias("t").merge(source.alias("s"), "t.k = s.k")
     .whenMatchedDelete("NOT s.write").whenMatchedUpdate(set=columns).whenNotMatchedInsert("s.write", values=columns)
     .execute())
    seconds = time.perf_counter() - started
    source.unpersist()
    return seconds


def floor(stack, name: str, rows, csv: bytes, values: list[bytes], run: str, tmp: Path,
          bound: tuple[object, list[list]] | None = None, held: int = 0) -> float:
    """Seconds of the floor `name`: its target's plain load of the same rows (`bound`: `bound_values`)."""
    from spark.sinks.postgres.log import LOG_COLUMNS, ident

    if name == "floor-delta":
        started = time.perf_counter()
        rows.write.format("delta").mode("append").save(str(tmp / run))
        return time.perf_counter() - started
    if name == "floor-delta-merge":
        return _delta_merge_seconds(rows, str(tmp / run), held)
    if name == "floor-postgres":
        import psycopg

        columns = ", ".join(f"{ident(name)} {c.staged}" for c in LOG_COLUMNS for name in c.staged_names())
        with psycopg.connect(stack.postgres_dsn) as conn:
            conn.execute(f"CREATE TABLE {run} ({columns})")
            conn.commit()
            started = time.perf_counter()
            with conn.cursor().copy(f"COPY {run} FROM STDIN (FORMAT csv)") as copy:
                copy.write(csv)
            conn.commit()
            seconds = time.perf_counter() - started
            conn.execute(f"DROP TABLE {run}")
        return seconds
    if name == "floor-mysql":
        import pymysql

        file = tmp / f"{run}.csv"
        file.write_bytes(csv)
        parts = urlsplit(stack.mysql_dsn)
        conn = pymysql.connect(host=parts.hostname, port=parts.port, user=parts.username, password=parts.password or "",
                               database=parts.path.strip("/"), local_infile=True, charset="utf8mb4")
        staged = [c.staged for c in LOG_COLUMNS for _ in c.staged_names()]
        columns = ", ".join(f"`c{i}` {'BIGINT' if kind in ('bigint', 'integer', 'smallint') else 'LONGTEXT'}"
                            for i, kind in enumerate(staged))
        with conn.cursor() as cursor:
            cursor.execute(f"CREATE TABLE {run} ({columns})")
            started = time.perf_counter()
            cursor.execute(f"LOAD DATA LOCAL INFILE '{file}' INTO TABLE {run} CHARACTER SET utf8mb4 FIELDS "
                           "TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' ESCAPED BY ''")
            conn.commit()
            seconds = time.perf_counter() - started
            cursor.execute(f"DROP TABLE {run}")
        conn.close()
        return seconds
    if name == "floor-kafka":
        from confluent_kafka import Producer
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
        for future in admin.create_topics([NewTopic(run, 3, 1)]).values():  # as the sink makes its topic
            future.result()
        failed: list = []
        producer = Producer({"bootstrap.servers": stack.kafka_bootstrap, "acks": "all", "enable.idempotence": True,
                             "linger.ms": 5, "compression.type": "lz4"})
        started = time.perf_counter()
        for value in values:
            while True:
                try:
                    producer.produce(run, value, on_delivery=lambda error, _: error and failed.append(error))
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.flush()
        seconds = time.perf_counter() - started
        admin.delete_topics([run])
        if failed:
            raise RuntimeError(f"the plain producer failed to deliver {len(failed)} values: {failed[0]}")
        return seconds
    if name == "floor-cassandra":
        from cassandra.concurrent import execute_concurrent_with_args

        from schemas.runtime.session import connect
        from spark.sinks.cassandra.sink import DEFAULT_LOG_TTL

        layout, bound_rows = bound
        layout = dataclasses.replace(layout, keyspace=run)
        cluster, session = connect([stack.cassandra_host], stack.cassandra_port)
        session.execute(f"CREATE KEYSPACE {run} WITH replication ="
                        " {'class': 'SimpleStrategy', 'replication_factor': 1}")
        session.execute(layout.create_statement(DEFAULT_LOG_TTL))
        insert = session.prepare(layout.insert_statement())
        started = time.perf_counter()
        for ok, result in execute_concurrent_with_args(session, insert, bound_rows, concurrency=100):
            if not ok:
                raise result
        seconds = time.perf_counter() - started
        session.execute(f"DROP KEYSPACE {run}")
        cluster.shutdown()
        return seconds
    raise ValueError(name)


def held_keys(held: int) -> list[range]:
    """The keys of each batch of `held` rows, at most `HELD_BATCH` a batch, each every so-many-th key: a
    mirror's held rows (and the floor's) are written so, and any key range of the measured rows then falls
    in every batch's files."""
    batches = -(-held // HELD_BATCH)
    return [range(batch, held, batches) for batch in range(batches)]


def held_batches(spark, held: int, columns: list, write, empty, tables: int) -> int:
    """Write `held` rows, keys 0 to `held` - 1, an hour old, in the batches of `held_keys`; how many batches."""
    batches = held_keys(held)
    for batch, keys in enumerate(batches):
        rows = log_rows(spark, len(keys), keys.start, keys.step, age_us=3_600_000_000, tables=tables)
        write(MicroBatch(batch, rows.select(*columns), empty, lambda: 0, f"held {batch}", int(time.time() * 1000)))
        rows.unpersist()
    return len(batches)


def sink_seconds(spark, stack, sink: str, rows, warm, empty, run: str, tmp: Path, receiver, held: int = 0,
                 tables: int = 1, concurrent_tables: int | None = None) -> float:
    """Seconds of one sink's write of the rows (after its prepare, a mirror's `held` rows and a warm-up
    write)."""
    kind = sink.split("-")[0]
    config = {**targets(stack, kind, run, tmp, receiver.url), **_VARIANTS.get(sink, {})}
    if kind == "delta" and concurrent_tables is not None:
        config["concurrent_tables"] = concurrent_tables
    if config.get("layout") == "image":
        config["state_path"] = str(tmp / run)
    writer = open_sink(spark, kind, config, SinkContext(
        app_id=run, cluster=CassandraCluster((stack.cassandra_host,), stack.cassandra_port), keyspace=run,
        kafka=stack.kafka_bootstrap, registry=stack.registry_url))
    writer.prepare()
    # A log sink is given the log's columns (and whether each was read late, as the job gives it); a
    # mirror, the cells too.
    given = [R.CELLS] if writer.merges_cells else []
    columns = [F.col(f"`{name}`") for name in R.LOG_ROW.fieldNames() + given] + [F.lit(False).alias(R.LATE)]
    batches = held_batches(spark, held, columns, writer.write, empty, tables) if writer.merges_cells else 0
    writer.write(MicroBatch(batches, warm.select(*columns), empty, lambda: 0, "warm-up", int(time.time() * 1000)))
    started = time.perf_counter()
    writer.write(MicroBatch(batches + 1, rows.select(*columns), empty, lambda: 0, "measured",
                            int(time.time() * 1000)))
    seconds = time.perf_counter() - started
    writer.close()
    cleanup(stack, kind, run)
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sinks", default=",".join(SINKS + FLOORS),
                        help=f"a comma-separated subset of {', '.join(SINKS + FLOORS)}")
    parser.add_argument("--held", type=int, default=0,
                        help="rows each mirror (and image state) holds before it is timed (default 0: it starts"
                             " empty); the measured rows then update rows spread over all of them")
    parser.add_argument("--tables", type=int, default=1,
                        help="source tables the rows are spread over (default 1)")
    parser.add_argument("--concurrent-tables", type=int, default=None,
                        help="the Delta sink's concurrent_tables (default: the sink's own)")
    add_workers_option(parser)
    args = parser.parse_args()
    if args.tables < 1:
        parser.error("--tables: at least 1")
    if args.held and args.held < args.rows:
        parser.error("--held: at least --rows, so that every measured row updates a held one")
    chosen = tuple(s for s in SINKS + FLOORS if s in args.sinks.split(","))
    try:
        stack = stack_for_figures()
    except StackUnavailable as exc:
        print(exc, file=sys.stderr)
        return 2
    master, conf, placement = spark_placement(args.workers, {"spark.ui.enabled": "false"})
    spark = spark_session(JobSettings(spark_master=master, spark_jars=stack.spark_jars, spark_conf=conf))
    create_source_tables(stack, args.tables)
    receiver = Receiver(keep=False)
    rows = log_rows(spark, args.rows, tables=args.tables)
    warm = log_rows(spark, 1_000, offset=10_000_000, tables=args.tables)
    empty = spark.createDataFrame([], R.DEAD_LETTER)
    held = f"; each mirror holding {args.held:,} rows before it is timed" if args.held else ""
    tables = f" of {args.tables} tables" if args.tables > 1 else ""
    print(f"{rows.count()} rows{tables}, {rows.rdd.getNumPartitions()} partitions, {placement}{held}")
    log_only = rows.select(*(F.col(f"`{name}`") for name in R.LOG_ROW.fieldNames()))
    csv = csv_of(log_only) if {"floor-postgres", "floor-mysql"} & set(chosen) else b""
    values = [v.encode() for v in log_only.toJSON().collect()] if "floor-kafka" in chosen else []
    bound = bound_values(stack, rows) if "floor-cassandra" in chosen else None
    seconds: dict[str, list[float]] = {sink: [] for sink in chosen}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.repeat):
            for sink in chosen if round_ % 2 == 0 else tuple(reversed(chosen)):
                run = f"bench_{uuid.uuid4().hex[:10]}"
                took = (floor(stack, sink, log_only, csv, values, run, Path(tmp), bound, args.held) if sink in FLOORS
                        else sink_seconds(spark, stack, sink, rows, warm, empty, run, Path(tmp), receiver, args.held,
                                          args.tables, args.concurrent_tables))
                seconds[sink].append(took)
                print(f"round {round_ + 1} {sink:17s} {args.rows / took:10,.0f} rows/s ({took:.1f} s)", flush=True)
    receiver.close()
    requests, size = receiver.received
    if requests:
        print(f"the HTTP receiver read {requests:,} requests, {size / (1 << 20):,.1f} MiB of bodies")
    print(f"\nrows/s, median of {args.repeat} (min–max):")
    for sink in chosen:
        rates = sorted(args.rows / t for t in seconds[sink])
        print(f"  {sink:17s} {statistics.median(rates):10,.0f} ({rates[0]:,.0f}–{rates[-1]:,.0f})")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
