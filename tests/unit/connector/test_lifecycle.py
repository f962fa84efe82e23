"""A segment's life alone: the steps it may take, the ones it may not, and what a listing changes."""
from __future__ import annotations

from pathlib import Path

import pytest

from connector.lifecycle import IllegalStep, SegmentLife, Stage
from connector.source import Listing, SegmentFile

ONE, TWO = SegmentFile(Path("CommitLog-7-1.log"), 1), SegmentFile(Path("CommitLog-7-2.log"), 2)


def listing(*segments: SegmentFile, indexed: tuple[int, ...] = ()) -> Listing:
    return Listing(list(segments), frozenset(indexed), {})


def test_a_segment_read_to_its_end_is_released_and_stays_so():
    life = SegmentLife()
    assert life.observe(listing(ONE, indexed=(1,))) == []
    for stage in (Stage.READING, Stage.FINISHED, Stage.RELEASED):
        life.move(ONE, stage)
    assert life.observe(listing(ONE, indexed=(1,))) == [] and life.stage(1) is Stage.RELEASED
    with pytest.raises(IllegalStep, match="released → reading"):
        life.move(ONE, Stage.READING)


@pytest.mark.parametrize("was, to", [(None, Stage.FINISHED), (Stage.INDEXED, Stage.FINISHED),
                                     (Stage.INDEXED, Stage.RETURNED), (Stage.LOST, Stage.READING),
                                     (Stage.QUARANTINED, Stage.INDEXED), (Stage.SKIPPED, Stage.INDEXED)])
def test_a_step_the_life_does_not_draw_is_refused(was, to):
    life = SegmentLife()
    path = {None: [], Stage.INDEXED: [Stage.INDEXED], Stage.LOST: [Stage.LOST],
            Stage.QUARANTINED: [Stage.READING, Stage.QUARANTINED], Stage.SKIPPED: [Stage.SKIPPED]}[was]
    for stage in path:
        life.move(ONE, stage)
    with pytest.raises(IllegalStep):
        life.move(ONE, to)
    assert life.stage(1) is was


def test_an_indexed_segment_that_leaves_is_named_and_one_never_indexed_is_not():
    life = SegmentLife()
    life.observe(listing(ONE, indexed=(1,)))
    life.move(TWO, Stage.READING)  # the newest, not indexed yet
    assert [s.segment for s in life.observe(listing())] == [ONE]
    life.stop_reading(TWO)
    assert life.stage(2) is None  # it never held CDC data


def test_a_lost_segment_back_is_read_to_its_chain_s_end_until_read_or_lost_again():
    life = SegmentLife()
    life.observe(listing(ONE, indexed=(1,)))
    life.move(ONE, Stage.LOST)
    assert life.returned() == frozenset()
    life.move(ONE, Stage.RETURNED)
    life.move(ONE, Stage.READING)
    assert life.returned() == {1}
    life.stop_reading(ONE)
    assert life.stage(1) is Stage.RETURNED and life.returned() == {1}
    assert [s.segment for s in life.observe(listing())] == [ONE]  # gone again: lost again
    life.move(ONE, Stage.LOST)
    assert life.returned() == frozenset()


def test_a_segment_back_after_its_loss_was_acknowledged_is_read_again():
    life = SegmentLife()
    life.move(ONE, Stage.LOST)
    life.move(ONE, Stage.ACKNOWLEDGED)
    life.observe(listing(ONE))
    assert life.stage(1) is Stage.ACKNOWLEDGED  # no index: nothing to read
    life.observe(listing(ONE, indexed=(1,)))
    assert life.stage(1) is Stage.INDEXED
