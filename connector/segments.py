"""What happens to a segment file once read: released (deleted or archived) or quarantined."""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from connector.source import SegmentFile


def release_segment(segment: SegmentFile, archive_dir: Path | None = None) -> None:
    """Delete the segment's link in cdc_raw and its index (Cassandra frees the space), or archive them."""
    for path in (segment.path, segment.index_path):
        if archive_dir is not None:
            archive_dir.mkdir(parents=True, exist_ok=True)
            if path.exists():
                shutil.move(path, archive_dir / path.name)
        else:
            path.unlink(missing_ok=True)


def quarantine_segment(segment: SegmentFile, quarantine_dir: Path, error: Exception) -> Path:
    """Move a segment that cannot be read past `error` aside, with a reason file; never delete it."""
    quarantine_dir.mkdir(parents=True, exist_ok=True)
    for path in (segment.path, segment.index_path):
        if path.exists():
            shutil.move(path, quarantine_dir / path.name)
    reason = quarantine_dir / f"{segment.path.stem}.reason.json"
    reason.write_text(json.dumps({
        "segment": segment.name,
        "position": getattr(error, "position", None),
        "error": type(error).__name__,
        "message": str(error),
        "quarantined_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }, indent=2) + "\n")
    return reason


def cdc_raw_usage(cdc_raw: Path) -> int:
    """Bytes of segments in cdc_raw, as Cassandra counts them against cdc_total_space."""
    total = 0
    for path in cdc_raw.glob("CommitLog-*.log"):
        try:
            total += path.stat().st_size
        except FileNotFoundError:  # released or discarded meanwhile
            pass
    return total
