"""Merging a micro-batch of changes into a mirror, through a store that keeps the states and the mirror
table (`MirrorStore`: one per sink, PostgreSQL, MySQL, Delta).

For each chunk of changes: load the states they touch (each partition's record where it has one, each
row named), the whole partition where a change reaches beyond one row (a partition or range deletion, a
static row: its values are on every row, and a partition of static values only shows as one row); merge;
prune; save the states that changed and the mirror rows they decide, as of now. A purge (`purge=True`, no
changes needed) reads again the states whose cells have expired since they were saved
(`MirrorStore.due`), so an expired value leaves the mirror.

A replayed batch merges the same changes again, which changes nothing: no bookkeeping of batches is
needed for the mirror's exactness.

The sinks merge the changes as the batch carries them, JSON texts (`merge_raw`): each partition in the
native core (`native`) where it can, else by the rules here (`state.Rules`), which are the reference the
native merge is tested against. An observer (`images`) watches each change the reference merges, and is
given what the native core saw of a partition it merged (`Observer.merged`).
"""
from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from .layout import MirrorError, MirrorLayout
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

    def merged(self, changes: Sequence[RawChange], images: list[NativeImage]) -> None:
        """Called once the native core merged a partition's `changes`, with the images it made of them."""

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


# (serialized partition key, key JSON, cells JSON) of one change, as the batch carries it, and for an
# observer what the caller knows of the change beyond them (`Change.origin`).
RawChange = tuple[bytes, str, str] | tuple[bytes, str, str, Any]
# (the change's place among its partition's, the row's key, its values before, after) of an image the native
# core made (`images`).
NativeImage = tuple[int, dict[str, Any], dict[str, Any] | None, dict[str, Any] | None]


def origin_of(change: RawChange) -> Any:
    return change[3] if len(change) > 3 else None


def changes_of(layout: MirrorLayout, raw: Iterable[RawChange]) -> Iterable[Change]:
    names = [c.name for c in layout.partition_key]
    for change in raw:
        values = json.loads(change[1])
        yield Change(change[0], [values[n] for n in names], json.loads(change[2]), origin_of(change))


def merge(rules: Rules, store: MirrorStore, changes: Iterable[Change], now: int, purge: bool = False,
          observer: Observer | None = None) -> MergeCounts:
    """Merge `changes` (one table's) into `store`, a partition's in the order given; `now` (s) decides what
    has expired; with `purge`, the states with something expired are read again too; `observer` watches
    each change merged. The reference: every partition merged by `rules` in Python."""
    def merged(p: bytes, given: list[Change], record_text: str | None, texts: dict[str, str], due: set[str],
               whole: bool) -> tuple[list[StoredState], list[MirrorRow]]:
        return _merged(rules, p, given, record_text, texts, due, whole, now=now, observer=observer)

    return _merge(rules, store, ((c.partition, _touched(rules, c.cells), c) for c in changes), now, purge, merged)


def merge_raw(rules: Rules, store: MirrorStore, raw: Iterable[RawChange], now: int, purge: bool = False,
              observer: Observer | None = None) -> MergeCounts:
    """`merge` of changes as the batch carries them (JSON texts): each partition merged by the native core
    (`native.native_rules`), or by the reference where the native core gives way or is not built."""
    native = rules.native
    if native is None:
        return merge(rules, store, changes_of(rules.layout, raw), now, purge, observer)

    names = [c.name for c in rules.layout.partition_key]
    clustering = [c.name for c in rules.layout.clustering]
    static_row = dict.fromkeys(clustering)  # the key of a partition's static-only row

    def merged(p: bytes, given: list[RawChange], record_text: str | None, texts: dict[str, str],
               due: set[str], whole: bool) -> tuple[list[StoredState], list[MirrorRow]]:
        done = native.merge(given[0][1] if given else None, record_text,
                            [(row, text) for row, text in texts.items() if row != RECORD], [c[2] for c in given],
                            now, due, whole, observer is not None)
        if done is None:
            return _merged(rules, p, list(changes_of(rules.layout, given)), record_text, texts, due, whole, now=now,
                           observer=observer)
        partition_values, states, rows, images = done
        if observer is not None:
            observer.merged(given, images)
        partition_key = dict(zip(names, partition_values))
        return ([StoredState(p, row, text, expires) for row, text, expires in states],
                [MirrorRow(p, {**partition_key, **(static_row if key is None else dict(zip(clustering, key)))}, values)
                 for key, values in rows])

    return _merge(rules, store, ((c[0], native.touched(c[2]), c) for c in raw), now, purge, merged)


