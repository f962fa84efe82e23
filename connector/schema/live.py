"""The cluster's schema, kept current while tables and types are created, altered and dropped.

Schema change events pushed by Cassandra trigger a refresh at once (a dedicated connection registered
for SCHEMA_CHANGE, as the driver's control connection does); a periodic `schema_version` check is the
safety net for events lost across reconnects. Each refresh is applied to the `SchemaHistory`, logged,
counted and stored locally. The reader asks for a refresh itself when a mutation names an unknown
table or does not fit (`on_schema_miss`), so a table created a moment ago is never missed.
"""
from __future__ import annotations

import logging
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Sequence

from connector.commitlog import UNDECODABLE, Cell, Change, SchemaMismatch, UnknownTable
from schemas.change import write_time
from schemas.runtime.access import CassandraSecurity

from .history import SchemaChange, SchemaHistory
from schemas.tables.loader import read_snapshot
from .logged import FlagRow, LoggedTables, column_row, type_row
from schemas.runtime.session import connect
from schemas.tables.model import SchemaSnapshot, Table
from .store import load_history, save_history

log = logging.getLogger("ringtail.schema")

COALESCE_SECONDS = 0.05  # one DDL statement raises several events; one refresh serves them all


class SchemaUnavailable(RuntimeError):
    """Cassandra cannot be asked for its schema and no stored copy can answer: retry later."""


