"""The whole suite in two lanes at once: `python -m tests.lanes [pytest options]` (what deploy/local/test runs).

The modules with stacks of their own (the ring's, the secured stack's, the Spark cluster's and the older
Cassandra versions', `side_stacks.SIDE_STACKS`) share nothing with the others but the main stack's registry,
PostgreSQL, object store and jars (and the unit tests nothing at all), so they run in a lane of their own
beside the rest of the suite, which keeps the main stack's Kafka and `cdc_raw` to itself (its connectors
share one `cdc_raw`; one of its tests stops the main broker); the side lane ends with the modules that
capture nothing (`NO_CAPTURE`). Each lane's waits on services are the other's time to compute: together they
keep two cores about 80 % busy.

Arguments that select tests (paths, `-k`, `-m`, `--lf`, `--deselect`) run pytest once, as given. The side
lane's output goes to `<run dir>/lanes/side.log`, printed after the main lane's; the exit status is the
first lane's that failed."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from deploy.local.endpoints import ROOT, stack_run_dir
from tests.integration.side_stacks import SIDE_STACKS

_SELECTING = ("-k", "-m", "--lf", "--last-failed", "--deselect", "--sw", "--stepwise")


def selects_tests(args: list[str]) -> bool:
    """Whether `args` choose which tests run (then the choice is pytest's, in one lane)."""
    return any(arg.startswith(_SELECTING) or (not arg.startswith("-") and (ROOT / arg.split("::")[0]).exists())
               for arg in args)


# Modules that capture nothing: of the main stack they use its node's CQL (no CDC table), PostgreSQL and
# MariaDB, and a local Spark at most; no connector, no Kafka. Nothing the main lane does disturbs them, nor
# they it. They end the side lane, which is otherwise done first.
NO_CAPTURE = ("test_streams_storage.py", "test_tokens_match_cassandra.py", "test_streams_cli.py",
              "test_schema_loader.py", "test_json_rows.py", "test_typed_log.py", "test_subscriptions.py",
              "test_avro_rows.py", "test_job_sink_postgres.py", "test_job_sink_mysql.py",
              "test_job_sink_cassandra.py")


def lanes(args: list[str]) -> dict[str, list[str]]:
    """Each lane's pytest arguments: the unit tests, the side stacks' modules and the modules that capture
    nothing; and everything else. The unit tests need no stack: they run while the first side stack
    starts, off the longer lane."""
    side = ["tests/unit", *dict.fromkeys(str(Path("tests") / "integration" / s.module) for s in SIDE_STACKS),
            *(str(Path("tests") / "integration" / m) for m in NO_CAPTURE)]
    return {"side": [*args, *side], "main": [*args, *(f"--ignore={m}" for m in side), "tests"]}


def run(args: list[str]) -> int:
    if selects_tests(args):
        return subprocess.call([sys.executable, "-m", "pytest", *args], cwd=ROOT)
    commands = lanes(args)
    log = stack_run_dir() / "lanes" / "side.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    print(f"[lanes] {' '.join(commands['side'][len(args):])} beside the rest; output: {log}", flush=True)
    with open(log, "w") as out:
        side = subprocess.Popen([sys.executable, "-m", "pytest", *commands["side"]], cwd=ROOT, stdout=out,
                                stderr=subprocess.STDOUT)
    try:
        main = subprocess.call([sys.executable, "-m", "pytest", *commands["main"]], cwd=ROOT)
        side.wait()
    finally:
        if side.poll() is None:  # interrupted: the side lane ends with this one
            side.terminate()
            side.wait(60)
    print(f"\n[lanes] the side lane ({side.returncode}):\n{log.read_text(errors='replace')}", flush=True)
    return main or side.returncode


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
