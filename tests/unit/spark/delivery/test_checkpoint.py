"""A micro-batch's offsets from Spark's checkpoint. The files under `data/kafka-checkpoint` are as Spark
4.0.0 wrote them for a subscription of the integration tests (Kafka source, three partitions)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from spark.delivery.checkpoint import newest_batch, planned_batch, source_offsets

CHECKPOINT = Path(__file__).parent / "data" / "kafka-checkpoint"


def batch_digest(checkpoint, batch_id: int) -> str:
    """The digest of the offsets `batch_id` covers."""
    return planned_batch(checkpoint, batch_id).offsets


def test_a_batchs_source_offsets_are_the_lines_after_the_version_and_metadata():
    assert source_offsets(CHECKPOINT, 1) == ['{"rt6594fefa.t_7b57beca12b0.orders":{"0":196,"1":200,"2":202}}']
    assert source_offsets(CHECKPOINT, 2) is None
    assert newest_batch(CHECKPOINT) == 1


def test_the_digest_is_stable_and_differs_between_batches():
    assert batch_digest(CHECKPOINT, 0) == batch_digest(CHECKPOINT, 0) != batch_digest(CHECKPOINT, 1)
    assert len(batch_digest(CHECKPOINT, 1)) == 32


def test_the_same_id_in_another_checkpoint_differs_by_where_the_batch_starts_or_ends(tmp_path):
    other = tmp_path / "other"
    shutil.copytree(CHECKPOINT, other)
    # Batch 1 ends at the same offsets, but started elsewhere: batch 0 ended elsewhere.
    zero = other / "offsets" / "0"
    zero.write_text(zero.read_text().replace('"0":98', '"0":97'))
    assert batch_digest(other, 1) != batch_digest(CHECKPOINT, 1)
    # Batch 0 ends at the same offsets, but the query started elsewhere (Kafka's first offsets).
    first = other / "sources" / "0" / "0"
    first.write_bytes(first.read_bytes().replace(b'"1":0', b'"1":5'))
    assert batch_digest(other, 0) != batch_digest(CHECKPOINT, 0)


def test_a_replay_in_another_run_keeps_its_digest_whatever_its_metadata(tmp_path):
    again = tmp_path / "again"
    shutil.copytree(CHECKPOINT, again)
    one = again / "offsets" / "1"
    one.write_text(one.read_text().replace('"batchTimestampMs":1795560622246', '"batchTimestampMs":1'))
    assert batch_digest(again, 1) == batch_digest(CHECKPOINT, 1)


def test_a_batch_not_planned_or_a_truncated_file_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="batch 7 has no offsets; it was not planned in this checkpoint"):
        batch_digest(CHECKPOINT, 7)
    shutil.copytree(CHECKPOINT, tmp_path / "c")
    (tmp_path / "c" / "offsets" / "1").write_text("v1\n{}\n")
    with pytest.raises(ValueError, match="no source offset after the version and metadata lines"):
        source_offsets(tmp_path / "c", 1)
    assert newest_batch(tmp_path / "nothing") is None


def test_a_batchs_planned_time_is_its_metadatas_and_a_file_without_one_is_an_error(tmp_path):
    assert planned_batch(CHECKPOINT, 1).planned_ms == 1795560622246
    with pytest.raises(ValueError, match="batch 7 has no offsets"):
        planned_batch(CHECKPOINT, 7)
    shutil.copytree(CHECKPOINT, tmp_path / "c")
    one = tmp_path / "c" / "offsets" / "1"
    one.write_text(one.read_text().replace('"batchTimestampMs":1795560622246,', ""))
    with pytest.raises(ValueError, match="offsets/1: the metadata line holds no batchTimestampMs"):
        planned_batch(tmp_path / "c", 1)
