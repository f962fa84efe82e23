"""Partition updates (PartitionUpdate serializer, "on-wire" form).

    16 bytes table id | vint-length partition key | uint8 flags | [serialization header]
    | [partition deletion] | [static row] | [uvint row estimate] | rows and markers | 0x01
"""
from __future__ import annotations

from typing import Callable

from schemas.cql.vint import read_uvint

from schemas.change import Change, Op, Position
from .header import read_serialization_header
from .layout import TableLayout
from .unfiltered import END_OF_PARTITION, EXTENSION_FLAG, IS_MARKER, read_marker, read_row

IS_EMPTY = 0x01
HAS_PARTITION_DELETION = 0x04
HAS_STATIC_ROW = 0x08
HAS_ROW_ESTIMATE = 0x10


def read_partition_update(buf: bytes, p: int, layout_of: Callable[[bytes], TableLayout], signed_ldt: bool,
                          segment_id: int, entry_offset: int, update_index: int,
                          out: list[Change]) -> int:
    """Append the update's changes to `out`; return the position after the update."""
    layout = layout_of(buf[p:p + 16])
    table = layout.table
    size, p = read_uvint(buf, p + 16)
    key = buf[p:p + size]
    p += size
    flags = buf[p]
    p += 1
    if flags & IS_EMPTY:
        return p
    header, p = read_serialization_header(buf, p, layout, flags & HAS_STATIC_ROW != 0, signed_ldt)
    partition_key = layout.decode_partition_key(key)
    clustering_columns = layout.clustering
    first = len(out)
    index = 0
    if flags & HAS_PARTITION_DELETION:
        deletion, p = header.read_deletion(buf, p)
        out.append(Change(Position(segment_id, entry_offset, update_index, index), table,
                          Op.PARTITION_DELETE, partition_key, deletion=deletion))
        index += 1
    if flags & HAS_STATIC_ROW:
        row_flags, ext_flags = buf[p], buf[p + 1]
        if not row_flags & EXTENSION_FLAG or not ext_flags & 1:
            raise ValueError("static row without the static flag")
        change, p = read_row(buf, p + 2, row_flags, ext_flags, header, clustering_columns,
                             Position(segment_id, entry_offset, update_index, index), table, partition_key)
        out.append(change)
        index += 1
    if flags & HAS_ROW_ESTIMATE:
        _, p = read_uvint(buf, p)
    opened = None  # the marker that opened the current range deletion
    while True:
        row_flags = buf[p]
        p += 1
        if row_flags & END_OF_PARTITION:
            break
        position = Position(segment_id, entry_offset, update_index, index)
        index += 1
        if row_flags & IS_MARKER:
            marker, p = read_marker(buf, p, header, clustering_columns)
            if marker.closes is not None:
                out.append(Change(position, table, Op.RANGE_DELETE, partition_key,
                                  deletion=marker.closing_deletion,
                                  range_start=opened.opening_bound() if opened else None,
                                  range_end=marker.closing_bound()))
            opened = marker if marker.opens is not None else None
            continue
        ext_flags = 0
        if row_flags & EXTENSION_FLAG:
            ext_flags = buf[p]
            p += 1
        change, p = read_row(buf, p, row_flags, ext_flags, header, clustering_columns, position, table,
                             partition_key)
        out.append(change)
    raw_key = bytes(key)
    for change in out[first:]:
        change.partition_key_bytes = raw_key
    return p
