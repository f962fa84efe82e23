"""A subscription's snapshot read beside the floor, side by side in one run.

    python bench/snapshot.py [--rows N] [--repeat R] [--workers W]

Input: `ringtail_bench.snapshot` (shop int, id int, qty int, note text, tags set<text>, static owner;
PRIMARY KEY (shop, id)), N rows (default 100,000) in partitions of 10, written once. After one round
not counted (the node compacts what was just written, the JVMs warm up), timed in turns (A B C, then
C B A, …), R rounds (default 3), each shown as the median rows/s of its rounds with their range:

* `driver`: `SELECT *` paged through the Python driver (1,000 rows a page), rows as named tuples —
  the floor of reading the table from Python;
* `reader`: ringtail's snapshot reader in one process, range after range (`read_step`: raw rows →
  log rows as Arrow batches), the per-row cost of the snapshot without Spark;
* `spark`: the snapshot as the subscription runs it (the streaming source, local[2] or W workers of the
  local stack's Spark cluster (`bench/cluster.py`), as many tasks as Spark has cores) into a micro-batch
  function that only counts, from start to the last row. `spark-read` is the same runs from the start of their
  first micro-batch: the query's own start left out (about a second, whatever the table's size: Spark starts
  a Python process for the source, which imports ringtail, and plans the first step).

The reader selects more than `SELECT *` (each cell's write time and TTL), which costs Cassandra itself
time: `driver-rich` is the reader's own statement paged through the Python driver as the floor does,
so the figures part what Cassandra spends on the richer statement from what ringtail spends per row.

Memory: the peak RSS of a process running the reader over a quarter of the ranges and over all of
them (flat: it holds a page and a batch, whatever the table's size). Needs the local stack
(`deploy/local/start`); prints figures, asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from cluster import add_workers_option, spark_placement  # noqa: E402 - bench/ is the script's directory
from deploy.local.endpoints import StackUnavailable  # noqa: E402
from services import stack_for_figures  # noqa: E402 - bench/ is the script's directory
from deploy.local.processes import peak_rss  # noqa: E402

KEYSPACE, TABLE, GENERATIONS = "ringtail_bench", "snapshot", "ringtail_bench_generations"


def fill(session, rows: int) -> None:
    from cassandra.cluster import EXEC_PROFILE_DEFAULT
    from cassandra.concurrent import execute_concurrent_with_args

    session.execute(f"CREATE KEYSPACE IF NOT EXISTS {KEYSPACE} WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute(f"DROP TABLE IF EXISTS {KEYSPACE}.{TABLE}")
    session.execute(f"CREATE TABLE {KEYSPACE}.{TABLE} (shop int, id int, qty int, note text, tags set<text>,"
                    " owner text static, PRIMARY KEY (shop, id))")
    insert = session.prepare(f"INSERT INTO {KEYSPACE}.{TABLE} (shop, id, qty, note, tags, owner)"
                             " VALUES (?, ?, ?, ?, ?, ?)")
    # A node flushing memtables under a million writes stalls them for seconds.
    patient = session.execution_profile_clone_update(EXEC_PROFILE_DEFAULT, request_timeout=60)
    for start in range(0, rows, 100_000):  # in parts, so the argument lists stay small
        values = [(i // 10, i % 10, i, f"note {i}", {"a", f"t{i % 5}"}, f"owner {i // 10}")
                  for i in range(start, min(rows, start + 100_000))]
        for ok, result in execute_concurrent_with_args(session, insert, values, concurrency=64,
                                                       execution_profile=patient):
            if not ok:
                raise result


def plan(stack, checkpoint: str, tasks: int = 2):
    from spark.snapshot.source import SnapshotPlan

    return SnapshotPlan(hosts=(stack.cassandra_host,), port=stack.cassandra_port, security=None, keyspace=KEYSPACE,
                        table=TABLE, generations_keyspace=GENERATIONS, ignore_msb=12, checkpoint=checkpoint,
                        version_us=time.time_ns() // 1000, tasks=tasks)


def read_with_driver(session) -> int:
    from cassandra.query import SimpleStatement

    return sum(1 for _ in session.execute(SimpleStatement(f"SELECT * FROM {KEYSPACE}.{TABLE}", fetch_size=1000)))


def reader_ranges(stack, fraction: float = 1.0):
    """(the snapshot reader, its table's rows, the generation, every range or the first `fraction` of them)."""
    from spark.snapshot.ranges import ring_ranges
    from spark.snapshot.rows import TableRows
    from spark.snapshot.source import SnapshotReader

    reader = SnapshotReader(plan(stack, ""))
    generation = reader._generation()
    ranges = ring_ranges(e.token_range_end for e in generation.topology().entries)
    return reader, TableRows(*reader._table()), generation, ranges[:max(1, round(len(ranges) * fraction))]


def read_rich_with_driver(stack, session) -> int:
    """The reader's statement, range by range, paged through the Python driver as `read_with_driver`."""
    _, table_rows, _, ranges = reader_ranges(stack)
    statement = session.prepare(table_rows.select)
    statement.fetch_size = 1000
    return sum(1 for r in ranges for _ in session.execute(statement, (r.start, r.end)))


def read_with_reader(stack, fraction: float = 1.0) -> int:
    """Every range (or the first `fraction` of them) through `read_step`; the rows read."""
    from spark.snapshot.source import read_step

    reader, table_rows, generation, ranges = reader_ranges(stack, fraction)
    read = 0
    for r in ranges:
        for batch in read_step(reader.plan, table_rows, generation, r.start, r.end):
            read += batch.num_rows
    return read


def read_with_spark(spark, stack, rows: int, tasks: int) -> float:
    """The snapshot through Spark; the seconds from its first micro-batch's start to its last row."""
    from spark.snapshot.source import NAME, SnapshotSource

    spark.dataSource.register(SnapshotSource)
    counted, done, first = [0], threading.Event(), []

    def count(batch, _batch_id) -> None:
        first.append(time.perf_counter())
        counted[0] += batch.count()
        if counted[0] >= rows:
            done.set()

    with tempfile.TemporaryDirectory() as tmp:
        changes = spark.readStream.format(NAME).option("plan", plan(stack, tmp, tasks).option()).load()
        query = (changes.writeStream.foreachBatch(count).option("checkpointLocation", tmp)
                 .trigger(processingTime="0 seconds").start())
        while not done.wait(0.05):
            if not query.isActive:
                raise RuntimeError(f"the snapshot query stopped: {query.exception()}")
        read = time.perf_counter() - first[0]
        query.stop()
    if counted[0] != rows:
        raise RuntimeError(f"the snapshot read {counted[0]} rows of {rows}")
    return read


def peak_memory(fraction: float) -> tuple[int, float]:
    """(rows, peak RSS in MiB) of a process reading `fraction` of the ranges with the reader."""
    out = subprocess.run([sys.executable, __file__, "--memory-child", str(fraction)], check=True,
                         capture_output=True, text=True).stdout
    child = json.loads(out.strip().splitlines()[-1])
    return child["rows"], child["peak_mib"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    add_workers_option(parser)
    parser.add_argument("--memory-child", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    try:
        stack = stack_for_figures()
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

    master, conf, placement = spark_placement(args.workers, {"spark.ui.enabled": "false"})
    cluster, session = connect([stack.cassandra_host], stack.cassandra_port)
    fill(session, args.rows)
    settings = StreamSettings(cassandra_hosts=(stack.cassandra_host,), cassandra_port=stack.cassandra_port,
                              generations_keyspace=GENERATIONS, spark_master=master, spark_jars=stack.spark_jars,
                              spark_conf=conf)
    GenerationKeeper(settings).refresh()  # the snapshot's stream ids come from the current generation
    spark = spark_session(settings)
    tasks = spark.sparkContext.defaultParallelism
    print(f"{args.rows:,} rows in {KEYSPACE}.{TABLE}; Cassandra, Spark ({placement}, {tasks} tasks) and this process"
          " share the machine")
    runs = {"driver": lambda: read_with_driver(session), "driver-rich": lambda: read_rich_with_driver(stack, session),
            "reader": lambda: read_with_reader(stack), "spark": lambda: read_with_spark(spark, stack, args.rows, tasks)}
    seconds: dict[str, list[float]] = {name: [] for name in [*runs, "spark-read"]}
    for round_ in range(args.repeat + 1):
        for name in runs if round_ % 2 == 0 else reversed(list(runs)):
            started = time.perf_counter()
            read = runs[name]()
            took = time.perf_counter() - started
            if round_:
                seconds[name].append(took)
                if name == "spark":
                    seconds["spark-read"].append(read)
            print(f"round {round_ or 'warm-up'} {name:11s} {args.rows / took:10,.0f} rows/s ({took:.1f} s)", flush=True)
    floor = statistics.median(args.rows / s for s in seconds["driver"])
    print(f"\nrows/s, median of {args.repeat} (min–max):")
    for name in seconds:
        rates = sorted(args.rows / s for s in seconds[name])
        median = statistics.median(rates)
        print(f"  {name:11s} {median:10,.0f} ({rates[0]:,.0f}–{rates[-1]:,.0f})  {median / floor:.2f}× the driver's")
    print("\npeak RSS of the reader (one process):")
    for fraction in (0.25, 1.0):
        rows, peak = peak_memory(fraction)
        print(f"  {rows:9,} rows  {peak:7.0f} MiB")
    spark.stop()
    cluster.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
