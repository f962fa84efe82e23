"""What reading a segment yields, whichever reader reads it: a `Batch` of framed events in log order.

The native core makes a batch's columns in one pass over the segment's bytes (`_native.Events`); the
reference reader's changes are framed one by one and gathered into the same columns (`Gathering`). The
loop sends a batch the same way either way, so the loop's tests hold both readers to one behaviour.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from schemas.change import Position


@dataclass(frozen=True, slots=True)
class Batch:
    """Events of one segment in log order, a column per field, and what reading them took."""

    segment_id: int
    offsets: list[int]  # the offset of the entry each event comes from
    updates: list[int]  # the partition update in the entry's mutation (`Position.update_index`)
    rows: list[int]  # the row in the update (`Position.row_index`)
    tables: list[int]  # each event's place in `topics`
    write_times: list[int]  # µs; 0 for the dead letter of an entry no schema decodes
    keys: list[bytes]
    values: list[bytes]
    topics: Sequence[str]  # the topic of each table the events name
    read: int = 0  # changes read for the batch: its events' and the ones left out
    left_out: int = 0  # changes of tables without CDC at their write time: no event
    through: Position | None = None  # everything up to here is in the events or left out

    def __len__(self) -> int:
        return len(self.offsets)

    def position(self, i: int) -> Position:
        return Position(self.segment_id, self.offsets[i], self.updates[i], self.rows[i])

    def keeping(self, keep: list[int]) -> Batch:
        """The batch with only the events at `keep` (ascending); the others' changes are left out."""
        if len(keep) == len(self):
            return self
        return replace(self, **{name: [column[i] for i in keep] for name, column in self._columns()},
                       left_out=self.left_out + len(self) - len(keep))

    def after(self, position: Position) -> Batch:
        """The batch without its events up to `position` (delivered before: reading resumed inside an
        entry); they are not counted as read again."""
        first = 0
        while first < len(self) and self.position(first) <= position:
            first += 1
        if not first:
            return self
        return replace(self, **{name: column[first:] for name, column in self._columns()}, read=self.read - first)

    def _columns(self):
        return (("offsets", self.offsets), ("updates", self.updates), ("rows", self.rows), ("tables", self.tables),
                ("write_times", self.write_times), ("keys", self.keys), ("values", self.values))


class Gathering:
    """Events framed one at a time (the reference reader's), gathered into a `Batch`."""

    def __init__(self, segment_id: int) -> None:
        self.segment_id = segment_id
        self._start()

    def __len__(self) -> int:
        return len(self._columns[0])

    def event(self, position: Position, topic: str, key: bytes, value: bytes, write_time: int,
              change: bool = True) -> None:
        """An event at `position`; `change`: False for the dead letter of an entry, which is no change."""
        offsets, updates, rows, tables, write_times, keys, values = self._columns
        offsets.append(position.entry_offset)
        updates.append(position.update_index)
        rows.append(position.row_index)
        tables.append(self._topics.setdefault(topic, len(self._topics)))
        write_times.append(write_time)
        keys.append(key)
        values.append(value)
        self._read += change
        self._through = position

    def left_out(self, position: Position) -> None:
        """A change read that is not CDC data."""
        self._read += 1
        self._left_out += 1
        self._through = position

    def take(self) -> Batch | None:
        """What was gathered since the last take; None when nothing was read."""
        if self._through is None:
            return None
        batch = Batch(self.segment_id, *self._columns, topics=list(self._topics), read=self._read,
                      left_out=self._left_out, through=self._through)
        self._start()
        return batch

    def _start(self) -> None:
        self._columns: tuple[list, ...] = ([], [], [], [], [], [], [])
        self._topics: dict[str, int] = {}  # in the order of their places
        self._read = self._left_out = 0
        self._through: Position | None = None
