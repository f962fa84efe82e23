"""The mirror of the changes a real Cassandra 5.0 node wrote (tests/unit/connector/commitlog/data/CommitLog-7-…,
statements in test_cassandra50_segment), merged from their change events as the Spark job decodes them:
it is what `SELECT *` returns after those statements, in any order of arrival."""
import json
import random

import pyarrow as pa
import pytest

from spark.mirror.engine import MirrorRow, StoredState
from spark.mirror.layout import MirrorError, MirrorLayout
from spark.rows import arrow_schema
from spark.sinks.delta.mirror import MergeTask, MirrorRows
from tests.unit.connector.commitlog.testdata import SCHEMA_50 as SCHEMA
from tests.unit.spark.mirror.changes import PK, T
from tests.unit.spark.mirror.memory import mirrored, ordered
from tests.unit.spark.mirror.segment import AFTER_EXPIRY, BEFORE_EXPIRY, FIRST_ROW, NULLS

def test_the_mirror_is_select_star(layout, changes):
    rows = mirrored(layout, changes, BEFORE_EXPIRY).select()
    assert rows == ordered([
        FIRST_ROW,
        # UPDATE … USING TTL 600 SET v_text = 'ttl': no liveness, one cell.
        {**NULLS, "p1": 1, "p2": "a", "c1": 11, "c2": "y", "s": "static!", "v_text": "ttl"},
        # INSERT … USING TTL 100 with v_text = '' (text's empty value is a value).
        {**NULLS, "p1": 3, "p2": "c", "c1": 1, "c2": "", "s": None, "v_text": ""},
    ])
    assert "dropme" not in rows[0]  # dropped: SELECT * no longer has it


def test_expired_cells_leave_the_mirror(layout, changes):
    store = mirrored(layout, changes, BEFORE_EXPIRY)
    mirrored(layout, [], AFTER_EXPIRY, store)  # a batch of nothing: only what it changes is read
    assert len(store.select()) == 3
    mirrored(layout, [], AFTER_EXPIRY, store, purge=True)  # a purge reads the expired rows again
    assert store.select() == [FIRST_ROW]


def test_any_order_and_any_repeat_give_the_same_mirror(layout, changes):
    expected = mirrored(layout, changes, BEFORE_EXPIRY)
    for seed in range(20):
        shuffled = changes * 2
        random.Random(seed).shuffle(shuffled)
        store = mirrored(layout, shuffled[:len(changes)], BEFORE_EXPIRY)  # two batches, copies in both
        mirrored(layout, shuffled[len(changes):], BEFORE_EXPIRY, store)
        assert store.select() == expected.select()
        assert store.states == expected.states


def test_a_counter_table_has_no_mirror():
    table = SCHEMA.table_by_name("ringtail_decoder_check", "counters")
    with pytest.raises(MirrorError, match="counter"):
        MirrorLayout.of_table(table, {})


def test_a_delta_task_given_its_partitions_states_merges_as_a_store_does(layout, changes):
    """Delta's mirror merges on the executors (`spark.sinks.delta.mirror.MergeTask`): a task is given the
    states of its partitions beside the changes, in Arrow batches, and gives back the states and rows to
    write; applied, they are what merging through a store gives."""
    expected = mirrored(layout, changes, BEFORE_EXPIRY)
    half = len(changes) // 2
    store = mirrored(layout, changes[:half], BEFORE_EXPIRY)
    names = [c.name for c in layout.partition_key]
    given = [{"partition": p, "row": row, "state": state, "expires": expires, "key": None, "cells": None}
             for (p, row), (state, expires) in store.states.items()]
    given += [{"partition": c.partition, "row": None, "state": None, "expires": None,
               "key": json.dumps(dict(zip(names, c.key))), "cells": json.dumps(c.cells)} for c in changes[half:]]
    schema = pa.schema([("partition", pa.binary()), ("row", pa.string()), ("state", pa.string()),
                        ("expires", pa.int64()), ("key", pa.string()), ("cells", pa.string())])
    batches = pa.Table.from_pylist(given[::-1], schema=schema).to_batches(max_chunksize=3)
    out = [row for batch in MergeTask(layout, BEFORE_EXPIRY)(iter(batches)) for row in batch.to_pylist()]
    states = [StoredState(**row["state"]) for row in out if row["state"] is not None]
    mirror = [row["mirror"] for row in out if row["mirror"] is not None]
    store.save(states, [])
    assert store.states == expected.states
    # Each row it writes is in SELECT *, each it removes is not.
    shown = {(row["p1"], row["p2"], row["c1"], row["c2"]) for row in expected.select()}
    assert mirror and all(((row["p1"], row["p2"], row["c1"], row["c2"]) in shown) == row["ringtail$write"]
                          for row in mirror)


def test_a_delta_task_given_nothing_gives_nothing(layout):
    """A task of a Spark partition no change went to is handed no Arrow batch at all."""
    assert list(MergeTask(layout, BEFORE_EXPIRY)(iter([]))) == []


def test_a_delta_mirror_row_that_does_not_fit_is_named():
    rows = MirrorRows.of(T)
    fits = MirrorRow(PK, {"p": 1, "c1": 2, "c2": "a"}, {"v": 3})
    written = pa.Table.from_arrays(rows.arrays([fits]), schema=arrow_schema(rows.with_flag)).to_pylist()
    assert written == [rows.values(fits)] and written[0]["v"] == 3 and written[0]["ringtail$write"]
    too_large = MirrorRow(PK, {"p": 1, "c1": 3, "c2": "b"}, {"v": 2**40})  # v is an int
    with pytest.raises(MirrorError, match=r"^ks.t row \{'p': 1, 'c1': 3, 'c2': 'b'\} does not fit Delta: .*too large"):
        rows.arrays([fits, too_large])
