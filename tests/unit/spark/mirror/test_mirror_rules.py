"""Cassandra's rules, one at a time, on changes as the Spark job decodes them (`cell_changes`): what the
mirror shows after them, and that it is the same in every order of arrival."""
import itertools
import json
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.tables import parse_ddl
from spark.mirror.layout import MirrorLayout, read_list_key
from spark.mirror.state import RECORD
from tests.unit.spark.mirror.changes import (DDL, KV, NOW, PK, SCHEMA, T, cell, change, insert, row, select,
                                             tombstone, update)
from tests.unit.spark.mirror.memory import mirrored, ordered

def test_the_newest_write_wins_whatever_arrives_first():
    changes = [update(1, "a", v=cell(10, 1)), update(1, "a", v=cell(30, 3)), update(1, "a", v=cell(20, 2))]
    for order in itertools.permutations(changes):
        assert select(order) == [row(1, "a", v=3)]


def test_ties_are_broken_as_cassandra_breaks_them():
    # Same timestamp: a tombstone beats an expiring cell, which beats a live one; two live ones: the
    # greater value, compared as unsigned bytes (-1 is 0xffffffff, greater than 5).
    cases = [
        ([tombstone(10), cell(10, 1, ttl=60)], None),
        ([cell(10, 1, ttl=60), cell(10, 2)], 1),
        ([cell(10, 5), cell(10, -1)], -1),
        ([cell(10, 1, ttl=60), [10, 60, NOW + 90, 0, 2]], 2),  # expiring both: the later expiry
    ]
    for cells, expected in cases:
        for order in itertools.permutations(cells):
            rows = select([insert(1, 1, "a")] + [update(1, "a", v=c) for c in order])
            assert rows == [row(1, "a", v=expected)], (cells, order)


def test_a_deletion_shadows_older_writes_and_a_newer_write_revives():
    deleted = change([1, "a"], deletion=20)
    assert select([insert(10, 1, "a", v=cell(10, 1)), deleted]) == []
    assert select([deleted, insert(10, 1, "a", v=cell(10, 1))]) == []  # late, and older: stays deleted
    assert select([deleted, insert(20, 1, "a", v=cell(20, 1))]) == []  # a tie: the tombstone wins
    assert select([insert(10, 1, "a", v=cell(10, 1)), deleted, update(1, "a", w=cell(30, "new"))]) == [
        row(1, "a", w="new")]  # revived by a cell alone; v stays deleted


def test_a_row_lives_by_its_liveness_or_any_live_cell():
    assert select([insert(10, 1, "a")]) == [row(1, "a")]
    assert select([update(1, "a", v=cell(10, 1)), update(1, "a", v=tombstone(20))]) == []
    assert select([insert(10, 1, "a"), update(1, "a", v=tombstone(20))]) == [row(1, "a")]


def test_a_range_deletion_follows_the_clustering_order():
    # c1 DESC: the rows run c1 = 3, 2, 1; "c1 < 3 AND c1 >= 2" is start (c1=3, exclusive) to end (c1=2).
    rows = [insert(10, c1, "a", v=cell(10, c1)) for c1 in (1, 2, 3)]
    deletion = change(deletion=20, bounds=[[[3], False], [[2], True]])
    assert select(rows + [deletion]) == ordered([row(3, "a", v=3), row(1, "a", v=1)])
    assert select([deletion] + rows + [insert(30, 2, "b")]) == ordered(
        [row(3, "a", v=3), row(2, "b"), row(1, "a", v=1)])
    # A prefix of the clustering (c1 = 2 AND c2 > 'a') and open ends.
    more = rows + [insert(10, 2, "b", v=cell(10, 22))]
    assert select(more + [change(deletion=20, bounds=[[[2, "a"], False], [[2], True]])]) == ordered([
        row(3, "a", v=3), row(2, "a", v=2), row(1, "a", v=1)])
    assert select(more + [change(deletion=20, bounds=[None, [[2, "a"], True]])]) == ordered([
        row(2, "b", v=22), row(1, "a", v=1)])


def test_a_partition_deletion_covers_the_static_row_and_every_row():
    written = [change(static=True, cells={"s": cell(10, "S")}), insert(10, 1, "a"), insert(30, 2, "a")]
    assert select(written + [change(deletion=20)]) == [row(2, "a")]
    assert select([change(deletion=20)] + written) == [row(2, "a")]


def test_static_values_show_on_every_row_or_alone():
    static = change(static=True, cells={"s": cell(10, "S")})
    assert select([static]) == [row(None, None, s="S")]  # no row: one row of the static values
    assert select([static, insert(10, 1, "a"), insert(10, 2, "a")]) == ordered([row(2, "a", s="S"), row(1, "a", s="S")])
    store = mirrored(T, [static, insert(10, 1, "a")], NOW)
    mirrored(T, [change([1, "a"], deletion=20)], NOW, store)  # the last row goes: the static row shows alone
    assert store.select() == [row(None, None, s="S")]
    mirrored(T, [change(static=True, cells={"s": cell(30, "T")})], NOW, store)
    assert store.select() == [row(None, None, s="T")]


