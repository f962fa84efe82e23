"""The rows the job produces: ScyllaDB-style CDC log rows and dead letters.

One change event becomes one log row, or two for a range deletion (its start and end bounds,
as ScyllaDB writes them). Column values are JSON text, so one table layout holds every base
table whatever its columns:

* atomic values as JSON scalars; ``blob`` as ``"0x…"`` hex; ``timestamp`` as ms since the epoch,
  ``date`` as days since the epoch, ``time`` as ns since midnight (Avro logical types are not
  applied, so nothing is rounded or out of range); ``uuid``, ``timeuuid``, ``varint``, ``decimal``,
  ``inet`` as strings; ``duration`` as ``{months, days, nanoseconds}``;
* lists as objects from the element timeuuid to the value (ScyllaDB logs a non-frozen
  ``list<T>`` as ``frozen<map<timeuuid, T>>``), sets as arrays, maps as arrays of ``[key, value]``,
  tuples as arrays, UDTs as objects of the fields written.

The metadata columns carry ScyllaDB's names (``cdc$stream_id``…) and meaning.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
    ArrayType,
)

# ScyllaDB's cdc$operation codes (cdc/log.hh; "don't change the constant values").
ROW_UPDATE = 1
ROW_INSERT = 2
ROW_DELETE = 3
PARTITION_DELETE = 4
RANGE_DELETE_START_INCLUSIVE = 5
RANGE_DELETE_START_EXCLUSIVE = 6
RANGE_DELETE_END_INCLUSIVE = 7
RANGE_DELETE_END_EXCLUSIVE = 8
# ringtail's own: a row as read, not one write — as a subscription's snapshot read it (Debezium's `r`),
# before the log follows, or as a read repair merged several writes of it for a replica that missed them.
ROW_READ = 10

SOURCE = StructType([
    StructField("node", StringType()),
    StructField("segment_id", LongType()),
    StructField("entry_offset", LongType()),
    StructField("update_index", IntegerType()),
    StructField("row_index", IntegerType()),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("schema_id", IntegerType()),
])

# What decoding yields; the stream columns are filled by the assignment step.
LOG_ROW = StructType([
    StructField("keyspace", StringType(), False),
    StructField("table", StringType(), False),
    StructField("cdc$stream_id", BinaryType()),
    StructField("cdc$time", StringType(), False),  # timeuuid text: write time in µs + a change digest
    StructField("cdc$batch_seq_no", IntegerType(), False),
    StructField("cdc$operation", ByteType(), False),
    StructField("cdc$ttl", LongType()),  # seconds; null without TTL
    StructField("cdc$end_of_batch", BooleanType(), False),
    StructField("key", StringType(), False),  # JSON object of the primary key columns set
    StructField("columns", MapType(StringType(), StringType()), False),  # column -> JSON value written
    StructField("deleted_columns", ArrayType(StringType()), False),  # ScyllaDB's cdc$deleted_<column>
    StructField("deleted_elements", MapType(StringType(), StringType()), False),  # column -> JSON array of keys
    StructField("write_time", TimestampType(), False),  # the change's write timestamp
    StructField("write_time_us", LongType(), False),
    StructField("partition_key", BinaryType(), False),  # serialized, as Cassandra hashes it
    StructField("token", LongType()),
    StructField("generation", TimestampType()),  # start of the generation the stream belongs to
    StructField("change_id", StringType(), False),  # digest of the change's content; equal on every replica
    StructField("kafka_time", TimestampType(), False),  # when the event reached Kafka
    StructField("source", SOURCE, False),
])

DEAD_LETTER = StructType([
    StructField("reason", StringType(), False),  # undecodable, no_generation, from_the_future, too_old
    StructField("detail", StringType(), False),
    StructField("topic", StringType(), False),
    StructField("partition", IntegerType(), False),
    StructField("offset", LongType(), False),
    StructField("kafka_time", TimestampType(), False),
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("keyspace", StringType()),
    StructField("table", StringType()),
    StructField("write_time_us", LongType()),
    StructField("change_id", StringType()),
])

# What decoding and stream assignment yield: log rows, with `failure` (a dead letter's reason)
# and `failure_detail` set on rows that cannot be logged; an undecodable record keeps its bytes.
DECODED = StructType(
    [StructField(f.name, f.dataType, True) for f in LOG_ROW.fields]
    + [StructField("failure", StringType()), StructField("failure_detail", StringType()),
       StructField("raw_key", BinaryType()), StructField("raw_value", BinaryType()),
       # Each change's cells with their timestamps (`events.cell_changes`), decoded for mirrors only.
       StructField("cells", StringType())]
)
CELLS = "cells"
# Added to the log rows a sink takes: true for a row the job read more than `dedup_watermark` after its
# write, past what the replica-copy state can vouch for (`spark.delivery.pipeline.remove_replica_copies`).
LATE = "late"
UNDECODABLE = "undecodable"
NO_GENERATION = "no_generation"
FROM_THE_FUTURE = "from_the_future"
TOO_OLD = "too_old"


def stream_id_column(ids: np.ndarray, present: np.ndarray | None = None) -> pa.Array:
    """Raw 16-byte stream ids (a numpy array of `spark.streams.STREAM_ID_DTYPE`) as the Arrow binary
    column `cdc$stream_id`, from their buffer; null where `present` (booleans) is false."""
    n = len(ids)
    offsets = np.arange(0, 16 * (n + 1), 16, dtype=np.int32)
    validity = None if present is None else pa.array(present).buffers()[1]
    return pa.Array.from_buffers(pa.binary(), n, [validity, pa.py_buffer(offsets), pa.py_buffer(ids.tobytes())])


def column_address(array: pa.Array) -> tuple[int, int, int, int, int, int]:
    """(validity, offsets, data, data size, offset, length) of a text, binary or fixed-width array: how the
    native core (`schemas._native`) is handed a column; the caller keeps the array alive for the call."""
    buffers = array.buffers()
    validity = buffers[0].address if buffers[0] is not None and array.null_count else 0
    if len(buffers) == 3:
        offsets, data = buffers[1], buffers[2]
        return (validity, offsets.address, data.address if data else 0, data.size if data else 0, array.offset,
                len(array))
    values = buffers[1]
    return validity, 0, values.address, values.size, array.offset, len(array)


def _buffer(raw: bytes | None) -> pa.Buffer | None:
    return None if raw is None else pa.py_buffer(raw)


def _children(spec) -> int:
    return len(spec[1]) // 4 - 1  # an offsets buffer holds one more offset than values


def arrow_column(kind: pa.DataType, spec: tuple, length: int) -> pa.Array:
    """An array of `length` values of `kind` from the buffers the native core gives back for a column:
    (validity or None, offsets, data, nulls) of text or binary, (validity or None, values, nulls) of fixed
    width, ((validity, offsets, nulls), keys, values) of a map and ((validity, offsets, nulls), items) of a list."""
    if pa.types.is_map(kind):
        (validity, offsets, nulls), keys, items = spec
        entries = pa.StructArray.from_arrays(
            [arrow_column(kind.key_type, keys, _children(keys)), arrow_column(kind.item_type, items, _children(items))],
            fields=[kind.key_field, kind.item_field])
        return pa.Array.from_buffers(kind, length, [_buffer(validity), pa.py_buffer(offsets)], null_count=nulls,
                                     children=[entries])
    if pa.types.is_list(kind):
        (validity, offsets, nulls), items = spec
        return pa.Array.from_buffers(kind, length, [_buffer(validity), pa.py_buffer(offsets)], null_count=nulls,
                                     children=[arrow_column(kind.value_type, items, _children(items))])
    if len(spec) == 4:
        validity, offsets, data, nulls = spec
        return pa.Array.from_buffers(kind, length, [_buffer(validity), pa.py_buffer(offsets), pa.py_buffer(data)],
                                     null_count=nulls)
    validity, values, nulls = spec
    return pa.Array.from_buffers(kind, length, [_buffer(validity), pa.py_buffer(values)], null_count=nulls)


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark expects from `mapInArrow` for `schema`."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema)
