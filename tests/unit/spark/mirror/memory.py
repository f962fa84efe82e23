"""A mirror store in a dict, for the merge's unit tests (the sinks' stores run against the real databases
in the integration tests): states by (partition, row), and the mirror's rows by primary key. Every merge
the tests make runs through the reference and through the native core, with images and without, which must
agree."""
from __future__ import annotations

import copy
import json

from spark.mirror.engine import MirrorRow, StoredState, changes_of, merge, merge_raw
from spark.mirror.images import Images, RowImage
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


class Counted:
    """The native rules, counting the partitions they merged and those they left to the reference."""

    def __init__(self, native) -> None:
        self.native, self.merged, self.gave_way = native, 0, 0

    def touched(self, cells: str):
        return self.native.touched(cells)

    def merge(self, *args):
        done = self.native.merge(*args)
        if done is None:
            self.gave_way += 1
        else:
            self.merged += 1
        return done


def raw_changes(layout: MirrorLayout, changes) -> list[tuple[bytes, str, str, object]]:
    """Changes as a batch carries them: the key and the cells as JSON text; with their origins."""
    names = [c.name for c in layout.partition_key]
    return [(c.partition, json.dumps(dict(zip(names, c.key))), json.dumps(c.cells), c.origin) for c in changes]


def mirrored(layout: MirrorLayout, changes, now: int, store: MemoryStore | None = None,
             purge: bool = False, counted: Counted | None = None) -> MemoryStore:
    """`imaged`'s store."""
    return imaged(layout, changes, now, store, purge, counted)[0]


def imaged(layout: MirrorLayout, changes, now: int, store: MemoryStore | None = None,
           purge: bool = False, counted: Counted | None = None) -> tuple[MemoryStore, list[RowImage]]:
    """The reference's merge of `changes` into `store`, and its images. The native merge of the same changes
    into copies of it, without images and with, must leave the same states and rows, and make the same images
    (`counted`: the native rules without images, to count what they merged)."""
    store = store or MemoryStore()
    plain, with_images = copy.deepcopy(store), copy.deepcopy(store)
    changes = list(changes)
    reference = Rules(layout)
    native = reference.native
    reference.native = None
    images = Images(reference, now)
    # The reference merges as the sinks give it changes: read from their JSON texts (its NaNs one float object).
    merge(reference, store, changes_of(layout, raw_changes(layout, changes)), now, purge, images)
    rules = Rules(layout)
    rules.native = counted or Counted(native)
    merge_raw(rules, plain, raw_changes(layout, changes), now, purge)
    native_images = Images(Rules(layout), now)
    merge_raw(Rules(layout), with_images, raw_changes(layout, changes), now, purge, native_images)
    for merged in plain, with_images:
        assert merged.states == store.states, "the native merge left other states than the reference"
        # As JSON text: NaN equals NaN there, and a value's keys are in one order.
        assert json.dumps(merged.rows, sort_keys=True) == json.dumps(store.rows, sort_keys=True), \
            "the native merge left other rows than the reference"
    assert _images(native_images.images) == _images(images.images), \
        "the native merge made other images than the reference"
    return store, images.images


def _images(images: list[RowImage]) -> tuple[str, list]:
    """Images as JSON text in the order made, and each row's columns in their order (as an HTTP sink posts
    them). A value's own members (a UDT's fields, a duration's) may come in another order: JSON's objects
    have none."""
    return json.dumps(images, sort_keys=True), [[list(row or ()) for row in image[1:]] for image in images]