def test_a_snapshot_row_carries_its_partitions_static_values():
    # A snapshot reads each row with its partition's static values: they belong to the partition.
    read = change([1, "a"], liveness=[10, 0, None], cells={"s": cell(10, "S"), "v": cell(10, 1)})
    assert select([read, insert(10, 2, "a")]) == ordered([row(1, "a", s="S", v=1), row(2, "a", s="S")])
    assert select([read, change([1, "a"], deletion=20)]) == [row(None, None, s="S")]


def test_collections_change_element_by_element():
    timeuuids = ["00000000-0000-1000-8000-000000000000", "00000001-0000-1000-8000-000000000000",
                 "00000002-0000-1000-8000-000000000000"]
    written = [
        # l = [1, 2] (the whole list deleted first), then l = l + [3]
        update(1, "a", l=[9, [[timeuuids[1], 10, 0, None, 0, 1], [timeuuids[2], 10, 0, None, 0, 2]]]),
        update(1, "a", l=[None, [[timeuuids[0], 11, 0, None, 0, 3]]]),  # sorts first: its timeuuid
        update(1, "a", st=[None, [["b", 10, 0, None, 0, None], ["a", 10, 0, None, 0, None]]]),
        update(1, "a", st=[None, [["b", 12, 0, None, 1, None]]]),  # st = st - {'b'}
        update(1, "a", m=[None, [[2, 10, 0, None, 0, "two"], [-1, 10, 0, None, 0, "minus"]]]),
        update(1, "a", u=[None, [["b", 10, 0, None, 0, "B"]]]),  # u.b = 'B'
    ]
    for seed in range(10):
        shuffled = random.Random(seed).sample(written, len(written))
        assert select(shuffled) == [row(1, "a", l=[3, 1, 2], st=["a"], m=[[-1, "minus"], [2, "two"]],
                                        u={"a": None, "b": "B"})]
    overwritten = written + [update(1, "a", l=[20, [[timeuuids[2], 21, 0, None, 0, 7]]])]  # l = [7]
    assert select(overwritten)[0]["l"] == [7]
    emptied = written + [update(1, "a", st=[None, [["a", 13, 0, None, 1, None]]])]
    assert select(emptied)[0]["st"] is None  # an empty collection reads as null


def test_a_list_element_read_by_a_snapshot_and_delivered_by_the_log_shows_once():
    """The log delivers again what a snapshot read when the connector had not yet sent it: each read
    element has a key of the snapshot's and the logged one Cassandra's timeuuid, so only the write time
    and the value tell them for the same element (per value as many times as the log delivers it)."""
    later = ["89df135e-e82c-11f1-8932-044d6a189505", "89df135f-e82c-11f1-8932-044d6a189505",
             "89df1360-e82c-11f1-8932-044d6a189505"]
    # l = l + [1] at 8 (before the log starts), l = [5, 5] at 10 (its deletion at 9), both read
    read = update(1, "a", l=[None, [[read_list_key(0), 8, 0, None, 0, 1], [read_list_key(1), 10, 0, None, 0, 5],
                                    [read_list_key(2), 10, 0, None, 0, 5]]])
    overwrite = update(1, "a", l=[9, [[later[0], 10, 0, None, 0, 5], [later[1], 10, 0, None, 0, 5]]])
    appended = update(1, "a", l=[None, [[later[2], 11, 0, None, 0, 5]]])  # l = l + [5] at 11, after the read
    for order in itertools.permutations([read, overwrite, appended]):
        assert select(list(order))[0]["l"] == [5, 5, 5]  # the deletion at 9 shadows the 1 read at 8
    appended_only = update(1, "a", l=[None, [[later[0], 10, 0, None, 0, 5]]])  # one 5 of the two logged
    assert select([read, appended_only])[0]["l"] == [1, 5, 5]
    assert select([read])[0]["l"] == [1, 5, 5]


def test_a_set_of_tuples_changes_element_by_element():
    """Elements that are lists (a tuple's values) are found again by value, ties included."""
    pairs = MirrorLayout.of_table(SCHEMA.table_by_name("ks", "pairs"), {})
    added = change([], cells={"sp": [None, [[[1, "0x01"], 10, 0, None, 0, None], [[2, "0x"], 10, 0, None, 0, None]]]})
    removed = change([], cells={"sp": [None, [[[1, "0x01"], 10, 0, None, 1, None]]]})  # a tie: the removal wins
    for written in ([added, removed], [removed, added]):
        assert select(written, layout=pairs) == [{"k": 1, "sp": [[2, "0x"]]}]


