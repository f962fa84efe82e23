"""The registry of subscriptions and their progress, in the cluster (keyspace `ringtail_cdc` by
default, beside the CDC generations): the one place that writes them.

A create is a lightweight transaction (IF NOT EXISTS), so two creates of one name cannot both win;
every other change is conditional on the revision it read, so two operators' changes never undo each
other silently. Progress is kept per token range of the current CDC generation, by the runners.
"""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, replace
from typing import Any

from spark.streams.storage import DEFAULT_KEYSPACE, Replication, create_keyspace

from .model import Change, InvalidSubscription, Subscription

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS {ks}.subscriptions (name text PRIMARY KEY, keyspace_name text, table_name text,"
    " sink text, sink_config map<text, text>, filter text, columns list<text>, operations list<text>, start text,"
    " state text, last_error text, revision int, epoch int, created timestamp, updated timestamp)",
    "CREATE TABLE IF NOT EXISTS {ks}.subscription_progress (subscription text, range_end bigint, stage text,"
    " snapshot_version int, snapshot_token bigint, log_position text, rows_delivered bigint, epoch int,"
    " batch_id bigint, updated timestamp,"
    " PRIMARY KEY (subscription, range_end))",
    # A snapshot's version, per reset (epoch): when it started, where the log follows it (the end
    # offsets of the table's topic then, JSON {partition: offset}) and when its last range was read.
    "CREATE TABLE IF NOT EXISTS {ks}.subscription_snapshots (subscription text, epoch int, started timestamp,"
    " topic text, offsets text, finished timestamp, PRIMARY KEY (subscription, epoch))",
    # What the runner holding a subscription reports about it, every few seconds.
    "CREATE TABLE IF NOT EXISTS {ks}.subscription_status (subscription text PRIMARY KEY, runner text,"
    " lag_seconds double, rows_filtered bigint, retries int, updated timestamp)",
)
_FIELDS = ("keyspace_name", "table_name", "sink", "sink_config", "filter", "columns", "operations", "start",
           "state", "last_error", "revision", "epoch", "created", "updated")


class UnknownSubscription(LookupError):
    """No subscription has that name."""


class DuplicateSubscription(InvalidSubscription):
    """A subscription of that name exists already."""


class ConcurrentChange(RuntimeError):
    """The subscription changed between reading and writing it: read it again and retry."""


@dataclass(frozen=True)
class RangeProgress:
    range_end: int
    stage: str  # snapshot or log
    rows_delivered: int
    log_position: str | None  # the newest change delivered: segment:offset of the node that read it
    updated: dt.datetime | None
    epoch: int = 1
    batch_id: int | None = None  # the micro-batch of `epoch` that last counted rows here (a replay counts none)
    snapshot_token: int | None = None  # stage snapshot: the last token delivered (the range's end: done)


@dataclass(frozen=True)
class SnapshotVersion:
    """Where a snapshot starts: its time, and the log's offsets then (the log follows from them)."""

    started: dt.datetime
    topic: str
    offsets: dict[int, int]  # partition → offset; empty: the topic did not exist, the log starts at its start
    finished: dt.datetime | None = None


@dataclass(frozen=True)
class Status:
    runner: str | None
    lag_seconds: float | None
    rows_filtered: int
    retries: int
    updated: dt.datetime | None


def _now() -> dt.datetime:
    now = dt.datetime.now(dt.timezone.utc)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)  # what a CQL timestamp keeps


