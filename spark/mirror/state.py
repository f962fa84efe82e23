"""A mirrored partition's state, Cassandra's rules for merging a change into it, and what `SELECT *`
returns from it.

The state is what a Cassandra replica keeps, minus nothing that decides a read: per partition a
*record* (row key ``""``) and a *row state* per clustering row (row key: its clustering values as JSON
text, `row_key`), each a JSON object:

* record: ``p`` the partition key values, ``d`` the partition deletion's timestamp, ``r`` the range
  deletions ``[[start, end, timestamp], ...]`` (bounds ``[clustering prefix, inclusive]``, null when
  open), and the static row's cells ``c`` and ``x`` as a row state has them;
* row state: ``l`` the primary key liveness ``[timestamp, ttl, expiry]``, ``d`` the row deletion's
  timestamp, ``c`` each single-cell column's cell ``[timestamp, ttl, expiry, tombstone, value]`` and
  ``x`` each multi-cell column's ``[deletion timestamp, {element key: cell}]`` (a key the event carries
  as a string as that string, any other as its canonical JSON text).

A record holding nothing but ``p`` is stored only once a state of its partition can expire: a purge,
which merges no change, reads the partition key there; a change carries it. A partition of new rows
without deletions or static cells (every insert of a table without clustering columns) so keeps one
state a row, not two. Once stored, a record stays.

Merging keeps, per cell, the one Cassandra's reconciliation keeps (`Rules.wins`): the newer timestamp;
at equal timestamps a tombstone over an expiring cell over a live one, then the later expiry, then the
greater serialized value. Deletions keep their newest timestamp and shadow everything written at or
before it (a tombstone wins a tie). So a merge is commutative, associative and idempotent: any order of
arrival, any replay and any replica's copy give the same state (but for a record of nothing but ``p``,
stored or not by when a cell with a TTL came, which decides nothing a read shows). What a deletion
shadows is dropped from the state (`Rules.prune`); the deletion stays, so a late copy of what it
shadowed stays shadowed. Tombstones are kept as long as the mirror is (a mirror has no gc_grace_seconds:
a late change may arrive at any time).

A row is in `SELECT *` when its liveness or any of its cells is live (not shadowed, not a tombstone, not
expired: an expiring cell is live while now < its expiry); a partition with a live static row and no
live row shows one row of its static values, clustering columns null.
"""
from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from schemas.cql import CqlType

from .layout import LIST, MAP, SET, SINGLE, UDT, DataColumn, MirrorLayout, is_read_list_key
from .native import native_rules
from .order import descending, sort_key, value_bytes

RECORD = ""  # the row key of a partition's record
_NONE = -(1 << 63)  # below every timestamp: "no deletion"

Cell = list  # [timestamp, ttl, expiry, tombstone, value]


# One encoder for every call (json.dumps with options builds a new one each time).
_CANONICAL = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode


def canonical(value: Any) -> str:
    """JSON text that is equal exactly when the values are: row keys, element keys, stored states."""
    return _CANONICAL(value)


def row_key(clustering: list) -> str:
    return canonical(clustering)


def _category(cell: Cell) -> int:
    """At equal timestamps: live 0 < expiring 1 < tombstone 2 (CASSANDRA-14592's order)."""
    return 2 if cell[3] else (1 if cell[1] else 0)


def _wins(new: Cell, old: Cell, tie: Callable[[Any], bytes]) -> bool:
    """Whether `new` supersedes `old` in Cassandra's reconciliation of two cells (Cells.resolveRegular)."""
    if new[0] != old[0]:
        return new[0] > old[0]
    category = _category(new)
    if category != _category(old):
        return category > _category(old)
    if category == 2:
        return False  # two tombstones: the same, whichever deletion time
    if category == 1 and new[2] != old[2]:
        return new[2] > old[2]
    return tie(new[4]) > tie(old[4])  # unsigned bytes, the greater wins


