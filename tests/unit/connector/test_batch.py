"""A batch's columns kept in step: events chosen, events already delivered dropped, events gathered one
at a time — and what was read for them counted once."""
from __future__ import annotations

from connector.batch import Batch, Gathering
from schemas.change import Position


def batch() -> Batch:
    return Batch(7, offsets=[10, 10, 30], updates=[0, 1, 0], rows=[0, 0, 2], tables=[0, 1, 0],
                 write_times=[100, 200, 300], keys=[b"k1", b"k2", b"k3"], values=[b"v1", b"v2", b"v3"],
                 topics=["a", "b"], read=4, left_out=1, through=Position(7, 30, 0, 2))


def test_keeping_chooses_the_same_events_in_every_column_and_counts_the_others_left_out():
    kept = batch().keeping([0, 2])
    assert (kept.offsets, kept.rows, kept.tables, kept.keys, kept.values) == \
        ([10, 30], [0, 2], [0, 0], [b"k1", b"k3"], [b"v1", b"v3"])
    assert (kept.read, kept.left_out, kept.through) == (4, 2, Position(7, 30, 0, 2))
    assert batch().keeping([0, 1, 2]) == batch()


def test_after_drops_the_events_up_to_a_position_and_does_not_count_them_read_again():
    rest = batch().after(Position(7, 10, 0, 0))
    assert (rest.position(0), len(rest), rest.values, rest.read) == (Position(7, 10, 1, 0), 2, [b"v2", b"v3"], 3)
    assert batch().after(Position(7, 5, 0, 0)) == batch()
    assert len(batch().after(Position(7, 30, 0, 2))) == 0


def test_a_gathering_numbers_topics_in_order_and_starts_again_after_each_take():
    gathering = Gathering(3)
    assert gathering.take() is None
    gathering.event(Position(3, 1, 0, 0), "t1", b"k", b"v", 5)
    gathering.left_out(Position(3, 2, 0, 0))
    gathering.event(Position(3, 4, 0, 0), "dead", b"k", b"letter", 0, change=False)
    gathering.event(Position(3, 5, 0, 0), "t1", b"k", b"w", 6)
    taken = gathering.take()
    assert ([taken.topics[t] for t in taken.tables], taken.values) == (["t1", "dead", "t1"], [b"v", b"letter", b"w"])
    assert (taken.read, taken.left_out, taken.through) == (3, 1, Position(3, 5, 0, 0))
    assert len(gathering) == 0 and gathering.take() is None
