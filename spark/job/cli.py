"""Command line: `python -m spark.job --config FILE` runs the streaming job until stopped;
`--available-now` processes what Kafka holds and exits (also under `spark-submit`)."""
from __future__ import annotations

import argparse
import logging
import threading
from pathlib import Path
from typing import Sequence

from pyspark.sql import SparkSession

from schemas.runtime.signals import on_stop_signals
from spark.delivery.settings import S, admitted, load_or_report
from spark.sinks.contract import Sink

from .config import JobSettings

log = logging.getLogger(__name__)


def make_sink(spark: SparkSession, settings: JobSettings) -> Sink:
    return settings.sink_settings().open(spark, settings.sink_context(settings.app_id))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m spark.job",
                                     description="ringtail: change events from Kafka to ScyllaDB-style CDC logs")
    parser.add_argument("--config", metavar="FILE.yaml", type=Path,
                        help="settings file; RINGTAIL_JOB_* environment variables override it")
    parser.add_argument("--available-now", action="store_true",
                        help="process what the topics hold now, then exit")
    add_master(parser)
    return parser


def add_master(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--master", metavar="URL", help="the Spark master (spark://host:7077, k8s://…, yarn, "
                        "local[2]); above the settings' spark_master. Unset under spark-submit: its own")


class Shutdown:
    """The first SIGTERM or SIGINT asks the job to stop between micro-batches; a second exits at once."""

    def __init__(self) -> None:
        self.requested = threading.Event()
        on_stop_signals(self._stop, lambda name: log.warning(
            "%s again: exiting at once; the next start replays the micro-batch left unfinished", name))

    def _stop(self, name: str) -> None:
        self.requested.set()
        log.info("%s: stopping after the running micro-batch (%s again to exit at once)", name, name)


def begin(cls: type[S], args: argparse.Namespace, program: str) -> tuple[S, Shutdown] | None:
    """A Spark process's start: its settings (`--config`, `--master`; None once their errors are on
    stderr: exit 2), its logging set up, and the handler of its stop signals."""
    from schemas.runtime.logs import setup_logging

    overrides = {"spark_master": args.master} if args.master else {}
    settings = load_or_report(cls, args.config, program, **overrides)
    if settings is None or not admitted(settings, program):
        return None
    setup_logging(settings.log_level, settings.log_format)
    return settings, Shutdown()



def main(argv: Sequence[str] | None = None) -> int:
    from pyspark.errors import StreamingQueryException

    from spark.delivery.pipeline import spark_session, start

    args = build_parser().parse_args(argv)
    begun = begin(JobSettings, args, "python -m spark.job")
    if begun is None:
        return 2
    settings, shutdown = begun
    spark = spark_session(settings)
    job = start(spark, settings, make_sink(spark, settings), available_now=args.available_now)
    try:
        job.run(shutdown.requested)
    except StreamingQueryException as exc:
        # The writer's reason is the readable one; Spark's message wraps it in a Py4J traceback.
        log.error("the query failed: %s", job.writer.error or exc.getMessage())
        return 1
    finally:
        job.close()
        spark.stop()
    return 0
