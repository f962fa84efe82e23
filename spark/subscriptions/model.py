"""Subscriptions: a name, one table, a sink with its settings, what to deliver (filter, columns,
operations) and where to start; and the checks that need nothing but the subscription itself.

The filter is a Spark SQL boolean expression over the log row (its key and column values,
`cdc$operation`, `write_time`); `columns` keeps the key plus the named columns; `operations` keeps
insert, update and delete (row, partition and range deletions). Sinks name their settings here, so a
bad setting is refused when the subscription is created, before anything runs.
"""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

STATES = ("active", "paused", "cancelled", "failing")
OPERATIONS = ("insert", "update", "delete")
STARTS = ("now", "earliest", "snapshot")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,99}\Z")
KAFKA_FORMATS = ("json", "avro")  # the Kafka sink's record values
DELTA_LAYOUTS = ("log", "typed", "mirror")  # the Delta sink's: one JSON log, a typed log per table, or mirrors
SQL_LAYOUTS = ("log", "typed", "mirror")  # PostgreSQL's and MySQL's: the log, a typed log or a mirror per table
MIRROR = "mirror"


class InvalidSubscription(ValueError):
    """A subscription (or a change to one) that cannot be run: says which field and why."""


def _positive(kind: type) -> Callable[[str], object]:
    def check(text: str) -> object:
        value = kind(text)
        if value <= 0:
            raise ValueError("must be above 0")
        return value
    return check


def boolean_setting(text: str) -> bool:
    """A sink setting's true or false, in any case: checked at create, read by `open_sink`."""
    if text.lower() not in ("true", "false"):
        raise ValueError("true or false")
    return text.lower() == "true"


def _one_of(*choices: str) -> Callable[[str], str]:
    def check(text: str) -> str:
        if text not in choices:
            raise ValueError(f"one of {', '.join(choices)}")
        return text
    return check


def _http_url(text: str) -> str:
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("an http:// or https:// URL")
    return text


def _mysql_dsn(text: str) -> str:
    parts = urlsplit(text)
    if parts.scheme not in ("mysql", "mariadb") or not parts.hostname or not parts.path.strip("/"):
        raise ValueError("mysql://user[:password]@host[:port]/database")
    return text


@dataclass(frozen=True)
class SinkSpec:
    required: frozenset[str]
    optional: frozenset[str] = frozenset()
    # Settings whose text must parse: name → parser raising ValueError with what is expected.
    typed: Mapping[str, Callable[[str], object]] = field(default_factory=dict)


# The sinks a subscription can deliver to, and the settings each takes.
SINKS: dict[str, SinkSpec] = {
    "delta": SinkSpec(frozenset({"path"}), frozenset({"layout"}), {"layout": _one_of(*DELTA_LAYOUTS)}),
    "postgres": SinkSpec(frozenset({"dsn"}), frozenset({"schema", "layout"}), {"layout": _one_of(*SQL_LAYOUTS)}),
    "cassandra": SinkSpec(frozenset(), frozenset({"hosts", "port", "keyspace"}), {"port": _positive(int)}),
    "mysql": SinkSpec(frozenset({"dsn"}), frozenset({"layout"}), {"dsn": _mysql_dsn, "layout": _one_of(*SQL_LAYOUTS)}),
    "kafka": SinkSpec(frozenset({"topic"}),
                      frozenset({"bootstrap_servers", "partitions", "replication_factor", "format", "registry_url",
                                 "transactions"}),
                      {"partitions": _positive(int), "replication_factor": _positive(int),
                       "format": _one_of(*KAFKA_FORMATS), "registry_url": _http_url, "transactions": boolean_setting}),
    "http": SinkSpec(frozenset({"url"}), frozenset({"batch_size", "timeout", "token", "verify", "attempts"}),
                     {"url": _http_url, "batch_size": _positive(int), "timeout": _positive(float),
                      "verify": boolean_setting, "attempts": _positive(int)}),
}


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
        return out

    def check(self) -> None:
        spec = SINKS.get(self.sink)
        if spec is None:
            raise InvalidSubscription(f"unknown sink {self.sink!r}; sinks: {', '.join(sorted(SINKS))}")
        missing = spec.required - self.sink_config.keys()
        if missing:
            raise InvalidSubscription(f"sink {self.sink} needs {', '.join(sorted(missing))}")
        unknown = self.sink_config.keys() - spec.required - spec.optional
        if unknown:
            known = ", ".join(sorted(spec.required | spec.optional)) or "none"
            raise InvalidSubscription(f"sink {self.sink} has no setting {sorted(unknown)[0]!r} (settings: {known})")
        for name, parse in spec.typed.items():
            if name in self.sink_config:
                try:
                    parse(self.sink_config[name])
                except ValueError as exc:
                    raise InvalidSubscription(f"sink {self.sink} setting {name} = {self.sink_config[name]!r}: "
                                              f"{exc}") from None
        if self.sink_config.get("layout") == MIRROR and (
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
