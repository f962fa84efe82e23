"""The frontier's rule on real index files and positions: a claim holds once its read is committed; an
index rewrite seen makes the rewrite seen before it a frontier; an idle listing makes its time less the
sync bound one; the node's sync settings give the bound. And its sender, with a fake producer: the
record it offers, a refused table left out, a node asked again until it answers."""
from __future__ import annotations

import os
import threading

import pytest

from connector.frontier import (Frontier, FrontierSender, IndexLook, Node, SyncMode, look_at_index,
                                milliseconds)
from schemas.change import Position
from schemas.frontier import FrontierRecord

S = 1_000_000  # µs in a second


def at(offset: int) -> Position:
    return Position.after_section(7, offset)


def test_an_idle_listing_is_a_frontier_once_what_was_read_is_committed():
    frontier = Frontier(bound_ms=2500)
    frontier.read_up(100 * S, None, at(500))
    assert frontier.committed(at(400)) is None  # what was read is not all in Kafka yet
    assert frontier.committed(at(500)) == 100 * S - 2_500_000


def test_the_rewrite_seen_before_the_one_read_to_is_a_frontier():
    frontier = Frontier(bound_ms=10_000)
    frontier.read_up(50 * S, IndexLook(300, 40 * S * 1000), at(300))
    assert frontier.committed(at(300)) == 40 * S  # the listing less the bound; no rewrite seen before
    frontier.read_up(52 * S, IndexLook(900, 51 * S * 1000), at(900))
    # Writes acknowledged before the first rewrite (40 s) lie below 900; the bound says only 42 s.
    assert frontier.committed(at(900)) == 42 * S
    frontier.read_up(53 * S, IndexLook(1200, 52 * S * 1000), at(1200))
    assert frontier.committed(at(1200)) == 51 * S


def test_the_frontier_never_moves_back():
    frontier = Frontier(bound_ms=0)
    frontier.read_up(60 * S, None, at(100))
    assert frontier.committed(at(100)) == 60 * S
    frontier.read_up(30 * S, None, at(200))  # a listing's time from a clock set back
    assert frontier.committed(at(200)) == 60 * S


def test_claims_wait_in_order_and_one_read_keeps_its_best():
    frontier = Frontier(bound_ms=0)
    frontier.read_up(10 * S, None, at(100))
    frontier.read_up(11 * S, None, at(100))  # nothing more read: the same claim, later
    frontier.read_up(12 * S, None, at(200))
    assert frontier.committed(at(150)) == 11 * S
    assert frontier.committed(at(200)) == 12 * S


def test_nothing_ever_read_claims_at_once():
    frontier = Frontier(bound_ms=1000)
    frontier.read_up(10 * S, None, None)
    assert frontier.committed(None) == 9 * S


def test_an_index_is_looked_at_only_when_complete(tmp_path):
    index = tmp_path / "CommitLog-7-1_cdc.idx"
    assert look_at_index(index) is None
    index.write_text("")  # truncated: a rewrite under way
    assert look_at_index(index) is None
    index.write_text("885967\nCOMPLETED")
    os.utime(index, ns=(1, 1_700_000_000_123_456_789))
    assert look_at_index(index) == IndexLook(885967, 1_700_000_000_123_456_789)


@pytest.mark.parametrize("settings, expected", [
    ({"commitlog_sync": "periodic", "commitlog_sync_period": "1000ms", "periodic_commitlog_sync_lag_block": None},
     SyncMode("periodic", 2500)),  # 5.0: the lag block unset is 1.5 periods
    ({"commitlog_sync": "periodic", "commitlog_sync_period_in_ms": "10000"}, SyncMode("periodic", 25000)),  # 4.0
    ({"commitlog_sync": "periodic", "commitlog_sync_period": "10s", "periodic_commitlog_sync_lag_block": "5s"},
     SyncMode("periodic", 15000)),
    ({"commitlog_sync": "group", "commitlog_sync_period": "0ms"}, SyncMode("group", 0)),
    ({"commitlog_sync": "batch"}, SyncMode("batch", 0)),
])
def test_the_bound_of_each_sync_mode(settings, expected):
    assert SyncMode.of_settings(settings) == expected


def test_a_periodic_sync_without_its_period_or_a_bad_duration_is_refused():
    with pytest.raises(ValueError, match="without its period"):
        SyncMode.of_settings({"commitlog_sync": "periodic"})
    with pytest.raises(ValueError, match="not a duration"):
        milliseconds("ten seconds")


class Queue:
    """A producer that takes the frontier records offered (or refuses them: its queue is full)."""

    def __init__(self) -> None:
        self.offered: list[tuple[str, bytes, bytes]] = []
        self.full = False

    def ensure_topic(self, topic: str, stopping, compacted: bool = False) -> bool:
        assert compacted
        return True

    def offer(self, topic: str, key: bytes, value: bytes, on_delivery) -> bool:
        if self.full:
            return False
        self.offered.append((topic, key, value))
        return True


def sender(queue: Queue, discover, refused=lambda: []) -> FrontierSender:
    made = FrontierSender(queue, {"bootstrap.servers": "127.0.0.1:1"}, "rt", "node-1", discover, 1.0, refused)
    made.end_offsets = lambda: {"rt.shop.orders": {0: 7, 1: 0}, "rt.shop.items": {0: 3}}
    return made


def test_the_record_names_the_node_and_leaves_out_a_table_the_registry_refuses():
    queue, node = Queue(), Node("0fdaada0-3449-4d8e-95a0-00d177134dac", SyncMode("periodic", 2500))
    frontiers = sender(queue, lambda: node, refused=lambda: ["shop.items"])
    assert frontiers._discover() and frontiers.node == node
    frontiers._send(1_795_789_552_198_000, threading.Event())
    [(topic, key, value)] = queue.offered
    assert topic == "rt.frontiers" and key == node.host_id.encode()
    assert FrontierRecord.decode(value) == FrontierRecord(node.host_id, "node-1", 1_795_789_552_198_000, 2500,
                                                          {"rt.shop.orders": {0: 7, 1: 0}})
    queue.full = True
    frontiers._send(1_795_789_553_198_000, threading.Event())  # dropped: the events' queue comes first
    assert len(queue.offered) == 1


def test_a_node_that_does_not_answer_is_asked_again_and_said_once_loudly(caplog):
    answers = [ConnectionError("Host has been marked down"), Node("h", SyncMode("batch", 0))]

    def discover() -> Node:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    frontiers = sender(Queue(), discover)
    assert not frontiers._discover() and frontiers.node is None
    assert "Host has been marked down" in caplog.text and "WARNING" in caplog.text
    assert frontiers._discover() and frontiers.node.sync.bound_ms == 0
