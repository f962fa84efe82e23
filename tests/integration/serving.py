"""Runners of the subscription server as separate processes (what `kill -9` can hit)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from deploy.local.endpoints import ROOT

# What a micro-batch interrupted by a stop leaves in a Spark process's log; an ordinary stop leaves none.
CUT_BATCH = ("StackOverflowError", "InterruptedException", "SPARK_JOB_CANCELLED", "CANNOT_LOAD_STATE_STORE",
             "ClosedByInterruptException", "terminated with error")


def runner_process(stack, base: dict, folder: Path, runner_id: str, env: dict[str, str] | None = None,
                   **settings) -> subprocess.Popen:
    """`python -m spark.server` with the `served` fixture's settings, `settings` on top, one Spark core, `env`
    added to the environment; its log in `folder/runner-<id>.log`."""
    config = folder / f"runner-{runner_id}.yaml"
    config.write_text(json.dumps({**{k: v for k, v in base.items() if k not in ("cassandra_hosts", "checkpoint_dir")},
                                  "cassandra_hosts": list(base["cassandra_hosts"]),
                                  "checkpoint_dir": str(base["checkpoint_dir"]), "runner_id": runner_id,
                                  "spark_master": "local[1]", "spark_jars": list(stack.spark_jars),
                                  "spark_conf": {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1"},
                                  **settings}))
    log = open(folder / f"runner-{runner_id}.log", "a")
    return subprocess.Popen([sys.executable, "-m", "spark.server", "--config", str(config)], cwd=ROOT, stdout=log,
                            stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
