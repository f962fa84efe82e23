"""Every sink writing the same log rows, side by side in one run.

    python bench/sinks.py [--rows N] [--repeat R] [--sinks delta,delta-mirror,…]

Input: N log rows (default 50,000) in the job's `LOG_ROW` layout — a table (`ringtail_bench.orders`,
created in Cassandra) of an int key, a text, a bigint and a set<text> column, one insert each, with
stream ids and every metadata column set — built once as a persisted Spark DataFrame (local[2]), so
each sink is timed on its own write only: `sink.write` of a micro-batch of those rows and no dead
letters, from the call to its return, on a fresh target (a new Delta path, PostgreSQL schema, MariaDB
database, Cassandra keyspace, Kafka topic), after `prepare()` and one warm-up write of 1,000 rows that is not counted. The
sinks run in turns (A B C …, then again in the reverse order), R rounds; the best round of each is
shown as rows/s.

`delta` writes the one JSON log, `delta-typed` the table's typed log (`layout=typed`; `postgres-typed`,
`mysql-typed` likewise); `kafka` writes JSON values, `kafka-avro` Avro through the registry. The
`-mirror` sinks merge the same changes (each row carries its change's cells, as the job decodes them for
a mirror) into the table's mirror (`layout=mirror`): each an insert of a new row, whose state is looked
up, merged and written. HTTP posts to a local receiver in this process that accepts every request (the
floor of the JSON encoding and the HTTP round trips, not of any real service). Needs the local stack
(`deploy/local/start`); prints figures, asserts nothing.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from pyspark.sql.types import StringType, StructField, StructType  # noqa: E402

from connector.access import CassandraCluster  # noqa: E402
from deploy.local.endpoints import StackUnavailable, connect_stack  # noqa: E402
from spark.job import rows as R  # noqa: E402
from spark.job.config import JobSettings  # noqa: E402
from spark.job.pipeline import spark_session  # noqa: E402
from spark.job.sinks import MicroBatch, open_sink  # noqa: E402
from spark.job.sinks.settings import SinkContext  # noqa: E402
from deploy.local.receiver import Receiver  # noqa: E402

# Each a sink kind, with a variant of its settings after a dash.
SINKS = ("delta", "delta-typed", "delta-mirror", "postgres", "postgres-typed", "postgres-mirror", "mysql", "mysql-typed",
         "mysql-mirror", "cassandra", "kafka", "kafka-avro", "http")
_VARIANTS = {"kafka-avro": {"format": "avro"},
             **{f"{sink}-{layout}": {"layout": layout} for sink in ("delta", "postgres", "mysql")
                for layout in ("typed", "mirror")}}
# The rows' source table; the Cassandra sink reads its schema to lay out the log table beside it.
BENCH_KEYSPACE = "ringtail_bench"


def create_source_table(stack) -> None:
    from connector.schema.session import connect

    cluster, session = connect([stack.cassandra_host], stack.cassandra_port)
    session.execute(f"CREATE KEYSPACE IF NOT EXISTS {BENCH_KEYSPACE} WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute(f"CREATE TABLE IF NOT EXISTS {BENCH_KEYSPACE}.orders (k int PRIMARY KEY, v text, n bigint,"
                    " tags set<text>)")
    cluster.shutdown()


def log_rows(spark, count: int, offset: int = 0):
    now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    micros = int(now.timestamp() * 1_000_000)

    def row(i: int) -> tuple:
        k, written = offset + i, micros + i
        cells = {"k": [], "s": False, "l": [written, 0, None], "d": None, "c": {
            "v": [written, 0, None, 0, f"value {k}"], "n": [written, 0, None, 0, k * 7],
            "tags": [written - 1, [["a", written, 0, None, 0, None], ["b", written, 0, None, 0, None]]]}}
        return (BENCH_KEYSPACE, "orders", k.to_bytes(16, "big"), str(uuid.uuid1()), 0, R.ROW_INSERT, None, True,
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
        from spark.job.sinks.mysql.log import connect_dsn

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
        from spark.job.sinks.mysql.log import connect_dsn

        conn = connect_dsn(stack.mysql_dsn)
        with conn.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS `{run}`")
            cursor.execute(f"DROP DATABASE IF EXISTS `{BENCH_KEYSPACE}`")
        conn.close()
    elif sink == "cassandra":
        from connector.schema.session import connect

        cluster, session = connect([stack.cassandra_host], stack.cassandra_port)
        session.execute(f"DROP KEYSPACE IF EXISTS {run}")
        cluster.shutdown()
    elif sink == "kafka":
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
        for future in admin.delete_topics([run, f"{run}.ringtail", f"{run}.dead-letters"]).values():
            future.result()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--sinks", default=",".join(SINKS), help=f"a comma-separated subset of {', '.join(SINKS)}")
    args = parser.parse_args()
    chosen = tuple(s for s in SINKS if s in args.sinks.split(","))
    try:
        stack = connect_stack()
    except StackUnavailable as exc:
        print(exc, file=sys.stderr)
        return 2
    spark = spark_session(JobSettings(spark_master="local[2]", spark_jars=stack.spark_jars,
                                      spark_conf={"spark.ui.enabled": "false"}))
    create_source_table(stack)
    receiver = Receiver()
    rows, warm = log_rows(spark, args.rows), log_rows(spark, 1_000, offset=10_000_000)
    empty = spark.createDataFrame([], R.DEAD_LETTER)
    print(f"{rows.count()} rows, {rows.rdd.getNumPartitions()} partitions, local[2]")
    best: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.repeat):
            for sink in chosen if round_ % 2 == 0 else tuple(reversed(chosen)):
                run = f"bench_{uuid.uuid4().hex[:10]}"
                kind = sink.split("-")[0]
                config = {**targets(stack, kind, run, Path(tmp), receiver.url), **_VARIANTS.get(sink, {})}
                writer = open_sink(spark, kind, config, SinkContext(
                    app_id=run, cluster=CassandraCluster((stack.cassandra_host,), stack.cassandra_port), keyspace=run,
                    kafka=stack.kafka_bootstrap, registry=stack.registry_url))
                writer.prepare()
                # A log sink is given the log's columns; a mirror, the cells too.
                given = [R.CELLS] if writer.merges_cells else []
                columns = [f"`{name}`" for name in R.LOG_ROW.fieldNames() + given]
                writer.write(MicroBatch(0, warm.select(*columns), empty, lambda: 0, "warm-up"))
                started = time.perf_counter()
                writer.write(MicroBatch(1, rows.select(*columns), empty, lambda: 0, "measured"))
                seconds = time.perf_counter() - started
                writer.close()
                best[sink] = min(best.get(sink, seconds), seconds)
                print(f"round {round_ + 1} {sink:15s} {args.rows / seconds:10,.0f} rows/s ({seconds:.1f} s)")
                cleanup(stack, kind, run)
    receiver.close()
    print("\nbest of each, rows/s:")
    for sink in chosen:
        print(f"  {sink:15s} {args.rows / best[sink]:10,.0f}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
