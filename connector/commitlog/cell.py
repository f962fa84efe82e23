"""Cells (Cell.Serializer), simple and complex.

    uint8 flags | [uvint timestamp delta] | [uvint local deletion time delta] | [uvint ttl delta]
    | [vint-length path, complex columns only] | [value: fixed size or vint-length]
"""
from __future__ import annotations

from schemas.cql.vint import read_uvint

from schemas.change import Cell, ComplexColumn, Liveness
from .header import SerializationHeader
from .layout import ColumnLayout

IS_DELETED = 0x01
IS_EXPIRING = 0x02
HAS_EMPTY_VALUE = 0x04
USE_ROW_TIMESTAMP = 0x08
USE_ROW_TTL = 0x10
_SIGN64 = 1 << 63


def read_cell(buf: bytes, p: int, column: ColumnLayout, header: SerializationHeader,
              row: Liveness) -> tuple[Cell, int]:
    flags = buf[p]
    p += 1
    if flags & USE_ROW_TIMESTAMP:
        timestamp = row.timestamp
    else:
        b = buf[p]
        if b < 0x80:
            u = b
            p += 1
        else:
            u, p = read_uvint(buf, p)
        timestamp = u + header.min_timestamp
        if not 0 <= timestamp < _SIGN64:
            timestamp = header.timestamp(u)
    ttl = 0
    ldt = None
    if flags & (IS_DELETED | IS_EXPIRING):
        if flags & USE_ROW_TTL:
            ttl, ldt = row.ttl, row.expires_at
        else:
            u, p = read_uvint(buf, p)
            ldt = header.ldt(u)
            if flags & IS_EXPIRING:
                u, p = read_uvint(buf, p)
                ttl = header.ttl(u)
    path = None
    if column.complex:
        size, p = read_uvint(buf, p)
        path = buf[p:p + size]
        p += size
    if flags & HAS_EMPTY_VALUE:
        raw = b""
    else:
        size = column.fixed_length
        if size < 0:
            b = buf[p]
            if b < 0x80:
                size = b
                p += 1
            else:
                size, p = read_uvint(buf, p)
        raw = buf[p:p + size]
        p += size
    tombstone = flags & IS_DELETED != 0
    if path is not None:
        if tombstone:
            return Cell(None, timestamp, ttl, ldt, True, column.type.decode_path(path)), p
        key, value = column.type.decode_cell(path, raw)
        return Cell(value, timestamp, ttl, ldt, False, key), p
    if tombstone:
        return Cell(None, timestamp, ttl, ldt, True), p
    return Cell(column.decode(raw) if raw else column.empty, timestamp, ttl, ldt), p


def read_cells(buf: bytes, p: int, columns: list[ColumnLayout], header: SerializationHeader,
               row: Liveness, has_complex_deletion: bool) -> tuple[dict, int]:
    """Cells of a row's present columns, in header order; complex columns as ComplexColumn."""
    cells: dict = {}
    for column in columns:
        if not column.complex:
            cells[column.name], p = read_cell(buf, p, column, header, row)
            continue
        deletion = None
        if has_complex_deletion:
            deletion, p = header.read_deletion(buf, p)
        count, p = read_uvint(buf, p)
        elements = []
        for _ in range(count):
            cell, p = read_cell(buf, p, column, header, row)
            elements.append(cell)
        cells[column.name] = ComplexColumn(deletion, elements)
    return cells, p
