"""Subscriptions: a name, one table, a sink with its settings, what to deliver (filter, columns,
operations) and where to start; and the checks that need nothing but the subscription itself.

The filter is a Spark SQL boolean expression over the log row (its key and column values,
`cdc$operation`, `write_time`); `columns` keeps the key plus the named columns; `operations` keeps
insert, update and delete (row, partition and range deletions). Each sink's settings model
(`spark.sinks.registry`) checks its settings when the subscription is created, before anything runs.
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field, replace

from spark.sinks.registry import InvalidSinkSettings, sink_settings
from spark.sinks.settings import SinkSettings

STATES = ("active", "paused", "cancelled", "failing")
OPERATIONS = ("insert", "update", "delete")
STARTS = ("now", "earliest", "snapshot")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,99}\Z")


class InvalidSubscription(ValueError):
    """A subscription (or a change to one) that cannot be run: says which field and why."""


@dataclass(frozen=True)
class Change:
    """What a create or an alter sets; None leaves a field as it is."""

    table: str | None = None  # keyspace.table
    sink: str | None = None
    sink_config: dict[str, str] | None = None
    filter: str | None = None
    columns: tuple[str, ...] | None = None
    operations: tuple[str, ...] | None = None
    start: str | None = None


@dataclass(frozen=True)
class Subscription:
    name: str
    keyspace: str
    table: str
    sink: str
    sink_config: dict[str, str] = field(default_factory=dict)
    filter: str | None = None
    columns: tuple[str, ...] | None = None  # None: every column
    operations: tuple[str, ...] = OPERATIONS
    start: str = "now"
    state: str = "active"
    last_error: str | None = None
    revision: int = 1  # grows with every alter, reset and resume: a runner restarts the subscription's query
    epoch: int = 1  # grows with every reset: the query starts over, with a checkpoint of its own
    created: dt.datetime | None = None
    updated: dt.datetime | None = None

    @classmethod
    def create(cls, name: str, change: Change) -> Subscription:
        check_name(name)
        if change.table is None or change.sink is None:
            raise InvalidSubscription("a subscription needs a table (keyspace.table) and a sink")
        keyspace, _, table = change.table.partition(".")
        if not keyspace or not table:
            raise InvalidSubscription(f"table {change.table!r}: give it as keyspace.table")
        subscription = cls(name, keyspace, table, change.sink, change.sink_config or {})
        return subscription.altered(change)

    def altered(self, change: Change) -> Subscription:
        """This subscription with `change` applied (its table and sink type stay), checked."""
        updates = {k: getattr(change, k) for k in ("sink_config", "filter", "columns", "operations", "start")
                   if getattr(change, k) is not None}
        if "sink_config" in updates:
            updates["sink_config"] = {**self.sink_config, **updates["sink_config"]}
        if "filter" in updates and not updates["filter"].strip():
            updates["filter"] = None  # an empty filter removes it
        out = replace(self, **updates)
        out.check()
        if "sink_config" in updates:
            out.check_secrets()
        return out

    def sink_settings(self) -> SinkSettings:
        """The sink's settings, read from their text."""
        try:
            return sink_settings(self.sink, self.sink_config)
        except InvalidSinkSettings as exc:
            raise InvalidSubscription(str(exc)) from None

    def check_secrets(self) -> None:
        """Its sink settings are stored as text in ringtail_cdc.subscriptions: a secret among them is
        refused, and taken by reference (a file every runner reads at start) instead."""
        clear = self.sink_settings().clear_secrets()
        if clear:
            raise InvalidSubscription(
                f"sink {self.sink}: {' and '.join(clear)} would be stored in clear in ringtail_cdc.subscriptions; "
                "give the secret as a file every runner can read instead (token_file, password_file for a DSN's "
                "password)")

    def check(self) -> None:
        if self.sink_settings().mirrors and (
                self.filter is not None or self.columns is not None or set(self.operations) != set(OPERATIONS)):
            raise InvalidSubscription("a mirror holds the whole table: it takes no filter, columns or operations")
        bad = set(self.operations) - set(OPERATIONS)
        if bad or not self.operations:
            raise InvalidSubscription(f"operations are {', '.join(OPERATIONS)}; got {', '.join(self.operations)}")
        check_start(self.start)
        if self.state not in STATES:
            raise InvalidSubscription(f"state {self.state!r} is none of {', '.join(STATES)}")


def check_name(name: str) -> None:
    if not _NAME.match(name):
        raise InvalidSubscription(f"subscription name {name!r}: letters, digits, _ and -, starting with a letter")


def check_start(start: str) -> None:
    """now, earliest, snapshot (the table's rows, then the log), or an ISO 8601 timestamp."""
    if start in STARTS:
        return
    start_time(start)


def start_time(start: str) -> dt.datetime:
    """A timestamp start as an aware time (UTC when it names no zone)."""
    try:
        at = dt.datetime.fromisoformat(start)
    except ValueError:
        raise InvalidSubscription(f"start {start!r}: now, earliest, snapshot or an ISO 8601 timestamp") from None
    return at if at.tzinfo else at.replace(tzinfo=dt.timezone.utc)
