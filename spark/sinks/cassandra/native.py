"""A log table's INSERT values made in the native core (`schemas._native.LogInsertValues`) from an Arrow
batch of the sink's rows: for each row the serialized values `LogRowEncoder.encode` and the driver's `bind`
give, as a list of bytes (UNSET_VALUE where the row writes nothing), with no Python object made per row but
that list. The native core makes the values of what it takes exactly as the reference would, and None for
a row with anything else (a timestamp as ISO text, a decimal as a float, a vector, a null inside a
collection, text Python reads more leniently), which the reference then encodes, writes or refuses.
"""
from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from cassandra.query import UNSET_VALUE

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


def insert_values(native: Any, rows: pa.RecordBatch) -> tuple[list[list | None], list[int]]:
    """Each row's INSERT values, or None for a row the reference encodes (every row, if a column that
    must not be null holds a null); and each row's bytes of values."""
    if any(rows.column(name).null_count for name in _NOT_NULL):
        return [None] * rows.num_rows, [0] * rows.num_rows
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
    return native.values(addresses, UNSET_VALUE)
