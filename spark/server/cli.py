"""`python -m spark.server --config FILE`: a runner serving subscriptions until SIGTERM (also under
`spark-submit`). Several runners share the registry and split the subscriptions."""
from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Sequence

from spark.job.cli import add_master

log = logging.getLogger(__name__)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m spark.server",
                                     description="ringtail: serve subscriptions from the registry")
    parser.add_argument("--config", metavar="FILE.yaml", type=Path,
                        help="settings file; RINGTAIL_SERVER_* environment variables override it")
    add_master(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from schemas.runtime.status import StatusServer
    from schemas.runtime.session import connect
    from spark.job.cli import begin
    from spark.delivery.pipeline import spark_session

    from spark.subscriptions.settings import ServerSettings
    from .metrics import runner_registry
    from .runner import Runner

    args = build_parser().parse_args(argv)
    begun = begin(ServerSettings, args, "python -m spark.server")
    if begun is None:
        return 2
    settings, shutdown = begun
    cluster, session = connect(*settings.cluster)
    spark = spark_session(settings)
    try:
        runner = Runner(spark, settings, session)
        status = StatusServer(runner_registry(runner), lambda: ([], []), settings.metrics_host,
                              settings.metrics_port).start()
        log.info("metrics on port %d", status.port)
        try:
            runner.run(shutdown.requested)
        finally:
            status.close()
    finally:
        spark.stop()
        cluster.shutdown()
    return 0
