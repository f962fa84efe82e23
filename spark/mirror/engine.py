"""Merging a micro-batch of changes into a mirror, through a store that keeps the states and the mirror
table (`MirrorStore`: one per sink, PostgreSQL, MySQL, Delta).

For each chunk of changes: load the states they touch (each partition's record, each row named), the
whole partition where a change reaches beyond one row (a partition or range deletion, a static row:
its values are on every row, and a partition of static values only shows as one row); merge; prune;
save the states that changed and the mirror rows they decide, as of now. A purge (`purge=True`, no
changes needed) reads again the states whose cells have expired since they were saved
(`MirrorStore.due`), so an expired value leaves the mirror.

A replayed batch merges the same changes again, which changes nothing: no bookkeeping of batches is
needed for the mirror's exactness.
"""
from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from .layout import MirrorError
from .state import RECORD, Rules, canonical, row_key


StateKey = tuple[bytes, str]  # (serialized partition key, row key)


class StoredState(NamedTuple):
    partition: bytes
    row: str
    state: str | None  # JSON text; None: remove it
    expires: int | None  # when (s) something in it expires


class MirrorRow(NamedTuple):
    partition: bytes
    key: dict[str, Any]  # primary key values (clustering ones null for a partition's static-only row)
    values: dict[str, Any] | None  # every other column's; None: the row is not in `SELECT *`


class MirrorStore(Protocol):
    def load(self, keys: Collection[StateKey]) -> dict[StateKey, str]:
        """The stored states of these keys (those that exist)."""

    def load_partitions(self, partitions: Collection[bytes]) -> dict[StateKey, str]:
        """Every stored state of these partitions."""

    def due(self, now: int) -> list[StateKey]:
        """The states with something expired by `now` (s)."""

    def save(self, states: list[StoredState], rows: list[MirrorRow]) -> None:
        """Write states and mirror rows (a row first removed by its key, then written when it has values)."""


class Change(NamedTuple):
    partition: bytes
    key: list[Any]  # the partition key's values
    cells: Mapping[str, Any]  # as `spark.delivery.events.cell_changes` writes it
    origin: Any = None  # what the caller knows of the change beyond its cells (an observer's business)


class Observer(Protocol):
    """Watches each change as it is merged into its partition's state (`images.Images`)."""

    def before(self, change: Change, record: Mapping[str, Any], rows: Mapping[str, dict]) -> Any:
        """Called before `change` is applied; what it returns is given to `after`."""

    def after(self, change: Change, seen: Any, record: Mapping[str, Any], rows: Mapping[str, dict]) -> None:
        """Called once `change` is applied to the partition's `record` and `rows`."""


@dataclass
class MergeCounts:
    changes: int = 0
    partitions: int = 0
    whole_partitions: int = 0  # read whole: a deletion beyond one row, or static values
    states_written: int = 0
    rows_written: int = 0

    def add(self, other: MergeCounts) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


def merge(rules: Rules, store: MirrorStore, changes: Iterable[Change], now: int, purge: bool = False,
          observer: Observer | None = None) -> MergeCounts:
    """Merge `changes` (one table's) into `store`, a partition's in the order given; `now` (s) decides what
    has expired; with `purge`, the states with something expired are read again too; `observer` watches
    each change merged."""
    layout = rules.layout
    by_partition: dict[bytes, list[Change]] = defaultdict(list)
    partition_keys: dict[bytes, list[Any]] = {}
    keys: set[StateKey] = set()
    whole: set[bytes] = set()
    counts = MergeCounts()
    for change in changes:
        counts.changes += 1
        cells = change.cells
        by_partition[change.partition].append(change)
        partition_keys.setdefault(change.partition, change.key)
        if cells.get("r") is not None or cells["s"] or cells["k"] is None or not rules.statics.isdisjoint(cells["c"]):
            whole.add(change.partition)  # a range or partition deletion, or the static row (a snapshot's row too)
        else:
            keys.add((change.partition, row_key(cells["k"])))
    due = set(store.due(now)) if purge else set()
    keys |= due
    partitions = set(by_partition) | {p for p, _ in due}
    keys |= {(p, RECORD) for p in partitions}
    loaded = store.load(keys)
    whole |= {p for p, row in due if row == RECORD}
    if layout.has_static:
        for p in partitions - whole:
            text = loaded.get((p, RECORD))
            if text is not None and rules.read_static(json.loads(text), now)[1]:
                whole.add(p)  # a row appearing or going may show or hide the static-only row
    if whole:
        loaded.update(store.load_partitions(whole))
    stored: dict[bytes, dict[str, str]] = defaultdict(dict)
    for (p, row), text in loaded.items():
        stored[p][row] = text

    states: list[StoredState] = []
    mirror: list[MirrorRow] = []
    for p in partitions:
        texts = stored.get(p, {})
        record_text = texts.get(RECORD)
        record = json.loads(record_text) if record_text is not None else {"p": partition_keys[p]}
        rows = {row: json.loads(text) for row, text in texts.items() if row != RECORD}
        for change in by_partition.get(p, ()):
            try:
                seen = None if observer is None else observer.before(change, record, rows)
                rules.apply(change.cells, record, rows)
                if observer is not None:
                    observer.after(change, seen, record, rows)
            except (KeyError, TypeError, ValueError, IndexError) as exc:
                raise MirrorError(f"{layout.qualified}: a change the mirror cannot merge ({type(exc).__name__}:"
                                  f" {exc}): {canonical(change.cells)[:1000]}") from exc
        rules.prune(record, rows)
        record_changed = _save(states, p, RECORD, record, record_text, (p, RECORD) in due, rules, now)
        changed = []
        for row, state in rows.items():
            if _save(states, p, row, state if state else None, texts.get(row), (p, row) in due, rules, now):
                changed.append(row)
        mirror.extend(_mirror_rows(rules, p, record, rows, rows if record_changed else changed, p in whole, now))
        counts.partitions += 1
    counts.whole_partitions = len(whole)
    counts.states_written, counts.rows_written = len(states), len(mirror)
    store.save(states, mirror)
    return counts


def _save(states: list[StoredState], partition: bytes, row: str, state: dict | None, before: str | None, due: bool,
          rules: Rules, now: int) -> bool:
    """Queue a state to be written when it changed or was due; whether it was."""
    text = None if state is None else canonical(state)
    if text == before and not due:
        return False
    states.append(StoredState(partition, row, text, None if state is None else rules.next_expiry([state], now)))
    return True


def _mirror_rows(rules: Rules, partition: bytes, record: Mapping[str, Any], rows: Mapping[str, dict],
                 changed: Iterable[str], whole: bool, now: int) -> list[MirrorRow]:
    layout = rules.layout
    partition_key = dict(zip((c.name for c in layout.partition_key), record["p"]))
    static, static_live = rules.read_static(record, now) if layout.has_static else ({}, False)
    out = []
    for row in changed:
        state = rows[row]
        key = {**partition_key, **dict(zip((c.name for c in layout.clustering), json.loads(row)))}
        values, live = rules.read_row(record, row, state, now) if state else ({}, False)
        out.append(MirrorRow(partition, key, {**static, **values} if live else None))
    if whole and layout.clustering:
        any_row = any(state and rules.read_row(record, row, state, now)[1] for row, state in rows.items())
        key = {**partition_key, **{c.name: None for c in layout.clustering}}
        regular = {c.name: None for c in layout.columns if not c.static}
        out.append(MirrorRow(partition, key, {**static, **regular} if static_live and not any_row else None))
    return out