class SubscriptionRegistry:
    def __init__(self, session: Any, keyspace: str = DEFAULT_KEYSPACE) -> None:
        self.session = session
        self.keyspace = keyspace

    def create_schema(self, replication: Replication = None) -> None:
        create_keyspace(self.session, self.keyspace, replication)
        for statement in _SCHEMA:
            self.session.execute(statement.format(ks=self.keyspace))

    # -- reading -------------------------------------------------------------------------------

    def get(self, name: str) -> Subscription:
        row = self.session.execute(f"SELECT name, {', '.join(_FIELDS)} FROM {self.keyspace}.subscriptions"
                                   " WHERE name = %s", (name,)).one()
        if row is None:
            raise UnknownSubscription(f"no subscription is named {name!r}")
        return _subscription(row)

    def list(self, table: str | None = None) -> list[Subscription]:
        rows = self.session.execute(f"SELECT name, {', '.join(_FIELDS)} FROM {self.keyspace}.subscriptions")
        found = [_subscription(row) for row in rows]
        if table is not None:
            found = [s for s in found if f"{s.keyspace}.{s.table}" == table]
        return sorted(found, key=lambda s: s.name)

    def progress(self, name: str, epoch: int) -> list[RangeProgress]:
        """The progress per range since the subscription's last reset (its `epoch`)."""
        rows = self.session.execute(
            f"SELECT range_end, stage, rows_delivered, log_position, updated, epoch, batch_id, snapshot_token"
            f" FROM {self.keyspace}.subscription_progress WHERE subscription = %s", (name,))
        return [RangeProgress(r.range_end, r.stage, r.rows_delivered or 0, r.log_position, r.updated, r.epoch or 1,
                              r.batch_id, r.snapshot_token) for r in rows if (r.epoch or 1) == epoch]

    def snapshot_version(self, name: str, epoch: int) -> SnapshotVersion | None:
        r = self.session.execute(f"SELECT started, topic, offsets, finished FROM {self.keyspace}.subscription_snapshots"
                                 " WHERE subscription = %s AND epoch = %s", (name, epoch)).one()
        if r is None:
            return None
        return SnapshotVersion(r.started, r.topic, {int(p): o for p, o in json.loads(r.offsets).items()}, r.finished)

    def status(self, name: str) -> Status | None:
        r = self.session.execute(f"SELECT runner, lag_seconds, rows_filtered, retries, updated"
                                 f" FROM {self.keyspace}.subscription_status WHERE subscription = %s", (name,)).one()
        return None if r is None else Status(r.runner, r.lag_seconds, r.rows_filtered or 0, r.retries or 0, r.updated)

    # -- writing -------------------------------------------------------------------------------

    def create(self, subscription: Subscription) -> Subscription:
        now = _now()
        subscription = replace(subscription, revision=1, created=now, updated=now, start=_resolved(subscription.start))
        s = subscription
        applied = self.session.execute(
            f"INSERT INTO {self.keyspace}.subscriptions (name, {', '.join(_FIELDS)})"
            f" VALUES (%s, {', '.join(['%s'] * len(_FIELDS))}) IF NOT EXISTS",
            (s.name, s.keyspace, s.table, s.sink, s.sink_config, s.filter, list(s.columns) if s.columns else None,
             list(s.operations), s.start, s.state, s.last_error, s.revision, s.epoch, s.created,
             s.updated)).was_applied
        if not applied:
            raise DuplicateSubscription(f"a subscription named {s.name!r} exists already")
        return subscription

    def alter(self, name: str, change: Change) -> Subscription:
        """Apply `change`; the revision grows, so a runner restarts the subscription's query."""
        current = self.get(name)
        if current.state == "cancelled":
            raise InvalidSubscription(f"subscription {name!r} is cancelled")
        return self._write(current, current.altered(change), bump=True)

    def reset(self, name: str, start: str) -> Subscription:
        """Start over from `start`: the progress goes and the revision grows."""
        current = self.get(name)
        if current.state == "cancelled":
            raise InvalidSubscription(f"subscription {name!r} is cancelled")
        restarted = replace(current.altered(Change(start=_resolved(start))), epoch=current.epoch + 1)
        updated = self._write(current, restarted, bump=True)
        for table in ("subscription_progress", "subscription_status", "subscription_snapshots"):
            self.session.execute(f"DELETE FROM {self.keyspace}.{table} WHERE subscription = %s", (name,))
        return updated

    def set_state(self, name: str, state: str) -> Subscription:
        """An operator's pause (active or failing → paused), resume (paused or failing → active, the
        revision grows so a runner starts it again) or cancel (any → cancelled, for good)."""
        current = self.get(name)
        allowed = {"paused": ("active", "failing", "paused"), "active": ("paused", "failing", "active"),
                   "cancelled": ("active", "paused", "failing", "cancelled")}
        if current.state not in allowed[state]:
            raise InvalidSubscription(f"subscription {name!r} is {current.state}: it cannot become {state}")
        return self._write(current, replace(current, state=state, last_error=None if state == "active" else
                                            current.last_error), bump=state == "active")

    def report(self, seen: Subscription, error: str | None) -> bool:
        """A runner's word on the subscription it runs at revision `seen.revision`: failing with `error`,
        or active again (None). The revision stays; False when an operator changed it meanwhile."""
        state = "failing" if error is not None else "active"
        applied = self.session.execute(
            f"UPDATE {self.keyspace}.subscriptions SET state = %s, last_error = %s, updated = %s WHERE name = %s"
            " IF revision = %s AND state IN ('active', 'failing')",
            (state, error, _now(), seen.name, seen.revision)).was_applied
        return applied

    def record_progress(self, name: str, ranges: list[RangeProgress]) -> None:
        """The ranges' progress after a micro-batch is in the sink (sink write → progress committed)."""
        statement = self.session.prepare(
            f"UPDATE {self.keyspace}.subscription_progress SET stage = ?, rows_delivered = ?, log_position = ?,"
            " epoch = ?, batch_id = ?, snapshot_token = ?, updated = ? WHERE subscription = ? AND range_end = ?")
        for p in ranges:
            self.session.execute(statement, (p.stage, p.rows_delivered, p.log_position, p.epoch, p.batch_id,
                                             p.snapshot_token, p.updated, name, p.range_end))

    def begin_snapshot(self, name: str, epoch: int, version: SnapshotVersion) -> SnapshotVersion:
        """Record `version` as the snapshot of `epoch`, unless one is recorded already: that one stands."""
        applied = self.session.execute(
            f"INSERT INTO {self.keyspace}.subscription_snapshots (subscription, epoch, started, topic, offsets)"
            " VALUES (%s, %s, %s, %s, %s) IF NOT EXISTS",
            (name, epoch, version.started, version.topic, json.dumps(version.offsets))).was_applied
        return version if applied else self.snapshot_version(name, epoch)

    def finish_snapshot(self, name: str, epoch: int) -> None:
        """Every range is read and in the sink: the log follows."""
        self.session.execute(f"UPDATE {self.keyspace}.subscription_snapshots SET finished = %s"
                             " WHERE subscription = %s AND epoch = %s", (_now(), name, epoch))

    def record_status(self, name: str, status: Status) -> None:
        self.session.execute(
            f"UPDATE {self.keyspace}.subscription_status SET runner = %s, lag_seconds = %s, rows_filtered = %s,"
            " retries = %s, updated = %s WHERE subscription = %s",
            (status.runner, status.lag_seconds, status.rows_filtered, status.retries, status.updated, name))

    def _write(self, current: Subscription, new: Subscription, bump: bool) -> Subscription:
        new = replace(new, revision=current.revision + (1 if bump else 0), updated=_now())
        applied = self.session.execute(
            f"UPDATE {self.keyspace}.subscriptions SET sink_config = %s, filter = %s, columns = %s, operations = %s,"
            " start = %s, state = %s, last_error = %s, revision = %s, epoch = %s, updated = %s WHERE name = %s"
            " IF revision = %s",
            (new.sink_config, new.filter, list(new.columns) if new.columns else None, list(new.operations),
             new.start, new.state, new.last_error, new.revision, new.epoch, new.updated, new.name,
             current.revision)).was_applied
        if not applied:
            raise ConcurrentChange(f"subscription {new.name!r} changed meanwhile; read it again")
        return new


def _resolved(start: str) -> str:
    """`now` as the time it was said, so the start does not move when a runner claims it later."""
    return _now().isoformat() if start == "now" else start


def _subscription(row: Any) -> Subscription:
    return Subscription(
        name=row.name, keyspace=row.keyspace_name, table=row.table_name, sink=row.sink,
        sink_config=dict(row.sink_config or {}), filter=row.filter,
        columns=tuple(row.columns) if row.columns else None, operations=tuple(row.operations or ()),
        start=row.start, state=row.state, last_error=row.last_error, revision=row.revision, epoch=row.epoch or 1,
        created=row.created, updated=row.updated)
