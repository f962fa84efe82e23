"""Serialization header of a partition update (messaging form) and delta-encoded values.

    uvint minTimestamp - TIMESTAMP_EPOCH | uvint minLocalDeletionTime - DELETION_TIME_EPOCH
    | uvint minTTL | [static Columns] | regular Columns

Timestamps, TTLs and local deletion times of the update are written as deltas from
these minimums. Local deletion times are 32-bit: signed up to messaging 12, unsigned
(good until 2106) from messaging 13 (Cassandra 5.0 storage_compatibility_mode NONE).
"""
from __future__ import annotations

from schemas.cql.vint import read_uvint, to_int64

from schemas.change import DeletionTime
from .layout import ColumnLayout, TableLayout

TIMESTAMP_EPOCH = 1442880000000000  # µs, 2015-09-22
DELETION_TIME_EPOCH = 1442880000  # s
LIVE_MARKED_FOR_DELETE_AT = -(1 << 63)  # DeletionTime.LIVE: "no deletion"
_SIGN64 = 1 << 63


class UnknownColumn(LookupError):
    """A header names a column that the table (and its dropped columns) lacks."""


class SerializationHeader:
    __slots__ = ("min_timestamp", "min_ldt", "min_ttl", "signed_ldt", "statics", "regulars",
                 "_subsets")

    def __init__(self, min_timestamp: int, min_ldt: int, min_ttl: int, signed_ldt: bool,
                 statics: list[ColumnLayout], regulars: list[ColumnLayout]) -> None:
        self.min_timestamp = min_timestamp
        self.min_ldt = min_ldt  # the low 32 bits; ldt() adds deltas modulo 2^32
        self.min_ttl = min_ttl
        self.signed_ldt = signed_ldt
        self.statics = statics
        self.regulars = regulars
        self._subsets: dict[tuple[bool, int], list[ColumnLayout]] = {}

    def timestamp(self, delta: int) -> int:
        t = delta + self.min_timestamp
        return t if 0 <= t < _SIGN64 else to_int64(t)  # wrap like Java's long arithmetic

    def ldt(self, delta: int) -> int:
        v = (delta + self.min_ldt) & 0xFFFFFFFF
        return v - 0x100000000 if self.signed_ldt and v >= 0x80000000 else v

    def ttl(self, delta: int) -> int:
        v = (delta + self.min_ttl) & 0xFFFFFFFF
        return v - 0x100000000 if v >= 0x80000000 else v

    def read_deletion(self, buf: bytes, p: int) -> tuple[DeletionTime | None, int]:
        """Delta-encoded DeletionTime; None for the LIVE value (no deletion)."""
        u, p = read_uvint(buf, p)
        marked_for_delete_at = self.timestamp(u)
        u, p = read_uvint(buf, p)
        if marked_for_delete_at == LIVE_MARKED_FOR_DELETE_AT:
            return None, p
        return DeletionTime(marked_for_delete_at, self.ldt(u)), p

    def subset(self, static: bool, missing_bitmap: int) -> list[ColumnLayout]:
        """Columns of a row that lacks the header columns whose bits are set (< 64 columns)."""
        key = (static, missing_bitmap)
        columns = self._subsets.get(key)
        if columns is None:
            superset = self.statics if static else self.regulars
            if missing_bitmap >> len(superset):
                raise ValueError("column subset names columns outside the header")
            columns = [c for i, c in enumerate(superset) if not missing_bitmap >> i & 1]
            self._subsets[key] = columns
        return columns


def read_columns(buf: bytes, p: int, layout: TableLayout) -> tuple[list[ColumnLayout], int]:
    # Updates of a table mostly repeat a few column lists: reuse their resolution when the
    # bytes match (an encoded list is self-delimiting, so a matching prefix is the list).
    for encoded, columns in layout.column_lists:
        if buf.startswith(encoded, p):
            return columns, p + len(encoded)
    start = p
    count, p = read_uvint(buf, p)
    columns = []
    lookup = layout.columns
    for _ in range(count):
        size, p = read_uvint(buf, p)
        name = buf[p:p + size]
        p += size
        column = lookup.get(name)
        if column is None:
            raise UnknownColumn(f"column {name!r} is not in {layout.table.qualified_name}"
                                " nor among its dropped columns")
        columns.append(column)
    layout.remember_column_list(buf[start:p], columns)
    return columns, p


def read_serialization_header(buf: bytes, p: int, layout: TableLayout, has_static: bool,
                              signed_ldt: bool) -> tuple[SerializationHeader, int]:
    u, p = read_uvint(buf, p)
    min_timestamp = to_int64(u + TIMESTAMP_EPOCH)
    if buf[p] == 0 and buf[p + 1] == 0:  # the usual case: nothing deleted or expiring
        min_ldt, min_ttl = DELETION_TIME_EPOCH, 0
        p += 2
    else:
        u, p = read_uvint(buf, p)
        min_ldt = (u + DELETION_TIME_EPOCH) & 0xFFFFFFFF
        u, p = read_uvint(buf, p)
        min_ttl = u & 0xFFFFFFFF
    statics: list[ColumnLayout] = []
    if has_static:
        statics, p = read_columns(buf, p, layout)
    regulars, p = read_columns(buf, p, layout)
    return SerializationHeader(min_timestamp, min_ldt, min_ttl, signed_ldt, statics, regulars), p
