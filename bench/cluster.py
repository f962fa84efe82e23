"""Where a benchmark's Spark runs: local[2] by default, or `--workers N` of the local stack's standalone
cluster (`RINGTAIL_STACK_SPARK_WORKERS=N deploy/local/start spark-master spark-worker`), so the same run
can be timed on one worker and on two."""
from __future__ import annotations

import argparse
import json

from deploy.local.endpoints import stack_run_dir

LOCAL = "local[2]"


def add_workers_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workers", type=int, default=0,
                        help="run on this many workers of the local stack's Spark cluster (default 0: local[2])")


def spark_placement(workers: int, conf: dict[str, str]) -> tuple[str, dict[str, str], str]:
    """(spark_master, spark_conf with `conf`, a label for the figures) for `workers` (0: local[2]). The
    cluster's executors get one core each and the stack's executor Python; ringtail is shipped to them
    as to any cluster."""
    if workers == 0:
        return LOCAL, conf, LOCAL
    path = stack_run_dir() / "stack.json"
    master = json.loads(path.read_text()).get("spark-master") if path.exists() else None
    if master is None or master["workers"] < workers:
        raise SystemExit(f"--workers {workers}: start the stack's Spark cluster with at least that many workers"
                         f" (RINGTAIL_STACK_SPARK_WORKERS={workers} deploy/local/start spark-master spark-worker)")
    cores = master["worker_cores"]
    return master["master"], {**conf, "spark.pyspark.python": master["python"], "spark.executor.cores": str(cores),
                              "spark.cores.max": str(workers * cores), "spark.executor.memory": "640m"}, \
        f"{workers} worker(s) of {master['master']}"
