"""Replica copies skipped within a task (`NativeEvents.decode` with a `ReplicaCopies`, the Rust crate's
`events::copies`), on the events of a real Cassandra 5.0 segment framed as two replicas' connectors
send them: each with its own node and processing time. A task's copies decode as the first replica's
events alone; nothing that is not a copy is ever skipped."""
import pyarrow as pa
import pytest

from schemas.avro import SourceInfo
from schemas.avro.reader import EventReaders
from schemas.avro.wire import frame, unframe
from spark.delivery.events import decode_records
from spark.delivery.native_events import NativeEvents, ReplicaCopies
from tests.unit.schemas.avro.support import PROCESSED_MS, SOURCE
from tests.unit.spark.delivery.decoding import Registry, framed_events, records

OTHER_NODE = SourceInfo(name=SOURCE.name, cluster=SOURCE.cluster, node="4f7e9a3c-0000-4000-8000-000000000002")


@pytest.fixture(scope="module")
def replicas():
    """(schemas, the first replica's values, the second's): the same changes, read 7 ms apart."""
    schemas, first = framed_events()
    _, second = framed_events(OTHER_NODE, PROCESSED_MS + 7)
    assert len(first) == len(second) and all(a != b for a, b in zip(first, second))
    return schemas, first, second


def native(schemas: dict, cells: bool = False) -> NativeEvents:
    return NativeEvents(EventReaders(Registry(schemas)), cells)


def rows(batch: pa.RecordBatch) -> list[dict]:
    """The rows, each without its Kafka offset (the same change sits at another offset in another batch)."""
    out = batch.to_pylist()
    for row in out:
        row["source"].pop("offset")
    return out


def interleaved(*replicas: list[bytes]) -> list[bytes]:
    return [value for copies in zip(*replicas) for value in copies]


@pytest.mark.parametrize("cells", [False, True], ids=["log", "cells"])
def test_copies_side_by_side_decode_as_the_first_replica_alone(replicas, cells):
    schemas, first, second = replicas
    copies = ReplicaCopies()
    got = native(schemas, cells).decode(records(interleaved(first, second)), copies)
    reference = decode_records(records(first), EventReaders(Registry(schemas)), cells)
    assert rows(got) == rows(reference)
    assert copies.skipped == len(second)


def test_every_record_skipped_is_a_change_the_job_would_drop_as_a_copy(replicas):
    schemas, first, second = replicas
    both = records(interleaved(first, second))
    every = native(schemas).decode(both).to_pylist()
    kept = native(schemas).decode(both, ReplicaCopies()).to_pylist()
    identity = {(r["change_id"], r["cdc$batch_seq_no"]) for r in kept}
    assert {(r["change_id"], r["cdc$batch_seq_no"]) for r in every} == identity
    assert len(every) == 2 * len(kept)
    assert {r["source"]["node"] for r in kept} == {SOURCE.node}


def test_a_task_remembers_across_its_batches_and_a_new_task_starts_afresh(replicas):
    schemas, first, second = replicas
    decoder, copies = native(schemas), ReplicaCopies()
    assert decoder.decode(records(first), copies).num_rows > 0
    assert decoder.decode(records(second), copies).num_rows == 0
    assert copies.skipped == len(second)
    again = decoder.decode(records(second), ReplicaCopies())
    assert rows(again) == rows(decoder.decode(records(second)))


def test_distinct_changes_of_one_replica_are_all_decoded(replicas):
    schemas, first, _ = replicas
    copies = ReplicaCopies()
    assert rows(native(schemas).decode(records(first), copies)) == rows(native(schemas).decode(records(first)))
    assert copies.skipped == 0


def test_the_same_value_under_another_key_is_not_a_copy(replicas):
    schemas, first, second = replicas
    batch = records([first[1], second[1]])
    batch = batch.set_column(4, "key", pa.array([b"k", b"k2"], pa.binary()))
    copies = ReplicaCopies()
    assert native(schemas).decode(batch, copies).num_rows == 2 * native(schemas).decode(records([first[1]])).num_rows
    assert copies.skipped == 0


def test_a_record_that_could_not_be_decoded_is_no_first_copy(replicas):
    schemas, first, second = replicas
    # The same change but for a row index out of an int's range, in `source`: the digest leaves it out,
    # the decoder refuses it.
    parsed = EventReaders(Registry(schemas)).get(1).parsed
    event = unframe(first[1], parsed)
    event["source"]["position"]["row_index"] = 1 << 40
    refused = frame(1, parsed, event)
    unknown = first[1][:1] + (999).to_bytes(4, "big") + first[1][5:]
    copies = ReplicaCopies()
    out = native(schemas).decode(records([refused, unknown, second[1], first[1]]), copies).to_pylist()
    assert [r["failure"] for r in out[:2]] == ["undecodable", "undecodable"]
    assert "row_index" in out[0]["failure_detail"]
    assert len(out) > 2 and {r["source"]["node"] for r in out[2:]} == {OTHER_NODE.node}
    assert copies.skipped == 1  # first[1]: a copy of second[1], decoded before it
