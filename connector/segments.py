"""What happens to a segment file once read: released (deleted or archived) or quarantined."""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from connector.source import Listing, SegmentFile


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


def leftovers(listing: Listing, min_age: float, keep: set[int] = frozenset(),
              now: float | None = None) -> list[tuple[str, Path]]:
    """What earlier runs left in cdc_raw and nothing will ever read or remove, as (kind, path): indexes
    whose segment is gone and links without an index, both older than the oldest segment holding CDC
    data (or than the newest segment when none does), unchanged for `min_age` seconds (Cassandra removes
    a link without CDC data itself once the segment's data is flushed), and not in `keep`."""
    now = time.time() if now is None else now
    live = listing.oldest_indexed()
    if live is None and listing.segments:
        live = listing.segments[-1].segment_id
    if live is None:
        return []
    candidates = [("orphan_index", segment_id, path) for segment_id, path in listing.orphans.items()]
    candidates += [("unindexed_link", s.segment_id, s.path) for s in listing.segments
                   if s.segment_id not in listing.indexed]
    found = []
    for kind, segment_id, path in candidates:
        if segment_id >= live or segment_id in keep:
            continue
        try:
            if now - path.stat().st_mtime >= min_age:
                found.append((kind, path))
        except FileNotFoundError:
            pass
    return found
