"""Segments that left cdc_raw before they were read to their end, kept in the state directory.

Cassandra never deletes a segment that holds CDC data: only a consumer or an operator does. One that
vanishes unread or half read is a loss of acknowledged writes, so it is recorded (`lost/<stem>.json`,
`<stem>` being the segment's name without `.log`, with the position reached) and reading does not pass
it until the segment comes back (it is then read on from where reading stopped in this run, or from the
committed position after a restart: `Checkpoint.start_after`) or an operator
acknowledges the loss (`python -m connector ack-lost`, which writes `lost/<stem>.ack`). Records
survive restarts; acknowledged ones stay as the audit trail.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from connector.commitlog import Position
from connector.commitlog.descriptor import segment_id_from_name
from schemas.runtime.durable import write_atomically


class UnknownLostSegment(ValueError):
    """`ack-lost` named a segment that is not recorded as lost."""


@dataclass(frozen=True)
class LostSegment:
    name: str
    segment_id: int
    position: Position | None  # where reading stopped; None: not read at all

    def __str__(self) -> str:
        reached = f"read up to {self.position}" if self.position else "not read at all"
        return f"segment {self.name} left cdc_raw before it was read to its end ({reached})"


class LostSegments:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def record(self, name: str, segment_id: int, position: Position | None) -> LostSegment:
        lost = LostSegment(name, segment_id, position)
        write_atomically(self.directory / f"{Path(name).stem}.json", json.dumps({
            "segment": name, "segment_id": segment_id,
            "position": position._asdict() if position else None,
            "detected_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }, indent=2).encode() + b"\n")
        return lost

    def pending(self) -> list[LostSegment]:
        """Lost segments not acknowledged, oldest first."""
        found = []
        for path in self.directory.glob("*.json"):
            if path.with_suffix(".ack").exists():
                continue
            data = json.loads(path.read_text())
            position = data["position"]
            found.append(LostSegment(data["segment"], data["segment_id"], Position(**position) if position else None))
        return sorted(found, key=lambda lost: lost.segment_id)

    def recorded(self) -> set[int]:
        """Ids of every segment recorded as lost, acknowledged or not."""
        return {json.loads(path.read_text())["segment_id"] for path in self.directory.glob("*.json")}

    def returned(self, lost: LostSegment) -> None:
        """The segment is back in cdc_raw: the record goes, the segment is read."""
        (self.directory / f"{Path(lost.name).stem}.json").unlink(missing_ok=True)

    def acknowledge(self, segment: str) -> LostSegment:
        """An operator accepts the loss: reading goes on past the segment."""
        stem = Path(segment).name.removesuffix(".log")
        record = self.directory / f"{stem}.json"
        if segment_id_from_name(Path(f"{stem}.log")) is None or not record.exists():
            known = ", ".join(lost.name for lost in self.pending()) or "none"
            raise UnknownLostSegment(f"{segment} is not recorded as lost (lost and not acknowledged: {known})")
        write_atomically(record.with_suffix(".ack"), json.dumps({
            "acknowledged_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}).encode() + b"\n")
        data = json.loads(record.read_text())
        position = data["position"]
        return LostSegment(data["segment"], data["segment_id"], Position(**position) if position else None)