def test_values_and_rows_expire():
    ttl_row = insert(10, 1, "a", ttl=60, v=cell(10, 1, ttl=60), w=cell(10, "kept"))
    assert select([ttl_row], now=NOW + 59) == [row(1, "a", v=1, w="kept")]
    assert select([ttl_row], now=NOW + 60) == [row(1, "a", w="kept")]  # live while now < expiry
    assert select([insert(10, 1, "a", ttl=60, v=cell(10, 1, ttl=60))], now=NOW + 60) == []
    store = mirrored(T, [insert(10, 1, "a", ttl=60, v=cell(10, 1, ttl=60))], NOW)
    assert store.due(NOW + 59) == [] and len(store.due(NOW + 60)) == 1
    mirrored(T, [], NOW + 60, store, purge=True)
    assert store.select() == [] and store.due(NOW + 10**6) == []
    # The expired cells stay, as the tombstones they now are: an older write arriving late stays dead.
    mirrored(T, [update(1, "a", v=cell(5, 2))], NOW + 60, store)
    assert store.select() == []


def test_a_record_of_nothing_but_the_partition_key_is_stored_beside_a_state_that_can_expire():
    store = mirrored(T, [insert(10, 1, "a", v=cell(10, 1))], NOW)
    assert list(store.states) == [(PK, '[1,"a"]')], "one state for the row, none for a bare record"
    mirrored(T, [insert(11, 2, "b")], NOW, store)
    assert store.select() == ordered([row(1, "a", v=1), row(2, "b")])
    assert (PK, RECORD) not in store.states
    mirrored(T, [insert(12, 3, "c", ttl=60)], NOW, store)
    assert json.loads(store.states[(PK, RECORD)][0]) == {"p": [1]}, "a purge reads the partition key there"
    mirrored(T, [], NOW + 60, store, purge=True)
    assert store.select() == ordered([row(1, "a", v=1), row(2, "b")])
    # A record holding more than the key is stored at once: a partition deletion reaches rows stored without it.
    deleted = mirrored(T, [insert(10, 1, "a", v=cell(10, 1))], NOW)
    mirrored(T, [change(deletion=20)], NOW, deleted)
    assert json.loads(deleted.states[(PK, RECORD)][0]) == {"p": [1], "d": 20} and deleted.select() == []


def test_a_table_without_clustering():
    assert select([change([], cells={"v": cell(10, 1)}), change(deletion=5)], layout=KV) == [{"k": 1, "v": 1}]
    assert select([change([], cells={"v": cell(10, 1)}), change(deletion=10)], layout=KV) == []


def test_cells_of_a_dropped_column_are_dead():
    dropped = MirrorLayout.of_table(parse_ddl(DDL + "ALTER TABLE ks.kv DROP v USING TIMESTAMP 15;"
                                              "ALTER TABLE ks.kv ADD v int;").table_by_name("ks", "kv"), {})
    changes = [change([], liveness=[5, 0, None], cells={"v": cell(10, 1)})]
    assert select(changes, layout=dropped) == [{"k": 1, "v": None}]
    assert select(changes + [change([], cells={"v": cell(20, 2)})], layout=dropped) == [{"k": 1, "v": 2}]


# Any order, any split into batches, any repeat: the same states and the same mirror.

_TS = st.integers(1, 6)


def _cells(values):
    return st.one_of(st.builds(lambda ts, v: cell(ts, v), _TS, values),
                     st.builds(lambda ts, v: cell(ts, v, ttl=60), _TS, values), st.builds(tombstone, _TS))


_CELL, _TEXT = _cells(st.integers(-2, 2)), _cells(st.sampled_from(["", "a", "é"]))
_KEY = st.tuples(st.integers(1, 3), st.sampled_from(["a", "b"]))
_CHANGE = st.one_of(
    st.builds(lambda k, ts, v: insert(ts, *k, v=v), _KEY, _TS, _CELL),
    st.builds(lambda k, v, w: update(*k, v=v, w=w), _KEY, _CELL, _TEXT),
    st.builds(lambda k, ts, e: update(*k, st=[None, [[e, ts, 0, None, ts % 2, None]]]), _KEY, _TS,
              st.sampled_from(["x", "y"])),
    st.builds(lambda k, ts: update(*k, st=[ts, []]), _KEY, _TS),
    st.builds(lambda k, ts: change(list(k), deletion=ts), _KEY, _TS),
    st.builds(lambda ts: change(deletion=ts), _TS),
    st.builds(lambda c1, ts: change(deletion=ts, bounds=[[[c1], True], None]), st.integers(1, 3), _TS),
    st.builds(lambda c: change(static=True, cells={"s": c}), _TEXT),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_CHANGE, min_size=1, max_size=12), st.randoms(use_true_random=False), st.integers(0, 12))
def test_merging_is_order_free(changes, rnd, split):
    expected = mirrored(T, changes, NOW)
    shuffled = changes + rnd.sample(changes, len(changes) // 2)  # replica copies, replays
    rnd.shuffle(shuffled)
    store = mirrored(T, shuffled[:split], NOW)
    mirrored(T, shuffled[split:], NOW, store)
    assert store.select() == expected.select()
    # The same states, but for a bare record (`{"p": …}`): once stored, beside a cell with a TTL, it stays.
    assert _decisive(store.states) == _decisive(expected.states)
    assert expected.states.items() <= store.states.items()


def _decisive(states: dict) -> dict:
    return {key: state for key, state in states.items() if key[1] != RECORD or json.loads(state[0]).keys() != {"p"}}
