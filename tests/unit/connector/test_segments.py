"""Which segment is read next, what counts as backlog, and what earlier runs left behind — on a cdc_raw
of files laid out here."""
from __future__ import annotations

import os
import time

from connector.commitlog import Position
from connector.lost import LostSegments
from connector.segments import leftovers
from connector.source import backlog, next_segment, scan

import pytest


def segment(cdc_raw, segment_id: int, index: str | None = None, age: float = 0) -> None:
    paths = [cdc_raw / f"CommitLog-7-{segment_id}.log"]
    paths[0].write_bytes(b"\0" * 64)
    if index is not None:
        paths.append(cdc_raw / f"CommitLog-7-{segment_id}_cdc.idx")
        paths[1].write_text(index)
    for path in paths:
        os.utime(path, (time.time() - age, time.time() - age))


def nothing_done(_segment_id: int) -> bool:
    return False


def test_the_oldest_indexed_segment_is_read_first(tmp_path):
    segment(tmp_path, 3, "100\nCOMPLETED")
    segment(tmp_path, 4, "50")
    assert next_segment(scan(tmp_path), nothing_done).segment_id == 3
    assert next_segment(scan(tmp_path), lambda i: i == 3).segment_id == 4


def test_a_segment_without_an_index_is_passed_over_when_a_later_one_has_one(tmp_path):
    segment(tmp_path, 2)
    segment(tmp_path, 3, "100")
    assert next_segment(scan(tmp_path), nothing_done).segment_id == 3


def test_the_newest_segment_without_an_index_is_the_one_being_written(tmp_path):
    segment(tmp_path, 3, "100\nCOMPLETED")
    segment(tmp_path, 4)
    assert next_segment(scan(tmp_path), lambda i: i == 3).segment_id == 4


def test_an_empty_index_counts_as_an_index(tmp_path):
    """Caught mid-rewrite or broken: the segment is read (and watched), not passed over."""
    segment(tmp_path, 3, "")
    segment(tmp_path, 4, "20")
    assert next_segment(scan(tmp_path), nothing_done).segment_id == 3


def test_reading_does_not_pass_a_lost_segment(tmp_path):
    segment(tmp_path, 3, "100\nCOMPLETED")
    segment(tmp_path, 5, "100")
    assert next_segment(scan(tmp_path), lambda i: i == 3, blocked_from=4) is None
    assert next_segment(scan(tmp_path), nothing_done, blocked_from=4).segment_id == 3


def test_below_a_lost_segment_a_link_without_an_index_is_a_leftover_not_the_segment_being_written(tmp_path):
    segment(tmp_path, 2)  # left by a clean stop of Cassandra: never held CDC data
    segment(tmp_path, 3, "100\nCOMPLETED")
    segment(tmp_path, 5, "100")  # indexed, after the lost 4: not seen while reading waits for 4
    assert next_segment(scan(tmp_path), lambda i: i == 3, blocked_from=4) is None
    assert next_segment(scan(tmp_path), nothing_done, blocked_from=4).segment_id == 3
    assert next_segment(scan(tmp_path), lambda i: i == 3, blocked_from=6).segment_id == 5


def test_a_segment_that_came_back_without_its_index_is_read(tmp_path):
    segment(tmp_path, 3)
    segment(tmp_path, 5, "100")
    assert next_segment(scan(tmp_path), nothing_done, complete=frozenset({3})).segment_id == 3


def test_backlog_is_what_the_indexes_promise_less_what_was_read(tmp_path):
    segment(tmp_path, 3, "1000\nCOMPLETED")
    segment(tmp_path, 4, "300")
    segment(tmp_path, 5)
    listing = scan(tmp_path)
    assert backlog(listing, None, nothing_done) == 1300
    assert backlog(listing, Position(3, 400, 0, 0), nothing_done) == 900
    assert backlog(listing, Position.end_of(3), nothing_done) == 300
    assert backlog(listing, Position(4, 100, 0, 0), lambda i: i == 3) == 200


def test_leftovers_are_old_orphan_indexes_and_unindexed_links_below_the_oldest_live_segment(tmp_path):
    segment(tmp_path, 1, age=3600)  # a link from an earlier run
    (tmp_path / "CommitLog-7-2_cdc.idx").write_text("10\nCOMPLETED")  # its segment is gone
    os.utime(tmp_path / "CommitLog-7-2_cdc.idx", (time.time() - 3600, time.time() - 3600))
    segment(tmp_path, 3)  # recent: Cassandra may still discard it itself
    segment(tmp_path, 4, "100", age=3600)
    segment(tmp_path, 5, age=3600)  # newer than the oldest live segment
    found = leftovers(scan(tmp_path), min_age=600)
    assert sorted((kind, path.name) for kind, path in found) == [
        ("orphan_index", "CommitLog-7-2_cdc.idx"), ("unindexed_link", "CommitLog-7-1.log")]
    assert [p.name for _, p in leftovers(scan(tmp_path), min_age=600, keep={2})] == ["CommitLog-7-1.log"]


def test_lost_segments_wait_for_an_acknowledgement(tmp_path):
    lost = LostSegments(tmp_path / "lost")
    lost.record("CommitLog-7-5.log", 5, Position(5, 100, 0, 0))
    lost.record("CommitLog-7-6.log", 6, None)
    assert [entry.segment_id for entry in lost.pending()] == [5, 6]
    assert "read up to" in str(lost.pending()[0]) and "not read at all" in str(lost.pending()[1])
    with pytest.raises(ValueError, match="CommitLog-7-9.log is not recorded as lost.*CommitLog-7-5.log"):
        lost.acknowledge("CommitLog-7-9.log")
    assert lost.acknowledge("CommitLog-7-5.log").position == Position(5, 100, 0, 0)
    assert [entry.segment_id for entry in lost.pending()] == [6]
    assert lost.recorded() == {5, 6}
    lost.returned(lost.pending()[0])
    assert lost.pending() == [] and lost.recorded() == {5}
