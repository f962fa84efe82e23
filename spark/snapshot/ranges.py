"""The snapshot's progress: the ring cut into token ranges, and how far each has been read.

A range `(start, end]` holds a position: the last token delivered. `position == start`: nothing
read yet; `position == end`: done; in between, the rows of tokens `(start, position]` are in the
sink. The ranges follow the ranges of the current CDC generation, the wrap-around one cut in two
at the ends of the token space, so the snapshot's progress is kept per range as the log's is.

A new generation may refine the ranges while a snapshot runs. The new ranges are then cut at the
old ends too (the common refinement), so each lies inside one old range and inherits its
position: nothing delivered is read again, nothing undelivered is skipped.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from spark.streams.tokens import MAX_TOKEN, MIN_TOKEN


@dataclass(frozen=True)
class TokenRange:
    start: int  # exclusive
    end: int  # inclusive
    position: int  # the last token delivered

    def __post_init__(self) -> None:
        if not self.start <= self.position <= self.end or self.start >= self.end:
            raise ValueError(f"range ({self.start}, {self.end}] cannot be at {self.position}")

    @property
    def done(self) -> bool:
        return self.position == self.end

    @property
    def started(self) -> bool:
        return self.position > self.start

    def inherit(self, start: int, end: int) -> TokenRange:
        """The part `(start, end]` of this range, at the same point: what this range delivered of it."""
        return TokenRange(start, end, min(max(self.position, start), end))


def ring_ranges(ends: Iterable[int]) -> list[TokenRange]:
    """The token space (MIN_TOKEN, MAX_TOKEN] cut at `ends` (a generation's range ends), unread."""
    cuts = sorted({e for e in ends if MIN_TOKEN < e < MAX_TOKEN} | {MAX_TOKEN})
    starts = [MIN_TOKEN, *cuts[:-1]]
    return [TokenRange(s, e, s) for s, e in zip(starts, cuts)]


def refine(current: Sequence[TokenRange], ends: Iterable[int]) -> list[TokenRange]:
    """`current` cut also at `ends` (a new generation's), each part inheriting its range's position."""
    cuts = sorted({r.end for r in current} | {e for e in ends if MIN_TOKEN < e < MAX_TOKEN})
    out, i = [], 0
    start = MIN_TOKEN
    for end in cuts:
        while current[i].end < end:
            i += 1
        out.append(current[i].inherit(start, end))
        start = end
    return out


# [(after, end, limit), …] → for each, the token of the `limit`-th partition after `after` up to `end`, or
# None when fewer than `limit` partitions are left there. All at once: the source asks them concurrently.
Probes = Callable[[list[tuple[int, int, int]]], list[int | None]]


def advance(ranges: Sequence[TokenRange], probes: Probes, partitions: int) -> list[TokenRange]:
    """The next step of every unfinished range: about `partitions` partitions over them all (at
    least one each), so a micro-batch stays bounded whatever the table's size."""
    open_ranges = [r for r in ranges if not r.done]
    each = max(1, partitions // max(1, len(open_ranges)))
    reached = iter(probes([(r.position, r.end, each) for r in open_ranges]))
    out = []
    for r in ranges:
        if r.done:
            out.append(r)
            continue
        token = next(reached)
        out.append(TokenRange(r.start, r.end, r.end if token is None else token))
    return out


def to_offset(generation: int, ranges: Sequence[TokenRange]) -> dict:
    """The JSON-able offset of a snapshot at `ranges`, cut for the generation starting at `generation` (µs)."""
    return {"generation": generation, "ranges": [[r.start, r.end, r.position] for r in ranges]}


def from_offset(offset: dict) -> tuple[int, list[TokenRange]]:
    return offset["generation"], [TokenRange(s, e, p) for s, e, p in offset["ranges"]]
