"""A segment's life in one run of the connector: one object, owned by the loop thread.

    indexed ──▶ reading ──▶ finished ──────▶ released      (released once the commit passes its end)
       ▲  │        │  │         │
       │  │        │  └──▶ quarantined ──▶ released         (moved aside; "released" only commits it)
       │  │        ▼
       │  └────▶ lost ──▶ returned ◀─▶ reading …            (back in cdc_raw: read to its chain's end)
       │           └───▶ acknowledged ──▶ indexed          (an operator accepted the loss; back after all)
       └── reading, finished: back to indexed when reading stops or rewinds before the commit
    indexed ──▶ skipped                                    (start_from: latest, older than the start)

A segment enters when a listing shows its `_cdc.idx` (or when reading opens the newest segment, not
indexed yet: it leaves again unread if a later one is indexed, since it then never held CDC data), or
as lost when a record of an earlier run says so. Stages never move otherwise: `move` refuses any step
the diagram does not draw (`IllegalStep`), so a bookkeeping mistake is loud, not a skipped segment.

Another thread (the monitor) sees segments too, while the loop may be busy for a long time inside one:
it hands the indexed segments it saw over (`sighted`), and the loop takes them in at its next look
(`observe`). Released and skipped segments leave the table of live ones for a set of ids, so the loop's
looks cost what is in cdc_raw, not what the run has read.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from enum import Enum

from connector.source import Listing, SegmentFile


class Stage(Enum):
    INDEXED = "indexed"
    READING = "reading"
    FINISHED = "finished"
    QUARANTINED = "quarantined"
    RELEASED = "released"
    SKIPPED = "skipped"
    LOST = "lost"
    RETURNED = "returned"
    ACKNOWLEDGED = "acknowledged"


S = Stage
STEPS: dict[Stage | None, frozenset[Stage]] = {
    None: frozenset({S.INDEXED, S.READING, S.LOST, S.RELEASED, S.SKIPPED}),  # RELEASED: committed by a crashed run
    S.INDEXED: frozenset({S.READING, S.LOST, S.SKIPPED, S.RELEASED}),
    S.READING: frozenset({S.FINISHED, S.QUARANTINED, S.LOST, S.INDEXED, S.RETURNED}),
    S.FINISHED: frozenset({S.RELEASED, S.INDEXED}),
    S.QUARANTINED: frozenset({S.RELEASED}),
    S.LOST: frozenset({S.RETURNED, S.ACKNOWLEDGED}),
    S.RETURNED: frozenset({S.READING, S.LOST}),
    S.ACKNOWLEDGED: frozenset({S.INDEXED, S.READING}),  # back after all: read, late rather than never
    S.RELEASED: frozenset(),
    S.SKIPPED: frozenset(),
}
# Out of reading's way for good: a listing never makes them known again.
TERMINAL = frozenset({S.RELEASED, S.SKIPPED})
# Indexed (or back) and not read to the end: one that leaves cdc_raw now is lost.
OPEN = frozenset({S.INDEXED, S.READING, S.RETURNED})


class IllegalStep(RuntimeError):
    """A segment asked to move where its life does not go: a defect of the loop, never of the input."""


@dataclass(frozen=True, slots=True)
class SegmentState:
    segment: SegmentFile
    stage: Stage
    indexed: bool  # its `_cdc.idx` was seen
    returned: bool  # came back after it was lost: read to the end of its sync-marker chain


class SegmentLife:
    def __init__(self) -> None:
        self._states: dict[int, SegmentState] = {}  # live segments
        self._ended: dict[int, Stage] = {}  # segment id → its terminal stage
        self._sighted: dict[int, SegmentFile] = {}  # indexed segments the monitor saw since the last look
        self._lock = threading.Lock()  # guards `_sighted` only: everything else is the loop thread's

    def stage(self, segment_id: int) -> Stage | None:
        state = self._states.get(segment_id)
        return state.stage if state else self._ended.get(segment_id)

    def indexed(self, segment_id: int) -> bool:
        """Whether the segment's `_cdc.idx` was seen (it holds CDC data, and Cassandra keeps it)."""
        state = self._states.get(segment_id)
        return state is not None and (state.indexed or state.returned)

    def in_stage(self, *stages: Stage) -> list[SegmentState]:
        """The segments in these stages, oldest first."""
        return sorted((s for s in self._states.values() if s.stage in stages), key=lambda s: s.segment.segment_id)

    def returned(self) -> frozenset[int]:
        """Segments back after they were lost, still to be read to the end of their chain."""
        return frozenset(i for i, s in self._states.items() if s.returned and s.stage in (S.RETURNED, S.READING))

    def move(self, segment: SegmentFile, to: Stage, *, indexed: bool = False) -> Stage | None:
        """Move `segment` to `to` (`indexed`: its index is seen now); returns the stage it left (None: it
        was not known)."""
        known = self._states.get(segment.segment_id)
        was = known.stage if known else self._ended.get(segment.segment_id)
        if to not in STEPS[was]:
            raise IllegalStep(f"{segment.name}: {was.value if was else 'unknown'} → {to.value}")
        if to in TERMINAL:
            self._states.pop(segment.segment_id, None)
            self._ended[segment.segment_id] = to
            return was
        returned = to is S.RETURNED or (to is S.READING and known is not None and known.returned)
        indexed = indexed or to is S.INDEXED or (known is not None and known.indexed)
        self._states[segment.segment_id] = SegmentState(segment, to, indexed, returned)
        return was

    def stop_reading(self, segment: SegmentFile) -> None:
        """Reading closed the segment before its end (another comes first now, or a rewind): it waits in
        the stage it was read from; one never indexed leaves (it held no CDC data: Cassandra removes it)."""
        known = self._states[segment.segment_id]
        if known.stage is not S.READING:
            raise IllegalStep(f"{segment.name}: {known.stage.value}, not reading")
        if known.returned:
            self.move(segment, S.RETURNED)
        elif known.indexed:
            self.move(segment, S.INDEXED)
        else:
            del self._states[segment.segment_id]

    def sighted(self, listing: Listing) -> None:
        """A listing another thread took: its indexed segments are taken in at the loop's next `observe`."""
        indexed = {s.segment_id: s for s in listing.segments if s.segment_id in listing.indexed}
        with self._lock:
            self._sighted.update(indexed)

    def observe(self, listing: Listing) -> list[SegmentState]:
        """Take in the segments sighted since the last look, then `listing` (the loop's own, newest):
        segments with an index become known (indexed), those known and not ended that are absent from
        `listing` are returned — lost, unless the caller knows they are being released."""
        with self._lock:
            sighted, self._sighted = self._sighted, {}
        for segment in (*sighted.values(), *(s for s in listing.segments if s.segment_id in listing.indexed)):
            self._indexed(segment)
        present = {s.segment_id for s in listing.segments}
        return [s for i, s in sorted(self._states.items())
                if s.stage in OPEN and (s.indexed or s.returned) and i not in present]

    def _indexed(self, segment: SegmentFile) -> None:
        if segment.segment_id in self._ended:
            return  # a listing taken before a release must not make the segment known again
        known = self._states.get(segment.segment_id)
        if known is None:
            self.move(segment, S.INDEXED)
        elif known.stage is S.READING and not known.indexed:
            self._states[segment.segment_id] = SegmentState(known.segment, S.READING, True, known.returned)
        elif known.stage is S.ACKNOWLEDGED:
            self.move(segment, S.INDEXED)