def _touched(rules: Rules, cells: Mapping[str, Any]) -> str | None:
    """The row key of the one row a change touches; None when it reaches beyond one row."""
    if cells.get("r") is not None or cells["s"] or cells["k"] is None or not rules.statics.isdisjoint(cells["c"]):
        return None  # a range or partition deletion, or the static row (a snapshot's row too)
    return row_key(cells["k"])


Merged = Callable[..., tuple[list[StoredState], list[MirrorRow]]]


def _merge(rules: Rules, store: MirrorStore, changes: Iterable[tuple[bytes, str | None, Any]], now: int, purge: bool,
           merged: Merged) -> MergeCounts:
    """The merge around each partition's: the changes grouped by partition (each with the row it touches,
    None: beyond one row), the states they need loaded, each partition merged (`merged`: its changes, its
    record's text, its states' texts, its row keys due, whether it was read whole), the result saved."""
    layout = rules.layout
    by_partition: dict[bytes, list[Any]] = defaultdict(list)
    keys: set[StateKey] = set()
    whole: set[bytes] = set()
    counts = MergeCounts()
    for partition, touched, change in changes:
        counts.changes += 1
        by_partition[partition].append(change)
        if touched is None:
            whole.add(partition)
        else:
            keys.add((partition, touched))
    due = set(store.due(now)) if purge else set()
    keys |= due
    partitions = set(by_partition) | {p for p, _ in due}
    keys |= {(p, RECORD) for p in partitions}
    # A partition of a table without clustering columns holds two states at most, its record and its row:
    # it is read whole by its partition alone, half the keys.
    read_whole = set() if layout.clustering else partitions
    loaded = store.load(keys) if layout.clustering else store.load_partitions(partitions)
    whole |= {p for p, row in due if row == RECORD}
    if layout.has_static:
        for p in partitions - whole:
            text = loaded.get((p, RECORD))
            if text is not None and rules.read_static(json.loads(text), now)[1]:
                whole.add(p)  # a row appearing or going may show or hide the static-only row
    if whole - read_whole:
        loaded.update(store.load_partitions(whole - read_whole))
    stored: dict[bytes, dict[str, str]] = defaultdict(dict)
    for (p, row), text in loaded.items():
        stored[p][row] = text
    due_rows: dict[bytes, set[str]] = defaultdict(set)
    for p, row in due:
        due_rows[p].add(row)

    states: list[StoredState] = []
    mirror: list[MirrorRow] = []
    for p in partitions:
        texts = stored.get(p, {})
        partition_states, rows = merged(p, by_partition.get(p, []), texts.get(RECORD), texts, due_rows.get(p, set()),
                                        p in whole)
        states += partition_states
        mirror += rows
        counts.partitions += 1
    counts.whole_partitions = len(whole)
    counts.states_written, counts.rows_written = len(states), len(mirror)
    store.save(states, mirror)
    return counts


def _merged(rules: Rules, p: bytes, changes: list[Change], record_text: str | None, texts: dict[str, str],
            due: set[str], whole: bool, *, now: int, observer: Observer | None = None
            ) -> tuple[list[StoredState], list[MirrorRow]]:
    """One partition merged by the reference: its states and the mirror rows they decide."""
    layout = rules.layout
    record = json.loads(record_text) if record_text is not None else {"p": changes[0].key}
    rows = {row: json.loads(text) for row, text in texts.items() if row != RECORD}
    for change in changes:
        try:
            seen = None if observer is None else observer.before(change, record, rows)
            rules.apply(change.cells, record, rows)
            if observer is not None:
                observer.after(change, seen, record, rows)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise MirrorError(f"{layout.qualified}: a change the mirror cannot merge ({type(exc).__name__}:"
                              f" {exc}): {canonical(change.cells)[:1000]}") from exc
    rules.prune(record, rows)
    states: list[StoredState] = []
    # A new record of nothing but the partition key is stored only beside a state that can expire (`state`).
    bare = record_text is None and record.keys() == {"p"}
    record_changed = not bare and _save(states, p, RECORD, record, record_text, RECORD in due, rules, now)
    changed = []
    for row, state in rows.items():
        if _save(states, p, row, state if state else None, texts.get(row), row in due, rules, now):
            changed.append(row)
    if bare and any(s.expires is not None for s in states):
        states.insert(0, StoredState(p, RECORD, canonical(record), None))
    return states, _mirror_rows(rules, p, record, rows, rows if record_changed else changed, whole, now)


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