def _liveness_wins(new: list, old: list) -> bool:
    """LivenessInfo.supersedes: the newer timestamp, then an expiring one, then the later expiry."""
    if new[0] != old[0]:
        return new[0] > old[0]
    expiring = bool(new[1])
    if expiring != bool(old[1]):
        return expiring
    return expiring and new[2] > old[2]


def _live(cell: Cell, shadow: int, now: int) -> bool:
    return cell[0] > shadow and not cell[3] and (not cell[1] or cell[2] > now)


def _as_is(value: Any) -> Any:
    return value


class ColumnRules:
    """How one non-key column merges and reads: its storage, its tie-break bytes, its elements' order and
    how their keys are stored (a string key as it is, any other as its canonical JSON text)."""

    def __init__(self, column: DataColumn, cql: CqlType, timeuuid: CqlType) -> None:
        self.storage = column.storage
        self.single = column.storage == SINGLE
        self._field_ties: dict[str, Callable[[Any], bytes]] = {}
        key_type = None if self.single or column.storage in (LIST, UDT) else (
            cql.element if column.storage == SET else cql.key)
        strings = key_type is None or key_type.json_is_string
        self.store_key, self.read_key = (_as_is, _as_is) if strings else (canonical, json.loads)
        if self.single:
            self.tie = value_bytes(cql)
        elif column.storage == UDT:
            self.fields = tuple(cql.field_names)
            index = {name: i for i, name in enumerate(self.fields)}
            self.element_order = lambda name: index.get(name, len(index))
            self._field_ties = {name: value_bytes(t) for name, t in zip(cql.field_names, cql.field_types)}
            self.tie = _no_value
        elif column.storage == LIST:  # elements ordered by their timeuuid
            self.element_order, self.tie = sort_key(timeuuid), value_bytes(cql.element)
        elif column.storage == SET:
            self.element_order, self.tie = sort_key(cql.element), _no_value
        else:
            self.element_order, self.tie = sort_key(cql.key), value_bytes(cql.value)

    def element_tie(self, stored_key: str) -> Callable[[Any], bytes]:
        """The tie-break of an element by its stored key (a UDT field's name; a set of tuples' keys are lists,
        which only their stored text can look up)."""
        return self._field_ties.get(stored_key, self.tie)

    def read(self, cell: Any, shadow: int, now: int) -> tuple[Any, bool]:
        """(The value `SELECT` shows, whether any cell of it is live) of this column's stored cell."""
        if self.single:
            return (cell[4], True) if _live(cell, shadow, now) else (None, False)
        deletion, elements = cell
        shadow = max(shadow, _NONE if deletion is None else deletion)
        live = [(self.read_key(key), e) for key, e in elements.items() if _live(e, shadow, now)]
        if not live:
            return None, False
        live.sort(key=lambda item: self.element_order(item[0]))
        if self.storage == LIST:
            return [e[4] for _, e in _without_read_copies(live)], True
        if self.storage == SET:
            return [key for key, _ in live], True
        if self.storage == MAP:
            return [[key, e[4]] for key, e in live], True
        written = {key: e[4] for key, e in live}
        return {name: written.get(name) for name in self.fields}, True


def _without_read_copies(live: list[tuple[str, list]]) -> list[tuple[str, list]]:
    """A list's live elements, in order, without the copies a snapshot read of elements the log also
    delivered. The snapshot keys what it reads itself (`is_read_list_key`), so the log's element is a
    second copy under its own timeuuid; a read element and a logged one with the same write time and
    value are the same element, and per (write time, value) as many read copies go as logged elements
    came, the first in list order. It is decided when the list is read, from the state alone, so the
    merge stays free of order."""
    if not any(is_read_list_key(key) for key, _ in live):
        return live
    logged = Counter((e[0], canonical(e[4])) for key, e in live if not is_read_list_key(key))
    kept = []
    for key, e in live:
        if is_read_list_key(key):
            same = (e[0], canonical(e[4]))
            if logged[same]:
                logged[same] -= 1
                continue
        kept.append((key, e))
    return kept


