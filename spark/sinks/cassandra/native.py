"""A log table's INSERT requests made in the native core (`schemas._native.LogInsertValues`) from an Arrow
batch of the sink's rows: the rows of one partition in unlogged BATCH requests, each request's statements
already encoded as the protocol carries them (the values `LogRowEncoder.encode` and the driver's `bind` give),
so no Python object is made per row. The native core takes what it encodes exactly as the reference would,
and leaves a row with anything else (a timestamp as ISO text, a decimal as a float, a vector, a null inside a
collection, text Python reads more leniently) to the reference, which then encodes, writes or refuses it.

The driver sends such a request as it sends any batch (routing, retries, re-preparing, compression): a
request listener puts the encoded statements into the BATCH message the driver made for it, whose type and
options (consistency, flags, timestamp) stay the driver's.
"""
from __future__ import annotations

import io
import weakref
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from cassandra.protocol import BatchMessage
from cassandra.query import BatchStatement, BatchType

from schemas.cql import parse_type
from schemas.cql.tree import type_tree
from spark.rows import column_address

from ..log_table import BATCH_SEQ_NO, END_OF_BATCH, OPERATION, STREAM_ID, TIME, TTL, LogLayout

try:
    from schemas._native import LogInsertValues
except ImportError:  # every row encoded by the reference
    LogInsertValues = None

# Columns whose nulls the native core would read as 0: a batch with one is the reference's.
_NOT_NULL = (BATCH_SEQ_NO, OPERATION, END_OF_BATCH, "write_time_us")


def native_insert(layout: LogLayout) -> Any | None:
    """The native maker of `layout`'s INSERT values; None without a native core."""
    if LogInsertValues is None:
        return None
    udts = {u.name: u for u in layout.user_types}
    positions = {name: i for i, name in enumerate(layout.columns())}

    def tree(type_text: str) -> tuple:
        return type_tree(parse_type(type_text, udts, layout.keyspace))

    return LogInsertValues(
        len(positions),
        [(name, positions[name], tree(t)) for name, t in layout.key_columns],
        [(c.name, positions[c.name], tree(c.type)) for c in layout.data_columns],
        [(c.name, positions[c.deleted]) for c in layout.data_columns],
        [(c.name, positions[c.deleted_elements], None if c.udt_fields is not None else tree(c.elements_type),
          None if c.udt_fields is None else list(c.udt_fields))
         for c in layout.data_columns if c.elements_type is not None],
    )


def encoded_batches(native: Any, rows: pa.RecordBatch, query_id: bytes, limit: int
                    ) -> tuple[list[tuple[bytes, bytes, list[int]]], list[int]]:
    """The rows as requests (routing key, encoded statements, the rows they write), at most `limit` bytes of
    values each; and the rows the reference encodes (every row, if a column that must not be null holds a
    null)."""
    if any(rows.column(name).null_count for name in _NOT_NULL):
        return [], list(range(rows.num_rows))
    columns, deleted, elements = rows.column("columns"), rows.column("deleted_columns"), rows.column("deleted_elements")
    # Held here, alive for the call: the native core reads their buffers by address.
    arrays = (
        rows.column(STREAM_ID), rows.column(TIME), rows.column(BATCH_SEQ_NO).cast(pa.int32()),
        rows.column(OPERATION).cast(pa.int8()), rows.column(TTL).cast(pa.int64()),
        pc.cast(rows.column(END_OF_BATCH), pa.int8()), rows.column("key"),
        (columns.offsets, columns.keys, columns.items), (deleted.offsets, deleted.values),
        (elements.offsets, elements.keys, elements.items), rows.column("write_time_us").cast(pa.int64()),
    )
    addresses = tuple(tuple(map(column_address, a)) if isinstance(a, tuple) else column_address(a) for a in arrays)
    return native.batches(addresses, query_id, limit)


class EncodedBatch(BatchStatement):
    """An unlogged batch of one partition whose statements the native core encoded (`statements`: the count
    and the statements); sent by a session that `send_encoded_batches`."""

    def __init__(self, statements: bytes, routing_key: bytes, keyspace: str, consistency: int) -> None:
        super().__init__(BatchType.UNLOGGED, consistency_level=consistency)
        self._statements_and_parameters = _NOT_ENCODED
        self.statements = statements
        self.routing_key = routing_key  # for token-aware routing, as a bound statement's
        self.keyspace = keyspace


class _NotEncoded:
    """The statements the driver reads of an `EncodedBatch` whose session was not given `send_encoded_batches`:
    its request fails rather than going out as an empty batch."""

    def __len__(self) -> int:
        return 0

    def __iter__(self):
        raise RuntimeError("an encoded batch sent by a session not given send_encoded_batches")


_NOT_ENCODED = _NotEncoded()


class _EncodedBatchMessage(BatchMessage):
    """The driver's BATCH message of an `EncodedBatch`, its statements written as encoded."""

    def __init__(self, made: BatchMessage, statements: bytes) -> None:
        self.__dict__.update(made.__dict__)  # the type, consistency, timestamp and flags the driver chose
        self.queries, self.statements = (), statements

    def send_body(self, f, protocol_version: int) -> None:
        # The driver's body of no statements is the type, a count of 0, then the options.
        empty = io.BytesIO()
        super().send_body(empty, protocol_version)
        body = empty.getbuffer()
        f.write(body[:1])
        f.write(self.statements)
        f.write(body[3:])


def _encode(future: Any) -> None:
    if isinstance(future.query, EncodedBatch) and not isinstance(future.message, _EncodedBatchMessage):
        future.message = _EncodedBatchMessage(future.message, future.query.statements)


def send_encoded_batches(session: Any) -> None:
    """Makes `session` send each `EncodedBatch` with its encoded statements (a request listener; once per
    session)."""
    if session not in _SENDING:
        session.add_request_init_listener(_encode)
        _SENDING.add(session)


_SENDING: weakref.WeakSet = weakref.WeakSet()  # the sessions `send_encoded_batches` was given
