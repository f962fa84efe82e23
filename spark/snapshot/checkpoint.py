"""The snapshot's positions as Spark's checkpoint records them (`spark.delivery.checkpoint`): its one source
line is the snapshot's offset as JSON. So the newest offsets file is where the next step starts from,
and a batch's own file says which ranges it brought to which token.
"""
from __future__ import annotations

import json
from os import PathLike

from spark.delivery.checkpoint import newest_batch, source_offsets
from spark.location import Location


def planned_offset(checkpoint: Location | PathLike, batch_id: int | None = None) -> dict | None:
    """The snapshot offset planned for `batch_id` (the newest batch when None); None before any."""
    if batch_id is None:
        batch_id = newest_batch(checkpoint)
        if batch_id is None:
            return None
    lines = source_offsets(checkpoint, batch_id)
    return None if lines is None else json.loads(lines[0])
