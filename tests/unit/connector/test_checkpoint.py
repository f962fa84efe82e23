"""The delivery order, on its own: only an unbroken run of acknowledged events is committed, filtered
runs and segment ends commit, release waits for the commit, a failed or contradictory delivery report
stops everything after the committed position."""
from __future__ import annotations

from pathlib import Path

import pytest

from connector.checkpoint import BrokenInvariant, Checkpoint, DeliveryFailed, DeliveryState, PositionStore
from connector.commitlog import Position
from connector.source import SegmentFile


class Report:
    """What Kafka's delivery report hands the callback."""

    def __init__(self, offset: int, partition: int = 0, topic: str = "t") -> None:
        self._offset, self._partition, self._topic = offset, partition, topic

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset


class Store(PositionStore):
    """In memory, counting writes."""

    def __init__(self, state: DeliveryState | None = None) -> None:
        super().__init__(Path("unused"))
        self.state, self.saves = state or DeliveryState(), []

    def load(self) -> DeliveryState:
        return self.state

    def save(self, state: DeliveryState) -> None:
        self.state = state
        self.saves.append(state)


def seg(segment_id: int) -> SegmentFile:
    return SegmentFile(Path(f"CommitLog-7-{segment_id}.log"), segment_id)


def at(segment_id: int, offset: int) -> Position:
    return Position(segment_id, offset, 0, 0)


@pytest.fixture
def released() -> list[int]:
    return []


@pytest.fixture
def store() -> Store:
    return Store()


@pytest.fixture
def checkpoint(store, released) -> Checkpoint:
    return Checkpoint(store, lambda segment: released.append(segment.segment_id))


def test_only_an_unbroken_run_of_acknowledged_events_is_committed(checkpoint, store):
    first, second, third = (checkpoint.produced(at(1, o)) for o in (10, 20, 30))
    for position in (10, 20, 30):
        checkpoint.read_through(at(1, position))
    second(None, Report(0, partition=1))  # another partition answers first
    third(None, Report(1, partition=1))
    assert checkpoint.commit() is None and store.saves == []
    first(None, Report(0))
    assert checkpoint.commit() == at(1, 30)
    assert store.state.position == at(1, 30)
    assert checkpoint.in_flight == 0


def test_a_run_of_events_sharing_one_callback_commits_once_each_is_acknowledged(store, released):
    told = []
    checkpoint = Checkpoint(store, lambda segment: None, told.append)
    run = checkpoint.produced(at(1, 30), 3)
    assert checkpoint.in_flight == 3
    run(None, Report(0))
    run(None, Report(0, partition=1))
    assert checkpoint.commit() is None and checkpoint.in_flight == 1
    run(None, Report(1))
    assert checkpoint.commit() == at(1, 30) and checkpoint.in_flight == 0
    assert told == [2, 1]  # acknowledgements are counted at each commit


def test_more_reports_than_events_in_a_run_break_the_invariant(checkpoint):
    run = checkpoint.produced(at(1, 30), 2)
    for offset in (0, 1, 2):
        run(None, Report(offset))
    with pytest.raises(BrokenInvariant, match="more delivery reports than events for one of the 2 events up to "
                                              "segment 1 offset 30"):
        checkpoint.commit()


def test_a_report_repeated_within_a_run_is_caught_by_its_offset(checkpoint, store):
    """A repeated report cannot stand in for an event never acknowledged: the partition's offset did
    not grow."""
    run = checkpoint.produced(at(1, 30), 2)
    run(None, Report(4))
    run(None, Report(4))
    with pytest.raises(BrokenInvariant, match="offset 4, after offset 4"):
        checkpoint.commit()
    assert store.saves == []


def test_filtered_changes_commit_without_any_event(checkpoint, store):
    for position in range(100):
        checkpoint.read_through(at(1, position))
    assert checkpoint.commit() == at(1, 99)
    assert len(store.saves) == 1


def test_a_filtered_run_behind_an_unacknowledged_event_waits_for_it(checkpoint):
    delivered = checkpoint.produced(at(1, 10))
    for position in range(11, 50):
        checkpoint.read_through(at(1, position))
    assert checkpoint.commit() is None
    delivered(None, Report(0))
    assert checkpoint.commit() == at(1, 49)


def test_a_segment_is_released_only_after_its_end_is_committed(checkpoint, store, released):
    delivered = checkpoint.produced(at(1, 10))
    checkpoint.finished(seg(1))
    assert checkpoint.releasing(1)
    checkpoint.commit()
    assert released == []
    delivered(None, Report(0))
    checkpoint.commit()
    assert released == [1]
    assert not checkpoint.releasing(1)
    # The end and the segment to release are stored before the release, then that it is gone.
    assert store.saves[-2].done == (1,) and store.saves[-2].position == Position.end_of(1)
    assert store.saves[-1].done == ()


def test_a_filtered_only_segment_is_released(checkpoint, released):
    checkpoint.read_through(at(1, 500))
    checkpoint.finished(seg(1))
    checkpoint.commit()
    assert released == [1]


def test_a_failed_delivery_stops_every_commit(checkpoint, store):
    first, second = checkpoint.produced(at(1, 10)), checkpoint.produced(at(1, 20))
    first(None, Report(0))
    second("Broker: not enough replicas", None)
    with pytest.raises(DeliveryFailed,
                       match="at segment 1 offset 20, update 0, row 0 not delivered: .*not enough replicas"):
        checkpoint.commit()
    assert store.saves == []
    # A new checkpoint (what the connector makes to rewind) starts over from what is committed.
    assert Checkpoint(store, lambda s: None).committed is None


