"""What every mirror sink does around the merge: read each table's layout from the cluster, turn a
task's rows into each table's changes, and merge them chunk by chunk into a store."""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from schemas.runtime.access import CassandraCluster
from schemas.runtime.session import connect
from schemas.tables.loader import read_table
from schemas.tables.model import Table, UserType

from .engine import MergeCounts, MirrorStore, RawChange, merge_raw
from .layout import MirrorLayout
from .state import Rules

log = logging.getLogger(__name__)

# Changes merged at a time: the states one read of the store loads.
MERGE_CHUNK = 20_000


class Layouts:
    """Each base table's schema, read from the cluster when a batch asks (so DDL is followed); one
    session for the sink's life."""

    def __init__(self, cluster: CassandraCluster) -> None:
        self.cluster = cluster
        self._session: Any = None

    def table(self, keyspace: str, table: str) -> tuple[Table | None, Mapping[str, UserType]]:
        """The table (None: it no longer exists) and its keyspace's user types."""
        if self._session is None:
            _, self._session = connect(*self.cluster)
        return read_table(self._session, keyspace, table)

    def get(self, keyspace: str, table: str) -> MirrorLayout | None:
        """The mirror layout; None: the table no longer exists."""
        base, user_types = self.table(keyspace, table)
        return None if base is None else MirrorLayout.of_table(base, user_types)

    def close(self) -> None:
        if self._session is not None:
            self._session.cluster.shutdown()
            self._session = None


def prepare_tables(layouts: Layouts, names: Iterable[tuple[str, str]], store_of: Callable[[MirrorLayout], MirrorStore],
                   counts: Mapping[tuple[str, str], int] | None = None) -> list[tuple[MirrorLayout, MirrorStore]]:
    """Each table named (keyspace, table) to merge into, with the store `store_of` prepares for it (its
    tables created or brought to the base table's columns). A table that no longer exists keeps its
    mirror as it was; its changes in the batch (`counts` of them per table) are not merged."""
    out = []
    for keyspace, table in sorted(set(names)):
        layout = layouts.get(keyspace, table)
        if layout is None:
            if counts and counts.get((keyspace, table)):
                log.warning("%s.%s no longer exists: %d of its changes not merged into its mirror, which stays as"
                            " it was", keyspace, table, counts[(keyspace, table)])
            continue
        out.append((layout, store_of(layout)))
    return out


def merge_batch(tables: list[tuple[MirrorLayout, MirrorStore]], batch: dict[tuple[str, str], list[RawChange]],
                chunk: int = MERGE_CHUNK, purge: bool = False) -> MergeCounts:
    """Merge each table's changes in `batch` into its store, `chunk` changes at a time; with `purge`, remove
    what has expired too (`engine.merge`)."""
    total = MergeCounts()
    now = int(time.time())
    for layout, store in tables:
        rules = Rules(layout)
        raw = batch.get((layout.keyspace, layout.table), [])
        for start in range(0, max(len(raw), 1) if purge else len(raw), chunk):
            total.add(merge_raw(rules, store, raw[start:start + chunk], now, purge and start == 0))
    # A purge that finds nothing expired says so only at debug level.
    log.log(logging.INFO if total.changes or total.rows_written else logging.DEBUG,
            "mirror: %d changes merged into %d partitions (%d read whole); %d states and %d rows written",
            total.changes, total.partitions, total.whole_partitions, total.states_written, total.rows_written)
    return total
