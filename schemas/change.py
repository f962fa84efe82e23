"""Decoded changes: what the reader yields, one per row, deletion or range deletion."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from schemas.tables.model import Table


class Position(NamedTuple):
    """Where a change sits; ordered like the segment's content.

    `entry_offset` is the logical offset of the log entry; `update_index` the index of
    the partition update in the entry's mutation; `row_index` the index of the item in
    the update, counting the partition deletion, the static row and every row or range
    tombstone marker in that order (a range deletion is reported at its closing marker).
    """

    segment_id: int
    entry_offset: int
    update_index: int
    row_index: int

    @classmethod
    def after_section(cls, segment_id: int, end: int) -> Position:
        """After every change of the sections ending at or before `end`, before any later one
        (`end` is a sync-marker slot, where no entry starts)."""
        return cls(segment_id, end, -1, -1)

    @classmethod
    def whole_entry(cls, segment_id: int, offset: int) -> Position:
        """After every change of the entry at `offset`, before any later entry."""
        return cls(segment_id, offset, _END, _END)

    @classmethod
    def end_of(cls, segment_id: int) -> Position:
        """After every change of the segment: it was read to its end."""
        return cls(segment_id, _END, -1, -1)

    @property
    def at_end(self) -> bool:
        return self.entry_offset == _END

    def __str__(self) -> str:  # for log lines; repr() keeps the fields
        if self.at_end:
            return f"the end of segment {self.segment_id}"
        within = (" (the whole entry)" if self.update_index == _END else
                  f", update {self.update_index}, row {self.row_index}" if self.update_index >= 0 else "")
        return f"segment {self.segment_id} offset {self.entry_offset}{within}"


_END = 1 << 62  # past any offset a segment can have


class Op(enum.StrEnum):
    INSERT = "insert"  # the row has primary-key liveness (an INSERT)
    UPDATE = "update"  # cells only
    ROW_DELETE = "row_delete"
    PARTITION_DELETE = "partition_delete"
    RANGE_DELETE = "range_delete"


@dataclass(slots=True)
class DeletionTime:
    marked_for_delete_at: int  # write timestamp of the deletion, µs
    local_deletion_time: int  # seconds since the epoch when it was deleted


@dataclass(slots=True)
class Liveness:
    """Primary-key liveness of a row (written by INSERT)."""

    timestamp: int
    ttl: int = 0
    expires_at: int | None = None  # local expiration time in seconds when ttl > 0


@dataclass(slots=True)
class Cell:
    """One cell. For elements of multi-cell columns `path` is the element key."""

    value: Any
    timestamp: int
    ttl: int = 0
    local_deletion_time: int | None = None  # expiry time (ttl > 0) or deletion time (tombstone)
    tombstone: bool = False
    path: Any = None


@dataclass(slots=True)
class ComplexColumn:
    """Cells of a non-frozen collection or UDT in one row."""

    deletion: DeletionTime | None  # the whole column was deleted/overwritten before these cells
    cells: list[Cell]


@dataclass(slots=True)
class Bound:
    """One end of a range deletion: a clustering prefix and whether it is included."""

    clustering: tuple
    inclusive: bool


@dataclass(slots=True)
class Change:
    position: Position
    table: Table
    op: Op
    partition_key: tuple
    clustering: tuple = ()
    cells: dict[str, Cell | ComplexColumn] = field(default_factory=dict)
    liveness: Liveness | None = None
    deletion: DeletionTime | None = None  # row, partition or range deletion
    shadowable: bool = False  # the row deletion is shadowable (legacy views)
    static: bool = False
    range_start: Bound | None = None
    range_end: Bound | None = None
    # The serialized partition key, as Cassandra hashes it into the token.
    partition_key_bytes: bytes = b""


@dataclass(frozen=True, slots=True)
class Undecodable:
    """An entry the schema cannot decode however often it is refreshed (its table dropped before the
    connector could learn it): kept whole, with why, so it is delivered as a dead letter and the rest
    of its segment is read on."""

    position: Position  # `Position.whole_entry` of the entry
    mutation: bytes  # the entry's serialized mutation, as Cassandra wrote it
    error: Exception  # the UnknownTable or SchemaMismatch that gave up on it


def write_time(change: Change) -> int:
    """The write timestamp (µs) of a change: the newest of its deletion, row liveness and cells."""
    times = [cell.timestamp for cell in change.cells.values() if isinstance(cell, Cell)]
    for column in change.cells.values():
        if isinstance(column, ComplexColumn):
            times += [c.timestamp for c in column.cells]
            if column.deletion is not None:
                times.append(column.deletion.marked_for_delete_at)
    if change.deletion is not None:
        times.append(change.deletion.marked_for_delete_at)
    if change.liveness is not None:
        times.append(change.liveness.timestamp)
    return max(times, default=0)