def _no_value(value: Any) -> bytes:
    return b""


class Rules:
    """A layout's merge rules, compiled once: each column's, the clustering order, the dropped columns."""

    def __init__(self, layout: MirrorLayout) -> None:
        self.layout = layout
        timeuuid = layout.cql("timeuuid")
        self.columns = {c.name: ColumnRules(c, layout.cql(c.type), timeuuid) for c in layout.columns}
        self._static = {c.name: c.static for c in layout.columns}
        self.statics = frozenset(c.name for c in layout.columns if c.static)
        self.dropped = dict(layout.dropped)
        self._clustering = [descending(sort_key(layout.cql(c.type))) if c.descending else sort_key(layout.cql(c.type))
                            for c in layout.clustering]

    @functools.cached_property
    def native(self) -> Any | None:
        """These rules in the native core (`native`), made when a merge first asks; None without it."""
        return native_rules(self.layout)

    # Merging

    def apply(self, change: Mapping[str, Any], record: dict, rows: dict[str, dict]) -> None:
        """Merge one change (as `spark.delivery.events.cell_changes` writes it) into a partition's record
        and the state of the row it names (created in `rows` when missing)."""
        deletion = change["d"]
        bounds = change.get("r")
        if bounds is not None:
            ranges = record.setdefault("r", [])
            for existing in ranges:
                if existing[0] == bounds[0] and existing[1] == bounds[1]:
                    existing[2] = max(existing[2], deletion)
                    break
            else:
                ranges.append([bounds[0], bounds[1], deletion])
            return
        if change["s"]:
            self._merge_cells(record, change["c"])
            return
        if change["k"] is None:  # a partition deletion
            record["d"] = max(record.get("d", _NONE), deletion)
            return
        row = rows.setdefault(row_key(change["k"]), {})
        liveness = change["l"]
        if liveness is not None and ("l" not in row or _liveness_wins(liveness, row["l"])):
            row["l"] = liveness
        if deletion is not None:
            row["d"] = max(row.get("d", _NONE), deletion)
        cells = change["c"]
        if self.statics and not self.statics.isdisjoint(cells):  # a snapshot's row: its static values too
            self._merge_cells(record, {n: c for n, c in cells.items() if n in self.statics})
            cells = {n: c for n, c in cells.items() if n not in self.statics}
        self._merge_cells(row, cells)

    def _merge_cells(self, state: dict, cells: Mapping[str, Any]) -> None:
        for name, cell in cells.items():
            rules = self.columns.get(name)
            if rules is None:
                continue  # a column the table no longer has: its cells are dead
            dropped = self.dropped.get(name, _NONE)
            if rules.single:
                if cell[0] <= dropped:
                    continue
                stored = state.setdefault("c", {})
                old = stored.get(name)
                if old is None or _wins(cell, old, rules.tie):
                    stored[name] = cell
                continue
            deletion, elements = cell
            stored = state.setdefault("x", {}).setdefault(name, [None, {}])
            if deletion is not None and deletion > dropped and (stored[0] is None or deletion > stored[0]):
                stored[0] = deletion
            for key, ts, ttl, expiry, tombstone, value in elements:
                if ts <= dropped:
                    continue
                element_key, new = rules.store_key(key), [ts, ttl, expiry, tombstone, value]
                old = stored[1].get(element_key)
                if old is None or _wins(new, old, rules.element_tie(element_key)):
                    stored[1][element_key] = new

    # Deletions

    def covers(self, bound: list, clustering: list) -> bool:
        """Whether range deletion bounds [start, end] cover the row of `clustering`."""
        start, end = bound
        key = [k(v) for k, v in zip(self._clustering, clustering)]
        if start is not None:
            prefix, inclusive = start
            row, limit = key[:len(prefix)], [k(v) for k, v in zip(self._clustering, prefix)]
            if row < limit or (row == limit and not inclusive):
                return False
        if end is not None:
            prefix, inclusive = end
            row, limit = key[:len(prefix)], [k(v) for k, v in zip(self._clustering, prefix)]
            if row > limit or (row == limit and not inclusive):
                return False
        return True

    def shadow(self, record: Mapping[str, Any], key: str) -> int:
        """The newest partition-level deletion (partition, covering ranges) of the row of `key`: what it
        shadows."""
        shadow = record.get("d", _NONE)
        ranges = record.get("r")
        if ranges:
            clustering = json.loads(key)
            for *bounds, ts in ranges:
                if ts > shadow and self.covers(bounds, clustering):
                    shadow = ts
        return shadow

    def prune(self, record: dict, rows: dict[str, dict]) -> None:
        """Drop from the states what their deletions shadow, and the deletions other ones make moot; a
        row state left empty becomes {} (its stored state is then removed)."""
        partition = record.get("d", _NONE)
        ranges = [r for r in record.get("r", ()) if r[2] > partition]
        if ranges:
            record["r"] = sorted(ranges, key=canonical)
        else:
            record.pop("r", None)
        self._prune_cells(record, partition)
        for key, row in rows.items():
            shadow = self.shadow(record, key)
            if row.get("d", _NONE) <= shadow:
                row.pop("d", None)
            else:
                shadow = row["d"]
            if "l" in row and row["l"][0] <= shadow:
                del row["l"]
            self._prune_cells(row, shadow)

    @staticmethod
    def _prune_cells(state: dict, shadow: int) -> None:
        cells = {name: cell for name, cell in state.get("c", {}).items() if cell[0] > shadow}
        if cells:
            state["c"] = cells
        else:
            state.pop("c", None)
        multi = {}
        for name, (deletion, elements) in state.get("x", {}).items():
            if deletion is not None and deletion <= shadow:
                deletion = None
            floor = shadow if deletion is None else max(shadow, deletion)
            kept = {k: e for k, e in elements.items() if e[0] > floor}
            if deletion is not None or kept:
                multi[name] = [deletion, kept]
        if multi:
            state["x"] = multi
        else:
            state.pop("x", None)

    # Reading

    def read_static(self, record: Mapping[str, Any], now: int) -> tuple[dict[str, Any], bool]:
        """(The static columns' values, whether the static row is live)."""
        return self._read(record, record.get("d", _NONE), now, static=True)

    def read_row(self, record: Mapping[str, Any], key: str, row: Mapping[str, Any], now: int
                 ) -> tuple[dict[str, Any], bool]:
        """(The regular columns' values, whether the row is live: in `SELECT *`)."""
        shadow = max(self.shadow(record, key), row.get("d", _NONE))
        values, live = self._read(row, shadow, now, static=False)
        liveness = row.get("l")
        if liveness is not None and liveness[0] > shadow and (not liveness[1] or liveness[2] > now):
            live = True
        return values, live

    def _read(self, state: Mapping[str, Any], shadow: int, now: int, static: bool) -> tuple[dict[str, Any], bool]:
        values, live = {}, False
        stored = {**state.get("c", {}), **state.get("x", {})}
        for name, rules in self.columns.items():
            if self._static[name] != static:
                continue
            cell = stored.get(name)
            value, cell_live = (None, False) if cell is None else rules.read(cell, shadow, now)
            values[name] = value
            live = live or cell_live
        return values, live

    def next_expiry(self, states: Iterable[Mapping[str, Any]], now: int) -> int | None:
        """The first time after `now` (s) at which something in `states` expires: when `SELECT *` of
        them changes by itself."""
        first = None
        for state in states:
            for cell in _cells(state):
                if cell[1] and not cell[3] and cell[2] > now and (first is None or cell[2] < first):
                    first = cell[2]
        return first


def _cells(state: Mapping[str, Any]) -> Iterable[list]:
    if "l" in state:
        yield [state["l"][0], state["l"][1], state["l"][2], 0]
    yield from state.get("c", {}).values()
    for _, elements in state.get("x", {}).values():
        yield from elements.values()

