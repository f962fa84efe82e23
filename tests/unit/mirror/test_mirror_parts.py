"""A micro-batch merged in parts, as the executors merge a PostgreSQL mirror (`MirrorParts`): the batch
split by Cassandra partition, each part's Arrow batches turned into its changes (`arrow_changes`) and
merged on its own — the same mirror and states as the whole batch merged at once, however it is split,
and a part merged twice (a replay cut in other parts) changes nothing. Changes of the real 5.0 segment."""
import random

import pyarrow as pa

from spark.job.sinks.postgres.mirror import _part_name
from spark.mirror.state import Rules
from spark.mirror.tables import CHANGE_COLUMNS, arrow_changes, changes_of
from spark.mirror.engine import merge
from tests.unit.mirror.memory import MemoryStore, mirrored

NOW = 1795323700  # before the segment's TTLs expire


def merged_in_parts(layout, parts: list[list[dict]], store: MemoryStore) -> MemoryStore:
    for rows in parts:
        batches = [pa.RecordBatch.from_pylist([{c: row[c] for c in CHANGE_COLUMNS} for row in chunk])
                   for chunk in (rows[:3], rows[3:]) if chunk]
        raw = arrow_changes(batches)[(layout.keyspace, layout.table)]
        merge(Rules(layout), store, changes_of(layout, raw), NOW)
    return store


def split_by_partition(rows: list[dict], count: int, rng: random.Random) -> list[list[dict]]:
    part_of = {p: rng.randrange(count) for p in {row["partition_key"] for row in rows}}
    parts = [[] for _ in range(count)]
    for row in rows:
        parts[part_of[row["partition_key"]]].append(row)
    return [part for part in parts if part]


def test_a_batch_merged_in_parts_of_its_partitions_is_the_whole_batch_merged(layout, change_rows, changes):
    whole = mirrored(layout, changes, NOW)
    assert len({row["partition_key"] for row in change_rows}) > 1
    for seed in range(10):
        rng = random.Random(seed)
        store = merged_in_parts(layout, split_by_partition(change_rows, rng.randint(1, 4), rng), MemoryStore())
        assert store.select() == whole.select() and store.states == whole.states


def test_a_part_merged_again_in_another_cut_changes_nothing(layout, change_rows, changes):
    whole = mirrored(layout, changes, NOW)
    store = merged_in_parts(layout, split_by_partition(change_rows, 3, random.Random(1)), MemoryStore())
    merged_in_parts(layout, split_by_partition(change_rows, 2, random.Random(2)), store)
    assert store.select() == whole.select() and store.states == whole.states


def test_a_part_is_named_by_its_changes_in_any_order(layout, change_rows):
    def name(rows):
        return _part_name(arrow_changes([pa.RecordBatch.from_pylist([{c: r[c] for c in CHANGE_COLUMNS}
                                                                      for r in rows])]))

    shuffled = change_rows[::-1]
    assert name(change_rows) == name(shuffled)
    assert name(change_rows) != name(change_rows[1:])
