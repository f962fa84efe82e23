"""A subscription's snapshot read beside the floor, side by side in one run.

    python bench/snapshot.py [--rows N] [--repeat R]

Input: `ringtail_bench.snapshot` (shop int, id int, qty int, note text, tags set<text>, static owner;
PRIMARY KEY (shop, id)), N rows (default 100,000) in partitions of 10, written once. Timed in turns,
R rounds, best of each:

* `driver`: `SELECT *` paged through the Python driver (1,000 rows a page), rows as named tuples —
  the floor of reading the table from Python;
* `reader`: ringtail's snapshot reader in one process, range after range (`read_step`: raw rows →
  log rows as Arrow batches), the per-row cost of the snapshot without Spark;
* `spark`: the snapshot as the subscription runs it (the streaming source, local[2], one task per
  range) into a micro-batch function that only counts, from start to the last row.

Memory: the peak RSS of a process running the reader over a quarter of the ranges and over all of
them (flat: it holds a page and a batch, whatever the table's size). Needs the local stack
(`deploy/local/start`); prints figures, asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from deploy.local.endpoints import StackUnavailable, connect_stack  # noqa: E402
from deploy.local.processes import peak_rss  # noqa: E402

KEYSPACE, TABLE, GENERATIONS = "ringtail_bench", "snapshot", "ringtail_bench_generations"


def fill(session, rows: int) -> None:
    from cassandra.concurrent import execute_concurrent_with_args

    session.execute(f"CREATE KEYSPACE IF NOT EXISTS {KEYSPACE} WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute(f"DROP TABLE IF EXISTS {KEYSPACE}.{TABLE}")
    session.execute(f"CREATE TABLE {KEYSPACE}.{TABLE} (shop int, id int, qty int, note text, tags set<text>,"
                    " owner text static, PRIMARY KEY (shop, id))")
    insert = session.prepare(f"INSERT INTO {KEYSPACE}.{TABLE} (shop, id, qty, note, tags, owner)"
                             " VALUES (?, ?, ?, ?, ?, ?)")
    values = [(i // 10, i % 10, i, f"note {i}", {"a", f"t{i % 5}"}, f"owner {i // 10}") for i in range(rows)]
    for ok, result in execute_concurrent_with_args(session, insert, values, concurrency=100):
        if not ok:
            raise result


def plan(stack, checkpoint: str):
    from spark.snapshot.source import SnapshotPlan

    return SnapshotPlan(hosts=(stack.cassandra_host,), port=stack.cassandra_port, security=None, keyspace=KEYSPACE,
                        table=TABLE, generations_keyspace=GENERATIONS, ignore_msb=12, checkpoint=checkpoint,
                        version_us=time.time_ns() // 1000, tasks=2)


def read_with_driver(session) -> int:
    from cassandra.query import SimpleStatement

    return sum(1 for _ in session.execute(SimpleStatement(f"SELECT * FROM {KEYSPACE}.{TABLE}", fetch_size=1000)))


def read_with_reader(stack, fraction: float = 1.0) -> int:
    """Every range (or the first `fraction` of them) through `read_step`; the rows read."""
    from spark.snapshot.ranges import ring_ranges
    from spark.snapshot.rows import TableRows
    from spark.snapshot.source import SnapshotReader, read_step

    reader = SnapshotReader(plan(stack, ""))
    generation = reader._generation()
    table_rows = TableRows(*reader._table())
    ranges = ring_ranges(e.token_range_end for e in generation.topology().entries)
    ranges = ranges[:max(1, round(len(ranges) * fraction))]
    read = 0
    for r in ranges:
        for batch in read_step(reader.plan, table_rows, generation, r.start, r.end):
            read += batch.num_rows
    return read


def read_with_spark(spark, stack, rows: int) -> None:
    from spark.snapshot.source import NAME, SnapshotSource

    spark.dataSource.register(SnapshotSource)
    counted, done = [0], threading.Event()

    def count(batch, _batch_id) -> None:
        counted[0] += batch.count()
        if counted[0] >= rows:
            done.set()

    with tempfile.TemporaryDirectory() as tmp:
        changes = spark.readStream.format(NAME).option("plan", plan(stack, tmp).option()).load()
        query = (changes.writeStream.foreachBatch(count).option("checkpointLocation", tmp)
                 .trigger(processingTime="0 seconds").start())
        while not done.wait(0.2):
            if not query.isActive:
                raise RuntimeError(f"the snapshot query stopped: {query.exception()}")
        query.stop()
    if counted[0] != rows:
        raise RuntimeError(f"the snapshot read {counted[0]} rows of {rows}")


def peak_memory(fraction: float) -> tuple[int, float]:
    """(rows, peak RSS in MiB) of a process reading `fraction` of the ranges with the reader."""
    out = subprocess.run([sys.executable, __file__, "--memory-child", str(fraction)], check=True,
                         capture_output=True, text=True).stdout
    child = json.loads(out.strip().splitlines()[-1])
    return child["rows"], child["peak_mib"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--memory-child", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    try:
        stack = connect_stack()
    except StackUnavailable as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.memory_child is not None:
        rows = read_with_reader(stack, args.memory_child)
        # VmHWM, not ru_maxrss: Linux carries ru_maxrss over fork and exec, so it would report this
        # process's parent (the Spark driver) at the fork.
        peak = peak_rss(os.getpid()) / (1 << 20)
        print(json.dumps({"rows": rows, "peak_mib": peak}))
        return 0

    from schemas.runtime.session import connect
    from spark.delivery.settings import StreamSettings
    from spark.delivery.generations import GenerationKeeper
    from spark.delivery.pipeline import spark_session

    cluster, session = connect([stack.cassandra_host], stack.cassandra_port)
    fill(session, args.rows)
    settings = StreamSettings(cassandra_hosts=(stack.cassandra_host,), cassandra_port=stack.cassandra_port,
                              generations_keyspace=GENERATIONS, spark_master="local[2]", spark_jars=stack.spark_jars,
                              spark_conf={"spark.ui.enabled": "false"})
    GenerationKeeper(settings).refresh()  # the snapshot's stream ids come from the current generation
    spark = spark_session(settings)
    print(f"{args.rows:,} rows in {KEYSPACE}.{TABLE}; Cassandra, Spark local[2] and this process share the machine")
    runs = {"driver": lambda: read_with_driver(session), "reader": lambda: read_with_reader(stack),
            "spark": lambda: read_with_spark(spark, stack, args.rows)}
    best: dict[str, float] = {}
    for round_ in range(args.repeat):
        for name in runs if round_ % 2 == 0 else reversed(list(runs)):
            started = time.perf_counter()
            runs[name]()
            seconds = time.perf_counter() - started
            best[name] = min(best.get(name, seconds), seconds)
            print(f"round {round_ + 1} {name:7s} {args.rows / seconds:10,.0f} rows/s ({seconds:.1f} s)")
    print("\nbest of each, rows/s:")
    for name in runs:
        print(f"  {name:7s} {args.rows / best[name]:10,.0f}  ({best['driver'] / best[name]:.2f}× the driver's)")
    print("\npeak RSS of the reader (one process):")
    for fraction in (0.25, 1.0):
        rows, peak = peak_memory(fraction)
        print(f"  {rows:9,} rows  {peak:7.0f} MiB")
    spark.stop()
    cluster.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
