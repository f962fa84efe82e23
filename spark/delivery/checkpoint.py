"""What Spark's checkpoint says of a micro-batch: the source offsets it covers, and when it was planned.

Before a micro-batch runs, Spark writes `<checkpoint>/offsets/<batch id>`: a version line, the batch's
metadata (its watermark, its time, some conf), then one line per source with the offset the batch
reads up to. A batch starts where the one before it ended; the first starts where the source says it
started (the Kafka source keeps that in `sources/0/0`). A batch cut short is run again with the same
file, so the same id always covers the same offsets in one checkpoint — and a batch id alone says
nothing across two checkpoints: each numbers its batches from 0. The replay also keeps the metadata's
time (`batchTimestampMs`): what a sink computes from it comes out the same.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from os import PathLike

from spark.location import Location

# The Kafka source's first offsets (a version line, then the offsets as JSON).
_FIRST = "sources/0/0"


def _offsets_file(checkpoint: Location | PathLike, batch_id: int) -> tuple[Location, list[str]] | None:
    path = Location.of(checkpoint) / "offsets" / str(batch_id)
    if not path.exists():
        return None
    lines = path.read_text().splitlines()
    if len(lines) < 3:
        raise ValueError(f"{path}: no source offset after the version and metadata lines")
    return path, lines


def source_offsets(checkpoint: Location | PathLike, batch_id: int) -> list[str] | None:
    """The source offset lines of `batch_id` (one per source, as JSON text); None before it is planned."""
    found = _offsets_file(checkpoint, batch_id)
    return None if found is None else found[1][2:]




def newest_batch(checkpoint: Location | PathLike, log: str = "offsets") -> int | None:
    """The newest batch id planned in `checkpoint` (`log="commits"`: recorded as done); None before any."""
    names = (Location.of(checkpoint) / log).names()  # [] while the folder does not exist
    return max((int(name) for name in names if name.isdigit()), default=None)


@dataclass(frozen=True)
class PlannedBatch:
    """A micro-batch as its checkpoint planned it."""

    # A digest of the offsets it covers, from where it starts to where it ends: equal for a replay of the
    # batch, different for another batch given the same id by another checkpoint.
    offsets: str
    planned_ms: int  # when Spark planned it (ms since the epoch): the same on every replay of it


def planned_batch(checkpoint: Location | PathLike, batch_id: int) -> PlannedBatch:
    """`batch_id` as `checkpoint` planned it; its offsets file is read once."""
    found = _offsets_file(checkpoint, batch_id)
    if found is None:
        raise ValueError(f"{checkpoint}: batch {batch_id} has no offsets; it was not planned in this checkpoint")
    path, lines = found
    if batch_id > 0:
        starts = source_offsets(checkpoint, batch_id - 1) or []
    else:
        first = Location.of(checkpoint) / _FIRST
        starts = first.read_text().splitlines()[1:] if first.exists() else []
    text = "\n".join(["from", *starts, "to", *lines[2:]])
    try:
        planned = int(json.loads(lines[1])["batchTimestampMs"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: the metadata line holds no batchTimestampMs ({exc})") from None
    return PlannedBatch(hashlib.sha256(text.encode()).hexdigest()[:32], planned)
