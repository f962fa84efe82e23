"""Kafka records as the sink makes them on the executors (`RECORDS`, from each Arrow batch of a frame),
and their headers. Records the driver produces (dead letters, images) are shipped to it as one Arrow stream
per batch, a partition at a time and in order (`shipped`): a few objects per batch to pass from the
executors rather than a Row per record."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial

import pyarrow as pa
from pyspark.sql import DataFrame

Record = tuple[bytes | None, bytes | None, str | None, bool]  # key, value (None: a tombstone), change id, late
RECORDS = pa.schema([pa.field("key", pa.binary()), pa.field("value", pa.binary()), pa.field("change_id", pa.string()),
                     pa.field("late", pa.bool_())])  # a null value: a tombstone
LATE_HEADER = ("ringtail-late", b"true")
# An Arrow batch of a frame → its `RECORDS`, on the executors.
BatchEncoder = Callable[[pa.RecordBatch], pa.RecordBatch]


def headers(change_id: str | None, late: bool) -> list[tuple[str, bytes]]:
    """A record's headers: its change id, and whether the job read the change late (a replica's copy of it
    may be in the topic already, `spark.delivery.pipeline`)."""
    found = [("ringtail-change-id", change_id.encode())] if change_id else []
    if late:
        found.append(LATE_HEADER)
    return found


def shipped(frame: DataFrame, encode: BatchEncoder) -> Iterator[Record]:
    """The records of `frame`, in its order: each Arrow batch encoded on the executors (`encode`: a batch →
    `RECORDS`)."""
    chunks = frame.mapInArrow(partial(_chunks, encode), "chunk binary")
    for (chunk,) in chunks.toLocalIterator(prefetchPartitions=True):
        table = pa.ipc.open_stream(chunk).read_all()
        yield from zip(*(table.column(name).to_pylist() for name in RECORDS.names))


def _chunks(encode: BatchEncoder, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, RECORDS) as stream:
            stream.write_batch(encode(batch))
        yield pa.RecordBatch.from_pydict({"chunk": [sink.getvalue().to_pybytes()]})
