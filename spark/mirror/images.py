"""Images: what each change did to `SELECT *`, row by row — the row before the change and after it, read
from the mirror's state as the change is merged into it (Debezium's `before` and `after`).

`engine.merge` applies a partition's changes in the order it is given them (the caller orders them by
write time); `Images` watches it, and takes the images the native core made of a partition it merged by
these rules (`spark/native/src/mirror/images.rs`). Before a change it reads every row the change can
alter, and again after it: the row the change names, or every row of the partition for a change reaching
beyond one row (a partition or range deletion, static cells: a static value shows on every row). Each row
whose values differ gives an image; one whose values did not change gives none — a replica's copy of a
change already merged, or a write older than what the state holds, changes no row.

A partition holding static values and no row, which `SELECT *` shows as one row whose clustering columns
are null, has no image: that key is no primary key a consumer could keep a row under (an SQL table's
would refuse it). Its static values show on its rows once it has some.

"Before" is therefore the row as merged when the change was applied, not the row at the change's write
time: a change arriving after a newer write to the same cells changes nothing and has no image. What
has expired is read as of the merge's `now`, as the mirror reads it.

A row also changes with no change when a TTL runs out: `expired` images a partition's rows as they were
just before the first of its cells expired and as they are now (a purge, between batches, or a batch
before it merges changes into a partition that has cells run out: `sinks.images.ImageTask`).
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from .engine import Change, NativeImage, RawChange, origin_of
from .state import Rules, row_key

Values = dict[str, Any]  # every column of the row, as `SELECT *` shows it (the log's JSON forms)
_EVERY_ROW = {"k": None, "s": True, "c": {}}  # cells that reach every row of a partition (`_rows_reached`)


class RowImage(NamedTuple):
    origin: Any  # what the caller knew of the change that made it (`Change.origin`); None: cells that expired
    key: Values  # the row's primary key
    before: Values | None  # None: not in `SELECT *` before the change
    after: Values | None  # None: not in `SELECT *` after it


class Images:
    """The images of the changes `engine.merge` applies, in the order applied (its `Observer`)."""

    def __init__(self, rules: Rules, now: int) -> None:
        self.rules, self.now = rules, now
        layout = rules.layout
        self._partition_names = [c.name for c in layout.partition_key]
        self._clustering_names = [c.name for c in layout.clustering]
        self._has_static = layout.has_static
        self.images: list[RowImage] = []

    def before(self, change: Change, record: Mapping[str, Any], rows: Mapping[str, dict]) -> dict:
        return self._read(change.cells, record, rows, self.now)

    def after(self, change: Change, seen: dict, record: Mapping[str, Any], rows: Mapping[str, dict]) -> None:
        self._add(change.origin, record, seen, self._read(change.cells, record, rows, self.now))

    def merged(self, changes: Sequence[RawChange], images: list[NativeImage]) -> None:
        self.images += [RowImage(origin_of(changes[at]), key, before, after) for at, key, before, after in images]

    def expired(self, record: Mapping[str, Any], rows: Mapping[str, dict], before: int) -> None:
        """Image a partition whose cells expired after `before` (s) and by now: each row as read at `before`
        and now."""
        self._add(None, record, self._read(_EVERY_ROW, record, rows, before),
                  self._read(_EVERY_ROW, record, rows, self.now))

    def _add(self, origin: Any, record: Mapping[str, Any], was: dict[str, Values],
             now: dict[str, Values]) -> None:
        """An image of each row whose values differ between `was` and `now`."""
        for row in (*was, *(r for r in now if r not in was)):
            if was.get(row) != now.get(row):
                self.images.append(RowImage(origin, self._key(record, row), was.get(row), now.get(row)))

    def _rows_reached(self, cells: Mapping[str, Any], rows: Mapping[str, dict]) -> Iterable[str]:
        if cells.get("r") is None and not cells["s"] and cells["k"] is not None \
                and self.rules.statics.isdisjoint(cells["c"]):
            return (row_key(cells["k"]),)
        named = () if cells["k"] is None else (row_key(cells["k"]),)
        return sorted({*rows, *named})  # in an order of their own, not the order the task was given them in

    def _read(self, cells: Mapping[str, Any], record: Mapping[str, Any], rows: Mapping[str, dict],
              at: int) -> dict[str, Values]:
        """Each row a change of `cells` can alter that `SELECT *` shows at `at` (s): its values, by row key."""
        rules = self.rules
        static = rules.read_static(record, at)[0] if self._has_static else {}
        shown: dict[str, Values] = {}
        for row in self._rows_reached(cells, rows):
            state = rows.get(row)
            values, live = rules.read_row(record, row, state, at) if state else ({}, False)
            if live:
                shown[row] = {**self._key(record, row), **static, **values}
        return shown

    def _key(self, record: Mapping[str, Any], row: str) -> Values:
        return {**dict(zip(self._partition_names, record["p"])),
                **dict(zip(self._clustering_names, json.loads(row)))}
