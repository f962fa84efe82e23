"""A mirror store in a dict, for the merge's unit tests (the sinks' stores run against the real databases
in the integration tests): states by (partition, row), and the mirror's rows by primary key."""
from __future__ import annotations

import json

from spark.mirror.engine import MirrorRow, StoredState, merge
from spark.mirror.layout import MirrorLayout
from spark.mirror.state import Rules


class MemoryStore:
    def __init__(self) -> None:
        self.states: dict[tuple[bytes, str], tuple[str, int | None]] = {}
        self.rows: dict[str, dict] = {}  # canonical key → the row as SELECT * shows it

    def load(self, keys):
        return {k: self.states[k][0] for k in keys if k in self.states}

    def load_partitions(self, partitions):
        return {k: text for k, (text, _) in self.states.items() if k[0] in partitions}

    def due(self, now):
        return [k for k, (_, expires) in self.states.items() if expires is not None and expires <= now]

    def save(self, states: list[StoredState], rows: list[MirrorRow]) -> None:
        for s in states:
            if s.state is None:
                self.states.pop((s.partition, s.row), None)
            else:
                self.states[(s.partition, s.row)] = (s.state, s.expires)
        for r in rows:
            key = json.dumps(r.key, sort_keys=True)
            if r.values is None:
                self.rows.pop(key, None)
            else:
                self.rows[key] = {**r.key, **r.values}

    def select(self) -> list[dict]:
        """The mirror's rows, in `ordered`'s order (a mirror table has none of its own)."""
        return ordered(self.rows.values())


def ordered(rows) -> list[dict]:
    return sorted(rows, key=lambda row: json.dumps(row, sort_keys=True))


def mirrored(layout: MirrorLayout, changes, now: int, store: MemoryStore | None = None,
             purge: bool = False) -> MemoryStore:
    store = store or MemoryStore()
    merge(Rules(layout), store, changes, now, purge)
    return store