class LiveSchema:
    def __init__(self, hosts: Sequence[str], port: int = 9042, *, security: CassandraSecurity | None = None,
                 store: Path | None = None,
                 check_interval: float = 5.0, newest_segment: Callable[[], int] = lambda: 0,
                 on_applied: Callable[[list[SchemaChange]], None] | None = None) -> None:
        self.hosts, self.port, self.security = list(hosts), port, security
        self.store = store
        self.check_interval = check_interval
        self.newest_segment = newest_segment
        self.on_applied = on_applied
        self.applied = 0  # schema changes applied since start
        self._history: SchemaHistory | None = None
        self.logged = LoggedTables()  # tables no refresh saw, from the schema rows in the commit log
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = threading.Event()
        self._cluster: Any = None
        self._session: Any = None
        self._events: Any = None  # the connection Cassandra pushes schema events on
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> LiveSchema:
        """Load the stored copy, then the cluster's schema; a stored copy lets the connector start
        while Cassandra is down (it catches up in the background)."""
        if self.store is not None:
            self._history = load_history(self.store)
        try:
            self.refresh("start")
        except SchemaUnavailable:
            if self._history is None:
                raise
            log.warning("Cassandra does not answer; decoding with the stored schema from %s", self.store)
        self._thread = threading.Thread(target=self._watch, name="ringtail-schema", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._closed.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._drop_session()

    def __enter__(self) -> LiveSchema:
        return self.start()

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # -- what the reader and the connector use ---------------------------------------------

    @property
    def history(self) -> SchemaHistory:
        if self._history is None:
            raise SchemaUnavailable("no schema loaded yet")
        return self._history

    @property
    def snapshot(self) -> SchemaSnapshot:
        """The snapshot to decode with (current tables and dropped ones still needed)."""
        return self.history.decoding

    def captures(self, change: Change) -> bool:
        """Whether the change is CDC data: its table had cdc = true when it was written."""
        return self.history.captures(change.table.id, write_time(change))

    @staticmethod
    def observes(table: Table) -> bool:
        """Whether `observe` learns from the table's changes (`system_schema.tables`, `.columns`, `.types`)."""
        return table.keyspace == "system_schema" and table.name in ("tables", "columns", "types")

    def observe(self, change: Change) -> None:
        """Learn from the commit log itself, which holds every DDL statement's schema rows: each CREATE
        and ALTER writes the table's row of `system_schema.tables` with its `cdc` flag and the
        statement's exact timestamp, and a row of `system_schema.columns` per column it adds; each
        CREATE and ALTER TYPE the type's row of `system_schema.types`. The rows of tables no refresh has
        seen are kept (`logged`) to build such a table when its changes come.
        Called for every change read, in log order, before the changes after it are judged."""
        if not self.observes(change.table):
            return
        if change.table.name == "columns":
            self._observe_column(change)
            return
        if change.table.name == "types":
            self._observe_type(change)
            return
        cdc, table_id = change.cells.get("cdc"), change.cells.get("id")
        if not (isinstance(cdc, Cell) and isinstance(table_id, Cell)) or cdc.value is None or table_id.value is None:
            return
        if self.snapshot.table(table_id.value) is None:
            self.logged.table_row(change, table_id.value, FlagRow(cdc.value, cdc.timestamp))
        with self._lock:
            history = self.history.record_flag(table_id.value, cdc.value, cdc.timestamp)
            if history is not self._history:
                self._publish(history)

    def _observe_column(self, change: Change) -> None:
        """A column the schema here lacks is one added after the last refresh: refresh; if its table
        was dropped meanwhile, its last schema here is too old, so the column is added to it. A name
        two known tables share (dropped and created again) is left alone."""
        column = column_row(change)
        if column is None:
            return
        keyspace, name = change.partition_key[0], change.clustering[0]
        named = self.snapshot.tables_named(keyspace, name)
        if not named:
            self.logged.column_row(change, column)
            return
        table = _only(named)
        if table is None or _has_column(table, column.name):
            return
        if table.id in self.history.current.tables:
            if not self._refreshed(f"column {column.name} of {keyspace}.{name} in the commit log"):
                return
            table = _only(self.snapshot.tables_named(keyspace, name))
            if table is None or _has_column(table, column.name) or table.id not in self.history.retained:
                return
        with self._lock:
            if table.id in self.history.retained:
                self._publish(self.history.with_retained_column(table.id, column))
        log.info("column %s %s of the dropped table %s.%s learnt from the commit log", column.name, column.type,
                 keyspace, name)

    def _observe_type(self, change: Change) -> None:
        """A user type with more fields than the schema here knows was altered after the last refresh:
        refresh; the dropped tables of its keyspace that kept an older version get this one."""
        udt = type_row(change)
        if udt is None:
            return
        self.logged.type_row(udt)
        current = self.history.current.types_of(udt.keyspace).get(udt.name)
        if current is not None and len(current.field_types) < len(udt.field_types):
            if not self._refreshed(f"type {udt.keyspace}.{udt.name} in the commit log"):
                return
        with self._lock:
            history = self.history.with_retained_type(udt)
            if history is not self._history:
                self._publish(history)
                log.info("type %s.%s (%d fields) of dropped tables learnt from the commit log", udt.keyspace,
                         udt.name, len(udt.field_types))

    def _refreshed(self, reason: str) -> bool:
        """Refresh for what the commit log showed; False (logged) when Cassandra does not answer: a
        change that does not fit the schema then asks again."""
        try:
            self.refresh(reason)
        except SchemaUnavailable as exc:
            log.warning("%s", exc)
            return False
        return True

    def on_schema_miss(self, miss: UnknownTable | SchemaMismatch) -> SchemaSnapshot | str | None:
        """Reader policy: refresh, and have the entry decoded again with the snapshot after it (the
        reader retries only with one newer than the snapshot that missed); a table the cluster no
        longer has is built from its schema rows read in the commit log, when they were. An entry
        nothing helps — its table created before reading began and dropped before it was ever seen,
        or its columns not all known — is skipped when no table has had cdc = true, else handed over
        whole (UNDECODABLE) to become a dead letter: the rest of its segment is read on, and nothing
        is lost."""
        self.refresh(f"{miss.__class__.__name__} at {Path(miss.segment).name}:{miss.position}")
        after = self.snapshot
        if not isinstance(miss, UnknownTable) or after.table(miss.table_id) is not None:
            # The reader decodes the entry again with it, or hands it over whole when it is the snapshot
            # that missed (a refresh that finds nothing new keeps it, so the retries end).
            return after
        logged = self.logged.table(miss.table_id)
        if logged is not None:
            return self._adopt(*logged)
        if not self.history.ever_cdc:
            log.info("skipping the entry at %s:%d: %s (no table has cdc enabled)", Path(miss.segment).name,
                     miss.position, miss)
            return None
        return UNDECODABLE

    def _adopt(self, table: Table, flag: FlagRow) -> SchemaSnapshot:
        """A table no refresh saw, as the commit log's schema rows describe it: kept as a dropped one
        (the cluster no longer has it), with its cdc flag as its CREATE or last ALTER wrote it."""
        with self._lock:
            history = self.history.with_retained_table(table, self.newest_segment(),
                                                       self.logged.types_of(table.keyspace)).record_flag(
                table.id, flag.cdc, flag.at)
            self._publish(history)
        log.info("table %s (%s) learnt from the commit log: created and dropped before a refresh saw it",
                 table.qualified_name, table.id)
        return self.snapshot

    def release(self, segment_id: int) -> None:
        """Every segment up to `segment_id` is delivered: forget dropped tables only they held."""
        with self._lock:
            history = self.history.release(segment_id)
            if history is not self._history:
                self._publish(history)

    # -- refreshing ---------------------------------------------------------------------------

    def refresh(self, reason: str) -> list[SchemaChange]:
        """Read the cluster's schema now and apply it; the changes found are logged and counted."""
        with self._lock:
            try:
                version, snapshot = read_snapshot(self._open_session())
            except Exception as exc:  # the driver's errors have no common base
                self._drop_session()
                raise SchemaUnavailable(f"cannot read the schema from Cassandra {self.hosts}:{self.port}: "
                                        f"{exc}") from exc
            if self._history is None:
                history, changes = SchemaHistory.first(snapshot, version), []
                log.info("schema loaded (%s): %d tables, version %s", reason, len(snapshot.tables), version)
            else:
                history, changes = self._history.apply(snapshot, version, self.newest_segment(),
                                                       time.time_ns() // 1000)
            if changes or self.store is not None and not self.store.exists():
                self._publish(history)
            elif self._history is None or version != self._history.version:
                self._history = history
            # else nothing new: the history (and the snapshot readers hold) stays the same object
            for change in changes:
                log.info("schema change applied (%s): %s", reason, change)
            self.applied += len(changes)
        if changes and self.on_applied is not None:
            self.on_applied(changes)
        return changes

    def _publish(self, history: SchemaHistory) -> None:
        # Stored before it is current: a copy read by another process, or after a crash, is never
        # older than the schema a delivered change was decoded with.
        if self.store is not None:
            save_history(self.store, history)
        self._history = history

    def _open_session(self) -> Any:
        if self._session is None:
            self._cluster, self._session = connect(self.hosts, self.port, self.security)
        return self._session

    def _drop_session(self) -> None:
        if self._events is not None:
            self._events.close()
        if self._cluster is not None:
            self._cluster.shutdown()
        self._cluster = self._session = self._events = None

    def _watch(self) -> None:
        while not self._closed.is_set():
            self._listen()
            woken = self._wake.wait(self.check_interval)
            if self._closed.is_set():
                return
            try:
                if woken:
                    time.sleep(COALESCE_SECONDS)
                    self._wake.clear()
                    self.refresh("schema change event")
                elif self._cluster_version() != self._history_version():
                    self.refresh("schema_version changed")
            except SchemaUnavailable as exc:
                log.warning("%s; retrying in %.0f s", exc, self.check_interval)

    def _history_version(self) -> uuid.UUID | None:
        return self._history.version if self._history is not None else None

    def _cluster_version(self) -> uuid.UUID | None:
        try:
            row = self._open_session().execute("SELECT schema_version FROM system.local").one()
        except Exception as exc:  # the driver's errors have no common base
            self._drop_session()
            raise SchemaUnavailable(f"cannot read schema_version from Cassandra: {exc}") from exc
        return row.schema_version if row else None

    def _listen(self) -> None:
        """Keep a connection registered for schema change events."""
        if self._events is not None and not (self._events.is_closed or self._events.is_defunct):
            return
        try:
            self._open_session()
            host = next(iter(self._cluster.metadata.all_hosts()))
            # The driver's own way to open a plain connection (the control connection uses it too).
            connection = self._cluster.connection_factory(host.endpoint)
            connection.register_watchers({"SCHEMA_CHANGE": self._on_event}, register_timeout=10)
            self._events = connection
        except Exception as exc:  # the periodic version check covers the time without events
            log.warning("cannot register for schema change events: %s", exc)

    def _on_event(self, event: dict) -> None:
        log.debug("schema change event %s", event)
        self._wake.set()


def _only(tables: list[Table]) -> Table | None:
    return tables[0] if len(tables) == 1 else None


def _has_column(table: Table, name: str) -> bool:
    return table.column(name) is not None or name in table.dropped_columns
