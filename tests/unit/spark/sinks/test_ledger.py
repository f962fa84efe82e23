"""The ledger's rule: a batch id the sink holds is a replay only with the offsets it was written with; a
part of a batch is named by its content."""
from __future__ import annotations

import pyarrow as pa
import pytest

from spark.sinks.ledger import BatchMismatch, is_newest_replay, is_replay
from spark.sinks.parts import held_to_write, part_digest


def test_a_batch_held_with_the_same_offsets_is_a_replay():
    assert is_replay("audit.1", 4, "abc", "abc")


def test_a_batch_held_before_ledgers_kept_offsets_is_taken_on_trust():
    assert is_replay("audit.1", 4, "abc", None)


def test_a_batch_held_with_other_offsets_is_refused_naming_the_writer_the_batch_and_the_cause():
    with pytest.raises(BatchMismatch) as caught:
        is_replay("audit.1", 0, "new", "old")
    error = caught.value
    assert (error.app_id, error.batch_id, error.offsets, error.written) == ("audit.1", 0, "new", "old")
    message = str(error)
    assert "holds batch 0 of audit.1 for other source offsets (old there, new now)" in message
    assert "none of it is written" in message and "checkpoint_dir" in message


@pytest.mark.parametrize("newest, batch_id", [(None, 0), (None, 7), (3, 4), (3, 100)])
def test_a_batch_after_the_newest_held_is_new(newest, batch_id):
    assert not is_newest_replay("audit.1", batch_id, "x", newest, "y")


def test_the_newest_batch_again_with_its_offsets_is_a_replay_and_with_others_is_refused():
    assert is_newest_replay("audit.1", 3, "x", 3, "x")
    assert is_newest_replay("audit.1", 3, "x", 3, None)
    with pytest.raises(BatchMismatch, match="holds batch 3 of audit.1 for other source offsets"):
        is_newest_replay("audit.1", 3, "x", 3, "y")


def test_a_batch_older_than_the_newest_held_is_never_a_replay():
    # Spark replays only the newest batch a sink holds: an older id comes from another checkpoint.
    with pytest.raises(BatchMismatch,
                       match="holds batch 9 of audit.1 already, so batch 0 cannot be a replay") as caught:
        is_newest_replay("audit.1", 0, "x", 9, "x")
    assert caught.value.newest == 9


def _csv(*names: str) -> bytes:
    from spark.sinks.staged import csv_chunk

    return csv_chunk(pa.RecordBatch.from_pydict({"name": list(names), "n": list(range(len(names)))}))


def test_a_part_is_named_by_its_content_so_a_replay_of_the_same_rows_has_the_same_name():
    first = part_digest([_csv("a", "b"), _csv("c")])
    assert first == part_digest([_csv("a", "b"), _csv("c")]) and len(first) == 32
    assert first != part_digest([_csv("a", "b"), _csv("d")])
    assert first != part_digest([_csv("a", "b")])
    assert part_digest([b"ab", b"c"]) != part_digest([b"a", b"bc"])  # the chunks' bounds count too


def test_a_batch_held_finished_is_skipped_one_begun_is_written_on_and_other_offsets_are_refused():
    assert not held_to_write("audit.1", 3, "abc", "abc", done=True)
    assert held_to_write("audit.1", 3, "abc", "abc", done=False)  # cut between its parts: finish it
    with pytest.raises(BatchMismatch):
        held_to_write("audit.1", 3, "new", "old", done=False)
