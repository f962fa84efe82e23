"""The Spark job on the local stack's standalone cluster: one worker against two, in one run.

    RINGTAIL_STACK_SPARK_WORKERS=2 deploy/local/start spark-master spark-worker
    python bench/cluster.py [--rows N] [--repeat R] [--max-offsets M]

Input: real connector events, as bench/job.py makes them (N rows of a cdc table through `python -m
connector run`). Then the job as users run it (native decoding, stream ids, replica removal, Delta sink,
`available_now`) is submitted to the cluster (stack.json's `spark-master`) with one executor of one core
(`spark.cores.max=1`: one worker works) and with two (one on each worker), the executors' Python empty
and ringtail shipped (spark.ship), taking turns (1 2, 2 1, …) after one warm-up run of each, not counted
(shipping, the executors' first Python workers). Each setting is its own Spark application (a standalone
application's executors are fixed when it starts), so each run starts cold executors: their JVMs compile
the Kafka reader, the state store and the Parquet writer anew. Hence two figures: rows/s of the whole run
(rows of the Delta `cdc_log` / seconds from `start()` to the query's end), and records/s of the
micro-batches after the first (their trigger time), what a running job keeps up; each the median of R runs
(min–max), with the speed-up of two workers over one.

Both workers share this machine's cores with the driver, Kafka and Cassandra: two workers on a 2-core
machine cannot double one. Needs the local stack and its cluster; prints figures, asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import uuid
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "bench"))

from job import (SPARK_CONF, ConnectorProcess, base_settings, capture, cleanup, close_clients,  # noqa: E402
                 delete_topics, local_stack, open_clients, prefix_topics, run_job)

from spark.job.config import JobSettings  # noqa: E402


def on_cluster(base: JobSettings, cluster: dict, executors: int) -> JobSettings:
    """The job's settings submitted to the cluster with `executors` executors of one core."""
    return base.model_copy(update={"spark_master": cluster["master"], "spark_conf": {
        **SPARK_CONF, "spark.pyspark.python": cluster["python"], "spark.executor.cores": "1",
        "spark.cores.max": str(executors), "spark.executor.memory": "640m"}})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000, help="rows written, so change events (default 200,000)")
    parser.add_argument("--repeat", type=int, default=3, help="counted runs per setting (default 3)")
    parser.add_argument("--max-offsets", type=int, default=50_000,
                        help="records per micro-batch at most (default %(default)s: several batches a run)")
    args = parser.parse_args()
    stack = local_stack()
    cluster = json.loads((stack.run_dir / "stack.json").read_text()).get("spark-master")
    if not cluster or cluster["workers"] < 2:
        print("error: no cluster of two workers in the stack: RINGTAIL_STACK_SPARK_WORKERS=2 deploy/local/start "
              "spark-master spark-worker", file=sys.stderr)
        return 2

    from spark.job.pipeline import spark_session

    name = uuid.uuid4().hex[:8]
    keyspace, prefix = f"benchcluster_{name}", f"benchcluster{name}"
    admin, consumer, cassandra, cql = open_clients(stack)
    rates: dict[int, list[float]] = {1: [], 2: []}
    later: dict[int, list[float]] = {1: [], 2: []}
    with tempfile.TemporaryDirectory(prefix="ringtail-bench-cluster-") as scratch_dir:
        scratch = Path(scratch_dir)
        connector = ConnectorProcess(stack, scratch / "state", prefix)
        try:
            capture(stack, cql, admin, consumer, connector, keyspace, prefix, args.rows)
            base = base_settings(stack, prefix, f"{keyspace}_gen", args.max_offsets)
            order = [1, 2] + [n for r in range(args.repeat) for n in ((1, 2) if r % 2 else (2, 1))]
            for number, executors in enumerate(order):
                settings = on_cluster(base, cluster, executors).model_copy(update={
                    "delta_path": scratch / f"run{number}" / "delta",
                    "checkpoint_dir": scratch / f"run{number}" / "checkpoint"})
                spark = spark_session(settings)
                spark.sparkContext.setLogLevel("ERROR")
                try:
                    run = run_job(spark, settings, keyspace, None, f"{executors} worker(s)")
                finally:
                    spark.stop()
                counted = number >= 2
                if counted:
                    rates[executors].append(run.rate)
                    later[executors].append(run.later_rate)
                print(f"  run {number}: {executors} worker(s) {run.seconds:6.2f} s  {run.rows:>9,} log rows"
                      f"  {run.rate:>9,.0f} rows/s  after the first batch {run.later_rate:,.0f} records/s"
                      + ("" if counted else "  (warm-up, not counted)"), flush=True)
        finally:
            cleanup(connector.stop)
            close_clients(consumer, cassandra, cql, [keyspace, f"{keyspace}_gen"])
            cleanup(lambda: delete_topics(admin, prefix_topics(admin, prefix)))

    print(f"\nthe job on the standalone cluster ({args.rows:,} rows, Delta sink, batches of at most "
          f"{args.max_offsets:,}), median of {args.repeat} (min–max):")
    for label, figures in (("rows/s, whole run", rates), ("records/s after the first batch", later)):
        medians = {n: statistics.median(f) for n, f in figures.items()}
        print(f"  {label}: " + "; ".join(f"{n} worker(s) {m:,.0f} ({min(figures[n]):,.0f}–{max(figures[n]):,.0f})"
                                          for n, m in medians.items())
              + f"; two over one {medians[2] / medians[1]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
