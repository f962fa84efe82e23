"""Rows and range tombstone markers of a partition update (UnfilteredSerializer).

Commit log rows carry no row size fields (those exist only in sstables):

    uint8 flags [uint8 extFlags] | clustering (not for the static row)
    | [liveness: uvint timestamp delta [, uvint ttl delta, uvint expiration delta]]
    | [row deletion] | [column subset unless HAS_ALL_COLUMNS] | cells

    marker: uint8 flags=IS_MARKER | uint8 bound kind | uint16 size | clustering prefix
            | deletion (a boundary has two: the closing one, then the opening one)
"""
from __future__ import annotations

import struct

from schemas.cql.vint import read_uvint
from schemas.tables.model import Table

from .cell import read_cells
from schemas.change import Bound, Change, DeletionTime, Liveness, Op, Position
from .header import SerializationHeader
from .layout import ColumnLayout

END_OF_PARTITION = 0x01
IS_MARKER = 0x02
HAS_TIMESTAMP = 0x04
HAS_TTL = 0x08
HAS_DELETION = 0x10
HAS_ALL_COLUMNS = 0x20
HAS_COMPLEX_DELETION = 0x40
EXTENSION_FLAG = 0x80
IS_STATIC = 0x01  # extended flags
HAS_SHADOWABLE_DELETION = 0x02  # extended flags

_UINT16 = struct.Struct(">H")


class ParsedMarker:
    """A range tombstone bound (one deletion) or boundary (closes one range, opens the next)."""

    __slots__ = ("clustering", "closes", "closing_deletion", "opens", "opening_deletion")

    def __init__(self, clustering: tuple, closes: bool | None, closing_deletion: DeletionTime | None,
                 opens: bool | None, opening_deletion: DeletionTime | None) -> None:
        self.clustering = clustering
        self.closes = closes  # None: does not close a range; else whether the bound is inclusive
        self.closing_deletion = closing_deletion
        self.opens = opens  # None: does not open a range; else whether the bound is inclusive
        self.opening_deletion = opening_deletion

    def closing_bound(self) -> Bound:
        return Bound(self.clustering, bool(self.closes))

    def opening_bound(self) -> Bound:
        return Bound(self.clustering, bool(self.opens))


# ClusteringPrefix.Kind ordinal -> (inclusive if it closes a range, inclusive if it opens one)
_BOUND_KINDS = {
    0: (False, None),  # EXCL_END_BOUND
    1: (None, True),  # INCL_START_BOUND
    2: (False, True),  # EXCL_END_INCL_START_BOUNDARY
    5: (True, False),  # INCL_END_EXCL_START_BOUNDARY
    6: (True, None),  # INCL_END_BOUND
    7: (None, False),  # EXCL_START_BOUND
}


def read_clustering(buf: bytes, p: int, columns: list[ColumnLayout]) -> tuple[tuple, int]:
    """Clustering values: per batch of 32, a uvint of 2 bits per value (null, empty)."""
    values = []
    header = 0
    for i, column in enumerate(columns):
        shift = (i & 31) * 2
        if shift == 0:
            header = buf[p]
            if header < 0x80:
                p += 1
            else:
                header, p = read_uvint(buf, p)
        state = header >> shift & 3
        if state:
            values.append(None if state & 2 else column.empty)
            continue
        size = column.fixed_length
        if size < 0:
            size = buf[p]
            if size < 0x80:
                p += 1
            else:
                size, p = read_uvint(buf, p)
        values.append(column.decode(buf[p:p + size]))
        p += size
    return tuple(values), p


def _read_subset(buf: bytes, p: int, header: SerializationHeader, static: bool) -> tuple[list[ColumnLayout], int]:
    superset = header.statics if static else header.regulars
    encoded, p = read_uvint(buf, p)
    if encoded == 0:
        return superset, p
    if len(superset) < 64:
        return header.subset(static, encoded), p
    # Large headers: the count of missing columns, then indexes of whichever list is shorter.
    missing = encoded
    if missing > len(superset):
        raise ValueError("column subset misses more columns than the header has")
    present_count = len(superset) - missing
    indexes = []
    for _ in range(present_count if present_count < len(superset) // 2 else missing):
        index, p = read_uvint(buf, p)
        indexes.append(index)
    if present_count < len(superset) // 2:
        return [superset[i] for i in indexes], p
    absent = set(indexes)
    return [c for i, c in enumerate(superset) if i not in absent], p


def read_row(buf: bytes, p: int, flags: int, ext_flags: int, header: SerializationHeader,
             clustering_columns: list[ColumnLayout], position: Position, table: Table,
             partition_key: tuple) -> tuple[Change, int]:
    static = ext_flags & IS_STATIC != 0
    clustering = ()
    if not static:
        clustering, p = read_clustering(buf, p, clustering_columns)
    liveness = None
    if flags & HAS_TIMESTAMP:
        u, p = read_uvint(buf, p)
        timestamp = header.timestamp(u)
        ttl, expires_at = 0, None
        if flags & HAS_TTL:  # TTL first, then the expiration time (cells use the other order)
            u, p = read_uvint(buf, p)
            ttl = header.ttl(u)
            u, p = read_uvint(buf, p)
            expires_at = header.ldt(u)
        liveness = Liveness(timestamp, ttl, expires_at)
    deletion = None
    if flags & HAS_DELETION:
        deletion, p = header.read_deletion(buf, p)
    if flags & HAS_ALL_COLUMNS:
        columns = header.statics if static else header.regulars
    else:
        columns, p = _read_subset(buf, p, header, static)
    cells, p = read_cells(buf, p, columns, header, liveness or _NO_LIVENESS, flags & HAS_COMPLEX_DELETION != 0)
    op = Op.ROW_DELETE if deletion else (Op.INSERT if liveness else Op.UPDATE)
    return Change(position, table, op, partition_key, clustering, cells, liveness, deletion,
                  ext_flags & HAS_SHADOWABLE_DELETION != 0, static), p


_NO_LIVENESS = Liveness(-(1 << 63))  # LivenessInfo.EMPTY, for cells of rows without a row marker


def read_marker(buf: bytes, p: int, header: SerializationHeader,
                clustering_columns: list[ColumnLayout]) -> tuple[ParsedMarker, int]:
    kind = buf[p]
    (size,) = _UINT16.unpack_from(buf, p + 1)
    p += 3
    if kind not in _BOUND_KINDS or size > len(clustering_columns):
        raise ValueError(f"invalid range tombstone marker (kind {kind}, {size} values)")
    clustering, p = read_clustering(buf, p, clustering_columns[:size])
    closes, opens = _BOUND_KINDS[kind]
    closing = opening = None
    if closes is not None:
        closing, p = header.read_deletion(buf, p)
    if opens is not None:
        opening, p = header.read_deletion(buf, p)
    return ParsedMarker(clustering, closes, closing, opens, opening), p
