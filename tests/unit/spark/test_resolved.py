"""Resolved timestamps from frontier records alone: a node's record holds for a topic once every
partition it names is delivered to its offset; T is the least over the ring of each node's newest that
holds; a node of the ring without one holds T back. And the records' JSON both sides share."""
from __future__ import annotations

import pytest

from schemas.frontier import BadFrontier, FrontierRecord
from spark.delivery.resolved import Frontiers, delivered_offsets, holds
from spark.location import Location

T = "rt.shop.orders"


def record(host: str, frontier_us: int, **offsets: int) -> FrontierRecord:
    return FrontierRecord(host, f"node-{host}", frontier_us, 2500, {T: {int(p[1:]): o for p, o in offsets.items()}})


def test_a_record_holds_once_each_partition_it_names_is_delivered():
    r = record("a", 100, p0=5, p1=0)
    assert holds(r, T, {0: 5, 1: 0})
    assert holds(r, T, {0: 9})  # a partition it names at 0 needs nothing
    assert not holds(r, T, {0: 4, 1: 3})
    assert not holds(r, "rt.shop.other", {0: 100})  # it promises nothing of a topic it does not name


def test_t_is_the_least_over_the_ring_of_each_nodes_newest_record_that_holds():
    frontiers = Frontiers()
    for r in (record("a", 100, p0=2), record("a", 200, p0=8), record("b", 150, p0=3), record("b", 160, p0=20)):
        frontiers.add(r)
    assert frontiers.resolved({T: {0: 8}}, {"a", "b"}) == {T: 150}  # b's 160 waits for offset 20
    assert frontiers.resolved({T: {0: 20}}, {"a", "b"}) == {T: 160}
    assert frontiers.resolved({T: {0: 1}}, {"a", "b"}) == {}  # nothing of a holds yet


def test_a_node_of_the_ring_without_a_frontier_holds_t_back():
    frontiers = Frontiers()
    frontiers.add(record("a", 100, p0=0))
    assert frontiers.resolved({T: {0: 0}}, {"a", "c"}) == {}
    assert frontiers.resolved({T: {0: 0}}, {"a"}) == {T: 100}
    assert frontiers.resolved({T: {0: 0}}, set()) == {}


def test_the_record_round_trips_and_a_foreign_one_is_refused():
    r = FrontierRecord("0fdaada0-3449-4d8e-95a0-00d177134dac", "cassandra@1", 1_795_789_552_198_000, 2500,
                       {T: {0: 3, 1: 4, 2: 0}})
    assert FrontierRecord.decode(r.encode()) == r
    for foreign in (b"", b"[]", b'{"host_id": "x"}', None):
        with pytest.raises(BadFrontier):
            FrontierRecord.decode(foreign)


def test_delivered_offsets_come_from_the_checkpoint_of_the_batch(tmp_path):
    (tmp_path / "offsets").mkdir()
    (tmp_path / "offsets" / "3").write_text(
        'v1\n{"batchWatermarkMs":0,"batchTimestampMs":1795789552198,"conf":{}}\n'
        '{"rt.shop.orders":{"2":0,"1":4,"0":3}}\n')
    assert delivered_offsets(Location.of(tmp_path), 3) == {T: {0: 3, 1: 4, 2: 0}}
