"""A mirror's part as a task takes it (`spark.sinks.mirror_parts.MirrorPart`): changes by table in sorted
order, their buckets, and a name that does not depend on the order the shuffle gave them in."""
from __future__ import annotations

import pyarrow as pa

from spark.sinks.mirror_parts import MirrorPart

# (keyspace, table, serialized partition key, key JSON, cells JSON, bucket), as `bucketed` gives them.
CHANGES = [
    ("shop", "orders", (7).to_bytes(4, "big"), '{"id": 7}', '{"c": {"total": [1700000000000001, null, null, false, 3]},'
     ' "d": null, "k": [], "l": [1700000000000001, null, null], "r": null, "s": false, "x": {}}', 12),
    ("shop", "orders", (3).to_bytes(4, "big"), '{"id": 3}', '{"c": {}, "d": 1700000000000002, "k": null, "l": null,'
     ' "r": null, "s": false, "x": {}}', 40),
    ("shop", "carts", b"\x00\x03abc", '{"user": "abc"}', '{"c": {"n": [1700000000000003, 60, 1700000060, false, 1]},'
     ' "d": null, "k": [], "l": null, "r": null, "s": false, "x": {}}', 5),
    ("shop", "orders", (7).to_bytes(4, "big"), '{"id": 7}', '{"c": {"total": [1700000000000004, null, null, true,'
     ' null]}, "d": null, "k": [], "l": null, "r": null, "s": false, "x": {}}', 12),
]
NAMES = ("keyspace", "table", "partition_key", "key", "cells", "bucket")
TYPES = (pa.string(), pa.string(), pa.binary(), pa.string(), pa.string(), pa.int32())


def batches(changes, size: int) -> list[pa.RecordBatch]:
    columns = list(zip(*changes))
    table = pa.table([pa.array(c, t) for c, t in zip(columns, TYPES)], names=list(NAMES))
    return table.to_batches(max_chunksize=size)


def test_a_part_holds_each_tables_changes_in_sorted_order_with_their_buckets():
    part = MirrorPart.of(iter(batches(CHANGES, 3)))
    assert list(part.changes) == [("shop", "carts"), ("shop", "orders")]
    assert part.changes[("shop", "carts")] == [CHANGES[2][2:5]]
    assert part.changes[("shop", "orders")] == sorted(c[2:5] for c in CHANGES if c[1] == "orders")
    assert part.buckets == {("shop", "carts"): [5], ("shop", "orders"): [12, 40]}


def test_a_parts_name_is_its_content_not_the_order_or_split_it_came_in():
    first = MirrorPart.of(iter(batches(CHANGES, 4)))
    again = MirrorPart.of(iter(batches(list(reversed(CHANGES)), 1)))
    assert first.name == again.name and len(first.name) == 32
    fewer = MirrorPart.of(iter(batches(CHANGES[:3], 4)))
    assert fewer.name != first.name
    moved = [(k, "other", *rest) if t == "carts" else (k, t, *rest) for k, t, *rest in CHANGES]
    assert MirrorPart.of(iter(batches(moved, 4))).name != first.name  # the same changes of another table


def test_a_partition_without_changes_has_no_part():
    assert MirrorPart.of(iter([])) is None
    assert MirrorPart.of(iter(batches(CHANGES, 4)[0].slice(0, 0) for _ in range(2))) is None