def test_a_second_report_for_one_event_breaks_the_invariant(checkpoint):
    delivered = checkpoint.produced(at(1, 10))
    delivered(None, Report(0))
    delivered(None, Report(1))
    with pytest.raises(BrokenInvariant, match="more delivery reports than events for the event at"):
        checkpoint.commit()


@pytest.mark.parametrize("offsets", [(5, 5), (5, 3), (-1, 0)])
def test_offsets_that_do_not_grow_break_the_invariant(checkpoint, store, offsets):
    first, second = checkpoint.produced(at(1, 10)), checkpoint.produced(at(1, 20))
    first(None, Report(offsets[0]))
    second(None, Report(offsets[1]))
    with pytest.raises(BrokenInvariant, match="acknowledged at t\\[0\\]"):
        checkpoint.commit()
    assert store.saves == []


def test_offsets_are_per_partition(checkpoint):
    first, second = checkpoint.produced(at(1, 10)), checkpoint.produced(at(1, 20))
    first(None, Report(7, partition=0))
    second(None, Report(3, partition=1))
    assert checkpoint.commit() == at(1, 20)


def test_a_segment_read_again_after_it_came_back_never_moves_the_position_back(store, released):
    store.state = DeliveryState(at(5, 100))
    checkpoint = Checkpoint(store, lambda segment: released.append(segment.segment_id))
    delivered = checkpoint.produced(at(3, 10))
    checkpoint.finished(seg(3))
    delivered(None, Report(0))
    assert checkpoint.commit() == at(5, 100)
    assert released == [3]


def test_resume_releases_what_a_crash_left_committed_and_skips_what_latest_skips(store, released):
    store.state = DeliveryState(at(5, 100), done=(3,), skip_before=5)
    skipped = []
    checkpoint = Checkpoint(store, lambda segment: released.append(segment.segment_id))
    checkpoint.resume([seg(2), seg(3), seg(5)], lambda segment: skipped.append(segment.segment_id))
    assert released == [3]
    assert skipped == [2]  # 3 was released as committed, not skipped
    assert store.state == DeliveryState(at(5, 100))


def test_reading_resumes_after_the_committed_position_in_its_segment_only(store):
    store.state = DeliveryState(at(5, 100))
    checkpoint = Checkpoint(store, lambda s: None)
    assert checkpoint.start_after(seg(5)) == at(5, 100)
    assert checkpoint.start_after(seg(6)) is None


def test_reading_resumes_after_what_this_run_handed_over_acknowledged_or_not(store):
    """A segment that left cdc_raw while read and came back: what was produced from it is not read again
    (Kafka has it, or will have it, or the delivery fails and everything after the commit is read again)."""
    store.state = DeliveryState(at(5, 100))
    checkpoint = Checkpoint(store, lambda s: None)
    delivered = checkpoint.produced(at(5, 200))
    checkpoint.produced(at(5, 300))
    checkpoint.read_through(at(5, 350))  # filtered changes after it
    checkpoint.produced(at(6, 10))
    assert checkpoint.start_after(seg(5)) == at(5, 350)
    assert checkpoint.start_after(seg(6)) == at(6, 10)
    delivered(None, Report(0))
    assert checkpoint.commit() == at(5, 200)
    assert checkpoint.start_after(seg(5)) == at(5, 350)
    # A new run (a restart, or a rewind after a failed delivery) knows only the commit.
    assert Checkpoint(store, lambda s: None).start_after(seg(5)) == at(5, 200)


def test_the_state_file_round_trips_and_reads_the_first_format(tmp_path):
    store = PositionStore(tmp_path / "position.json")
    assert store.load() == DeliveryState()
    state = DeliveryState(at(5, 100), done=(3, 4), skip_before=2)
    store.save(state)
    assert store.load() == state
    (tmp_path / "position.json").write_text('{"segment_id": 9, "entry_offset": 8, "update_index": 0, "row_index": 1}')
    assert store.load() == DeliveryState(Position(9, 8, 0, 1))


def test_the_state_says_whether_the_committed_segment_held_cdc_data(store):
    """Cassandra removes a segment that never held CDC data once flushed: the state records, with the
    position, whether its segment did (indexed, or an event came from it), so a restart that finds it gone
    knows whether anything was lost."""
    indexed = {6}
    checkpoint = Checkpoint(store, lambda s: None, indexed=indexed.__contains__)
    checkpoint.read_through(at(5, 100))  # filtered changes of a segment not indexed
    checkpoint.commit()
    assert (store.state.position, store.state.cdc_data) == (at(5, 100), False)
    checkpoint.produced(at(5, 200))(None, Report(0))  # an event from it: it holds CDC data now
    checkpoint.read_through(at(5, 300))
    checkpoint.commit()
    assert (store.state.position, store.state.cdc_data) == (at(5, 300), True)
    checkpoint.read_through(at(7, 50))
    checkpoint.commit()
    assert store.state.cdc_data is False
    checkpoint.read_through(at(6, 10))  # before the position: it stays, and so does what it says
    checkpoint.read_through(at(7, 60))
    checkpoint.commit()
    assert (store.state.position, store.state.cdc_data) == (at(7, 60), False)
    indexed.add(7)
    checkpoint.read_through(at(7, 70))
    checkpoint.commit()
    assert store.state.cdc_data is True
    assert DeliveryState.from_json(store.state.to_json()) == store.state
    assert DeliveryState.from_json({"position": at(7, 70)._asdict()}).cdc_data is True  # older files: held
