"""The control verbs — create, alter, reset, pause, resume, cancel, list, show — checked against the
cluster and applied to the registry; the command line and the statement form both go through here.

Everything is checked before the registry changes: the table exists, the columns are its columns, the
filter parses as Spark SQL, the sink and its settings are known. A refused verb changes nothing.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from schemas.tables.loader import read_table
from spark.sinks.registry import shown

from .model import Change, InvalidSubscription, Subscription
from .registry import SubscriptionRegistry
from .statements import Statement

FilterCheck = Callable[[str], None]


class UnknownTable(InvalidSubscription):
    """The subscription's table does not exist."""


def spark_filter_check(spark: Any) -> FilterCheck:
    """A filter check by Spark's own SQL parser (the one that will run the filter)."""
    def check(expression: str) -> None:
        try:
            spark._jsparkSession.sessionState().sqlParser().parseExpression(expression)
        except Exception as exc:  # py4j carries Spark's ParseException
            message = str(exc).split("\n", 1)[0].replace("org.apache.spark.sql.catalyst.parser.ParseException: ", "")
            raise InvalidSubscription(f"filter {expression!r} is not a Spark SQL expression: {message}") from None
    return check


class Control:
    def __init__(self, registry: SubscriptionRegistry, session: Any, check_filter: FilterCheck) -> None:
        self.registry = registry
        self.session = session  # a cassandra-driver session, for the tables' schemas
        self.check_filter = check_filter

    def run(self, statement: Statement) -> Any:
        """The statement's result: a subscription, or a list of them for `list`."""
        verb, name, change = statement.verb, statement.name, statement.change
        if verb == "create":
            return self.create(name, change)
        if verb == "alter":
            return self.alter(name, change)
        if verb == "reset":
            return self.registry.reset(name, change.start)
        if verb in ("pause", "resume", "cancel"):
            return self.registry.set_state(name, {"pause": "paused", "resume": "active", "cancel": "cancelled"}[verb])
        if verb == "list":
            return self.registry.list(statement.table)
        raise InvalidSubscription(f"unknown verb {verb!r}")

    def create(self, name: str, change: Change) -> Subscription:
        subscription = Subscription.create(name, change)
        self._check(subscription)
        return self.registry.create(subscription)

    def alter(self, name: str, change: Change) -> Subscription:
        if change.table is not None or change.sink is not None:
            raise InvalidSubscription("a subscription's table and sink type stay; create another subscription")
        self._check(self.registry.get(name).altered(change))
        return self.registry.alter(name, change)

    def show(self, name: str) -> dict:
        subscription = self.registry.get(name)
        progress = self.registry.progress(name, subscription.epoch)
        status = self.registry.status(name)
        version = self.registry.snapshot_version(name, subscription.epoch)
        snapshot = None
        if version is not None:
            reading = [p for p in progress if p.stage == "snapshot"]
            snapshot = {"started": version.started.isoformat(),
                        "finished": version.finished.isoformat() if version.finished else None,
                        "log_offsets": {str(p): o for p, o in version.offsets.items()},
                        "ranges_read": sum(p.snapshot_token == p.range_end for p in reading)}
        return {**as_json(subscription), "ranges": len(progress), "snapshot": snapshot,
                "stages": sorted({p.stage for p in progress}),
                "rows_delivered": sum(p.rows_delivered for p in progress),
                "runner": status.runner if status else None,
                "lag_seconds": status.lag_seconds if status else None,
                "rows_filtered": status.rows_filtered if status else 0,
                "retries": status.retries if status else 0,
                "progress": [{"range_end": p.range_end, "stage": p.stage, "rows_delivered": p.rows_delivered,
                              "log_position": p.log_position, "snapshot_token": p.snapshot_token}
                             for p in progress]}

    def _check(self, subscription: Subscription) -> None:
        table, _ = read_table(self.session, subscription.keyspace, subscription.table)
        if table is None:
            raise UnknownTable(f"table {subscription.keyspace}.{subscription.table} does not exist")
        if subscription.columns:
            names = {c.name for c in table.columns}
            unknown = [c for c in subscription.columns if c not in names]
            if unknown:
                raise InvalidSubscription(f"table {subscription.keyspace}.{subscription.table} has no column "
                                          f"{unknown[0]!r}")
        if subscription.filter:
            self.check_filter(subscription.filter)


def as_json(subscription: Subscription) -> dict:
    out = asdict(subscription)
    out["sink_config"] = shown(subscription.sink, subscription.sink_config)  # what is printed holds no secret
    out["columns"] = list(subscription.columns) if subscription.columns else None
    out["operations"] = list(subscription.operations)
    for key in ("created", "updated"):
        out[key] = out[key].isoformat() if out[key] else None
    return out
