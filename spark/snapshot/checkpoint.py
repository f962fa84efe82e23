"""The snapshot's positions as Spark's checkpoint records them.

A micro-batch's offsets are written to `<checkpoint>/offsets/<batch id>` before the batch runs
(a version line, the batch's metadata, then one line per source: ours is the snapshot's offset as
JSON); a batch that ends without its commit is run again with the same offsets. So the newest
offsets file is where the next step starts from, and a batch's own file says which ranges it
brought to which token.
"""
from __future__ import annotations

import json
from pathlib import Path


def planned_offset(checkpoint: Path, batch_id: int | None = None) -> dict | None:
    """The snapshot offset planned for `batch_id` (the newest batch when None); None before any."""
    folder = checkpoint / "offsets"
    if batch_id is None:
        ids = [int(p.name) for p in folder.glob("*") if p.name.isdigit()] if folder.is_dir() else []
        if not ids:
            return None
        batch_id = max(ids)
    path = folder / str(batch_id)
    if not path.exists():
        return None
    lines = path.read_text().splitlines()
    if len(lines) < 3:
        raise ValueError(f"{path}: no source offset after the version and metadata lines")
    return json.loads(lines[2])
