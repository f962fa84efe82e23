"""Reading the snapshot's planned steps from Spark's offset log. The two files under `data/checkpoint`
are as Spark 4.0.0 wrote them for a snapshot of the integration test (`test_snapshot.py`)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from spark.snapshot.checkpoint import planned_offset
from spark.snapshot.ranges import from_offset
from spark.streams.tokens import MAX_TOKEN, MIN_TOKEN

CHECKPOINT = Path(__file__).parent / "data" / "checkpoint"


def test_a_batchs_offset_is_the_line_after_the_version_and_metadata():
    generation, ranges = from_offset(planned_offset(CHECKPOINT, 2))
    assert generation == 1795402445203000
    assert (ranges[0].start, ranges[-1].end) == (MIN_TOKEN, MAX_TOKEN)
    assert [r.start for r in ranges[1:]] == [r.end for r in ranges[:-1]]


def test_the_newest_batch_is_where_the_next_step_starts():
    assert planned_offset(CHECKPOINT) == planned_offset(CHECKPOINT, 3) != planned_offset(CHECKPOINT, 2)
    later = [r.position for r in from_offset(planned_offset(CHECKPOINT, 3))[1]]
    earlier = [r.position for r in from_offset(planned_offset(CHECKPOINT, 2))[1]]
    assert all(b >= a for a, b in zip(earlier, later)) and later != earlier


def test_no_offsets_yet_and_a_truncated_file(tmp_path):
    assert planned_offset(tmp_path) is None
    assert planned_offset(CHECKPOINT, 99) is None
    shutil.copytree(CHECKPOINT, tmp_path / "c")
    (tmp_path / "c" / "offsets" / "3").write_text("v1\n{}\n")
    with pytest.raises(ValueError, match="no source offset after the version and metadata lines"):
        planned_offset(tmp_path / "c", 3)
