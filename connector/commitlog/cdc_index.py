"""The `<segment>_cdc.idx` file Cassandra keeps beside each segment it links into cdc_raw.

It holds the segment's durable offset (up to which a reader may trust the bytes) and, once the
segment is closed, a second line `COMPLETED`. Cassandra rewrites it on every commit-log sync.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

SUFFIX = "_cdc.idx"


@dataclass(frozen=True, slots=True)
class CdcIndex:
    offset: int
    completed: bool


def read_cdc_index(path: str | os.PathLike) -> CdcIndex | None:
    """The index, or None while it is missing or caught mid-rewrite (empty or not yet a number)."""
    try:
        words = Path(path).read_text().split()
    except FileNotFoundError:
        return None
    if not words or not words[0].isdigit():
        return None
    return CdcIndex(int(words[0]), "COMPLETED" in words[1:])


def indexed_segments(cdc_raw: str | os.PathLike) -> dict[Path, CdcIndex]:
    """Segment path → its index, for every segment of `cdc_raw` whose index reads."""
    out = {}
    for idx in Path(cdc_raw).glob(f"CommitLog-*{SUFFIX}"):
        index = read_cdc_index(idx)
        if index is not None:
            out[idx.with_name(idx.name.removesuffix(SUFFIX) + ".log")] = index
    return out
