"""`python -m spark.subscriptions VERB …`: create, list, show, pause, resume, cancel, reset, alter, and
`sql "STATEMENT"`; `--json` prints JSON. A refused verb prints the reason, exits 2 and changes nothing."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from .model import OPERATIONS, Change, InvalidSubscription, Subscription
from .statements import Statement, StatementError, parse_statement


def _options(pairs: Sequence[str] | None) -> dict[str, str] | None:
    if pairs is None:
        return None
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InvalidSubscription(f"--sink-config {pair!r}: give it as KEY=VALUE")
        out[key] = value
    return out


def _names(text: str | None) -> tuple[str, ...] | None:
    return None if text is None else tuple(n.strip() for n in text.split(",") if n.strip())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m spark.subscriptions",
                                     description="ringtail subscriptions: named deliveries of one table to one sink")
    parser.add_argument("--config", type=Path, metavar="FILE.yaml",
                        help="the server's settings file (Cassandra and the ringtail keyspace);"
                             " RINGTAIL_SERVER_* override it")
    parser.add_argument("--json", action="store_true", help="print JSON")
    verbs = parser.add_subparsers(dest="verb", required=True)

    def changes(command, creating: bool) -> None:
        if creating:
            command.add_argument("--table", required=True, metavar="KS.TABLE")
            command.add_argument("--sink", required=True, help="delta, postgres, mysql, cassandra, kafka or http")
        command.add_argument("--sink-config", nargs="+", metavar="KEY=VALUE", help="the sink's settings")
        command.add_argument("--filter", metavar="EXPR", help="a Spark SQL boolean expression over the log row")
        command.add_argument("--columns", metavar="C1,C2", help="deliver the key and these columns only")
        command.add_argument("--ops", metavar="OPS", help=f"operations to deliver, of {','.join(OPERATIONS)}")
        if creating:
            command.add_argument("--start", default="now", help="now (the default), earliest, snapshot (the table's"
                                 " rows first, then the log) or an ISO 8601 timestamp")

    changes(verbs.add_parser("create", help="create a subscription"), creating=True)
    changes(verbs.add_parser("alter", help="change a subscription's sink settings, filter, columns or ops"),
            creating=False)
    verbs.choices["create"].add_argument("name")
    verbs.choices["alter"].add_argument("name")
    verbs.add_parser("list", help="every subscription").add_argument("--table", metavar="KS.TABLE")
    for verb, what in (("show", "one subscription, with its progress per range"), ("pause", "stop delivering"),
                       ("resume", "deliver again, from where it stopped"), ("cancel", "stop for good")):
        verbs.add_parser(verb, help=what).add_argument("name")
    reset = verbs.add_parser("reset", help="start over from a point")
    reset.add_argument("name")
    reset.add_argument("--to", required=True, help="now, earliest, snapshot or an ISO 8601 timestamp")
    verbs.add_parser("sql", help="a statement: CREATE/ALTER/PAUSE/RESUME/DROP SUBSCRIPTION, SHOW SUBSCRIPTIONS"
                     ).add_argument("statement")
    return parser


def statement_of(args: argparse.Namespace) -> Statement:
    """The verb of the command line as the statement form's result, so both run the same way."""
    if args.verb == "sql":
        return parse_statement(args.statement)
    if args.verb in ("create", "alter"):
        change = Change(table=getattr(args, "table", None), sink=getattr(args, "sink", None),
                        sink_config=_options(args.sink_config), filter=args.filter, columns=_names(args.columns),
                        operations=_names(args.ops), start=getattr(args, "start", None))
        return Statement(args.verb, args.name, change)
    if args.verb == "reset":
        return Statement("reset", args.name, Change(start=args.to))
    if args.verb == "list":
        return Statement("list", table=args.table)
    return Statement(args.verb, args.name)


class _LazySparkCheck:
    """Spark's parser checks filters; its JVM starts only when a filter needs checking."""

    def __call__(self, expression: str) -> None:
        from pyspark.sql import SparkSession

        from .control import spark_filter_check

        spark = (SparkSession.builder.master("local[1]").appName("ringtail-subscriptions")
                 .config("spark.ui.enabled", "false").getOrCreate())
        spark_filter_check(spark)(expression)


def _text(result: Any) -> str:
    from .control import as_json

    if isinstance(result, list):
        return "\n".join(_text(s) for s in result) or "no subscriptions"
    if isinstance(result, Subscription):
        result = as_json(result)
    line = (f"{result['name']}: {result['keyspace']}.{result['table']} -> {result['sink']} [{result['state']}]"
            f" start {result['start']}, revision {result['revision']}")
    if result.get("filter"):
        line += f", filter {result['filter']}"
    if result.get("last_error"):
        line += f", last error: {result['last_error']}"
    if "ranges" in result:
        line += f"\n  {result['ranges']} ranges ({', '.join(result['stages']) or 'not started'}),"
        line += f" {result['rows_delivered']} rows delivered, {result['rows_filtered']} filtered"
        snapshot = result.get("snapshot")
        if snapshot:
            line += f"\n  snapshot of {snapshot['started']}: " + (
                f"finished {snapshot['finished']}, the log follows" if snapshot["finished"]
                else f"{snapshot['ranges_read']} of {result['ranges']} ranges read")
        if result.get("runner"):
            lag = result.get("lag_seconds")
            line += f"\n  run by {result['runner']}, lag {'unknown' if lag is None else f'{lag:.1f} s'}"
            line += f", {result['retries']} retries"
    return line


def main(argv: Sequence[str] | None = None) -> int:
    from schemas.runtime.session import connect
    from spark.delivery.settings import admitted, load_or_report
    from spark.subscriptions.settings import ServerSettings

    from .control import Control, as_json
    from .registry import ConcurrentChange, SubscriptionRegistry, UnknownSubscription

    args = build_parser().parse_args(argv)
    settings = load_or_report(ServerSettings, args.config, "python -m spark.subscriptions")
    if settings is None or not admitted(settings, "python -m spark.subscriptions", kafka=False):
        return 2

    cluster, session = connect(*settings.cluster)
    try:
        registry = SubscriptionRegistry(session, settings.generations_keyspace)
        registry.create_schema(settings.generations_replication)
        control = Control(registry, session, _LazySparkCheck())
        statement = statement_of(args)
        result = control.show(statement.name) if args.verb == "show" else control.run(statement)
    except (InvalidSubscription, StatementError, UnknownSubscription, ConcurrentChange) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        cluster.shutdown()
    if args.json:
        payload = [as_json(s) for s in result] if isinstance(result, list) else (
            as_json(result) if isinstance(result, Subscription) else result)
        print(json.dumps(payload, indent=2, default=str))
    else:
        print(_text(result))
    return 0
