"""The native merge (`spark.mirror.native`) against the reference (`spark.mirror.state`): every merge of the
mirror's unit tests runs through both, with images and without (`memory.imaged`); here, that the native core
merges and images what it can (the changes of a real node among them), gives way where only the reference
can decide, and writes any JSON value of a cell as the reference writes it."""
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark.mirror.engine import merge_raw
from spark.mirror.images import Images
from spark.mirror.layout import MirrorError, MirrorLayout, read_list_key
from spark.mirror.state import Rules
from tests.unit.spark.mirror.changes import NOW, SCHEMA, T, cell, change, insert, update
from tests.unit.spark.mirror.memory import Counted, MemoryStore, imaged, mirrored, raw_changes
from tests.unit.spark.mirror.segment import BEFORE_EXPIRY, segment_changes, segment_layout


def merged_natively(layout: MirrorLayout, changes, now: int = NOW) -> Counted:
    counted = Counted(Rules(layout).native)
    mirrored(layout, changes, now, counted=counted)
    return counted


def test_a_real_node_s_changes_are_merged_natively_but_for_the_range_deletion():
    counted = merged_natively(segment_layout(), segment_changes(), BEFORE_EXPIRY)
    # Three partitions: the one holding a range deletion is the reference's.
    assert (counted.merged, counted.gave_way) == (2, 1)


def imaged_natively(layout: MirrorLayout, changes, now: int = NOW) -> tuple[Counted, Images]:
    rules = Rules(layout)
    counted = rules.native = Counted(rules.native)
    images = Images(rules, now)
    merge_raw(rules, MemoryStore(), raw_changes(layout, changes), now, observer=images)
    return counted, images


def test_a_real_node_s_changes_are_imaged_natively_but_for_the_range_deletion():
    changes = segment_changes()
    counted, images = imaged_natively(segment_layout(), changes, BEFORE_EXPIRY)
    assert (counted.merged, counted.gave_way) == (2, 1)
    assert images.images == imaged(segment_layout(), changes, BEFORE_EXPIRY)[1]  # the reference's


def test_a_nan_written_over_a_nan_changes_no_row():
    """`json.loads` reads every NaN as one float object, which Python's `==` of rows takes as equal to itself."""
    nan = float("nan")
    changes = [update(1, "a", w=cell(10, nan)), update(1, "a", w=cell(11, nan))]
    counted, images = imaged_natively(T, changes)
    assert (counted.merged, counted.gave_way) == (1, 0)
    assert [(i.before is None, i.after is None) for i in images.images] == [(True, False)]
    assert json.dumps(imaged(T, changes, NOW)[1]) == json.dumps(images.images)  # the reference's (NaN as text)


def test_rows_cells_collections_and_deletions_are_merged_natively():
    timeuuids = ["89df135e-e82c-11f1-8932-044d6a189505", "89df135f-e82c-11f1-8932-044d6a189505"]
    changes = [
        insert(10, 1, "a", v=cell(10, 1), w=cell(10, "x", ttl=60)),
        update(1, "a", l=[None, [[timeuuids[1], 10, 0, None, 0, 1], [timeuuids[0], 11, 0, None, 0, 2]]]),
        update(1, "a", st=[None, [["b", 10, 0, None, 0, None], ["a", 10, 0, None, 0, None]]]),
        update(1, "a", m=[None, [[2, 10, 0, None, 0, "two"], [-1, 10, 0, None, 0, "minus"]]]),
        update(1, "a", u=[None, [["b", 10, 0, None, 0, "B"]]]),
        change(static=True, cells={"s": cell(10, "S")}),
        change([2, "b"], deletion=20),
        insert(10, 1, "a", v=cell(10, 1)),  # a replica's copy: the same value at the same timestamp
        change(deletion=5, p=2),
    ]
    counted = merged_natively(T, changes)
    assert (counted.merged, counted.gave_way) == (2, 0)


def test_what_only_the_reference_decides_is_left_to_it():
    pairs = MirrorLayout.of_table(SCHEMA.table_by_name("ks", "pairs"), {})
    cases = [
        (T, [change(deletion=20, bounds=[[[3], False], [[2], True]])]),  # a range: the clustering order
        (T, [update(1, "a", v=cell(10, 5)), update(1, "a", v=cell(10, -1))]),  # a tie of two values: their bytes
        (T, [update(1, "a", l=[None, [[read_list_key(0), 8, 0, None, 0, 1]]])]),  # a snapshot's list copies
        (pairs, [change([], cells={"sp": [None, [[[1, "0x01"], 10, 0, None, 0, None],
                                               [[2, "0x"], 10, 0, None, 0, None]]]})]),  # tuples' order
        (T, [update(1, "a", w=cell(10, "\ud800"))]),  # a lone surrogate, which a str holds
    ]
    for layout, changes in cases:
        counted = merged_natively(layout, changes)
        assert (counted.merged, counted.gave_way) == (0, 1), changes


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2**80, 2**80) | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 4), _JSON), min_size=1, max_size=4))
def test_any_json_value_is_stored_as_the_reference_stores_it(writes):
    """Distinct timestamps (a tie of two values is the reference's): the states' texts must be the same bytes."""
    changes = [update(1, "a", w=cell(ts * 10 + i, value)) for i, (ts, value) in enumerate(writes)]
    assert merged_natively(T, changes).merged == 1


def test_a_change_neither_can_merge_fails_with_the_reference_s_error():
    store = mirrored(T, [insert(10, 1, "a")], NOW)
    before = dict(store.states)
    rules = Rules(T)
    counted = rules.native = Counted(rules.native)
    with pytest.raises(MirrorError, match="cannot merge"):
        merge_raw(rules, store, raw_changes(T, [update(1, "a", v="not a cell")]), NOW)
    assert counted.gave_way == 1 and store.states == before
