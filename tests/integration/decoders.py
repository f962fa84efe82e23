"""The job's two decoders on events the real connector wrote, with the real registry: the native core
(`spark.delivery.native_events`, what the job runs) must give the reference's (`spark.delivery.events`) rows."""
from __future__ import annotations

import datetime as dt

import pyarrow as pa

from schemas.avro.reader import event_readers
from spark.delivery.events import decode_records
from spark.delivery.native_events import NativeEvents


def assert_decoders_agree(registry_url: str, messages: list, cells: bool = False) -> int:
    """Kafka `messages` (confluent-kafka's) decoded both ways into equal `DECODED` batches; the rows."""
    utc = dt.timezone.utc
    batch = pa.RecordBatch.from_pydict({
        "topic": [m.topic() for m in messages], "partition": [m.partition() for m in messages],
        "offset": [m.offset() for m in messages],
        "timestamp": [dt.datetime.fromtimestamp(m.timestamp()[1] / 1000, utc) for m in messages],
        "key": [m.key() for m in messages], "value": [m.value() for m in messages]},
        schema=pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
                          ("timestamp", pa.timestamp("us", tz="UTC")), ("key", pa.binary()), ("value", pa.binary())]))
    readers = event_readers(registry_url)
    expected = decode_records(batch, readers, cells)
    actual = NativeEvents(readers, cells).decode(batch)
    if not actual.equals(expected):
        for i, (want, got) in enumerate(zip(expected.to_pylist(), actual.to_pylist(), strict=True)):
            assert got == want, f"row {i} of {expected.num_rows}"
    assert expected.num_rows >= len(messages) and expected.column("failure").null_count == expected.num_rows
    return expected.num_rows
