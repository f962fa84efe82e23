"""Topology descriptions: the token → stream mapping of one CDC generation.

Entry ``i`` covers the token range ``(end[i-1], end[i]]``; entry 0 also takes the
wrap-around part above the last end. Within an entry, a token goes to
``streams[shard_of(token, len(streams), sharding_ignore_msb)]``, so element ``j``
belongs to shard ``j``.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from .errors import InvalidTopology
from .sharding import check_sharding, first_token_for_shard, shard_of, shards_of
from .stream_id import STREAM_ID_DTYPE, StreamId
from .tokens import MAX_TOKEN, MIN_TOKEN

DEFAULT_IGNORE_MSB = 12  # ScyllaDB's murmur3_partitioner_ignore_msb_bits default


@dataclass(frozen=True)
class TokenRangeDescription:
    token_range_end: int
    streams: tuple[StreamId, ...]
    sharding_ignore_msb: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "streams", tuple(self.streams))
        check_sharding(len(self.streams), self.sharding_ignore_msb)

    def shard_of(self, token: int) -> int:
        return shard_of(token, len(self.streams), self.sharding_ignore_msb)

    def get_stream(self, token: int) -> StreamId:
        return self.streams[self.shard_of(token)]


@dataclass(frozen=True)
class StreamPlacement:
    """Where writes to one token go: range ``(start, end]`` at ``index`` (the vnode index), shard, stream."""

    token: int
    index: int
    start: int
    end: int
    shard: int
    stream: StreamId


class TopologyDescription:
    """The entries of one generation, sorted by ``token_range_end``."""

    def __init__(self, entries: Iterable[TokenRangeDescription]) -> None:
        self._entries = tuple(entries)
        if not self._entries:
            raise InvalidTopology("a topology description needs at least one token range")
        ends = [entry.token_range_end for entry in self._entries]
        if any(a >= b for a, b in zip(ends, ends[1:])):
            raise InvalidTopology("token range ends must be strictly increasing")
        self._ends = ends
        self._ends_array = np.array(ends, dtype=np.int64)
        counts = [len(entry.streams) for entry in self._entries]
        self._shard_counts = np.array(counts, dtype=np.int64)
        self._ignore_msb = np.array([entry.sharding_ignore_msb for entry in self._entries], dtype=np.int64)
        self._first_stream = np.cumsum(counts) - counts
        self._streams = tuple(stream for entry in self._entries for stream in entry.streams)
        self._stream_ids = np.array([stream.value for stream in self._streams], dtype=STREAM_ID_DTYPE)

    @property
    def entries(self) -> tuple[TokenRangeDescription, ...]:
        return self._entries

    @property
    def streams(self) -> tuple[StreamId, ...]:
        """Every stream, entry by entry, shard by shard; :meth:`stream_indices` points into it."""
        return self._streams

    def index_of(self, token: int) -> int:
        """Position of the entry whose range holds ``token``."""
        position = bisect.bisect_left(self._ends, token)
        return position if position < len(self._entries) else 0

    def token_range(self, index: int) -> tuple[int, int]:
        """``(start, end)`` of entry ``index``'s range ``(start, end]``; entry 0's start is the last end."""
        return self._ends[index - 1], self._ends[index]

    def entry_for(self, token: int) -> TokenRangeDescription:
        return self._entries[self.index_of(token)]

    def get_stream(self, token: int) -> StreamId:
        return self.entry_for(token).get_stream(token)

    def place(self, token: int) -> StreamPlacement:
        index = self.index_of(token)
        entry = self._entries[index]
        shard = entry.shard_of(token)
        start, end = self.token_range(index)
        return StreamPlacement(token, index, start, end, shard, entry.streams[shard])

    def stream_indices(self, tokens: np.ndarray) -> np.ndarray:
        """Positions in :attr:`streams` of the stream of every token."""
        tokens = np.asarray(tokens, dtype=np.int64)
        positions = np.searchsorted(self._ends_array, tokens, side="left")
        positions[positions == len(self._entries)] = 0
        shards = shards_of(tokens, self._shard_counts[positions], self._ignore_msb[positions])
        return self._first_stream[positions] + shards

    def get_streams(self, tokens: np.ndarray) -> list[StreamId]:
        return [self._streams[i] for i in self.stream_indices(tokens)]

    def stream_ids(self, tokens: np.ndarray) -> np.ndarray:
        """The stream id of every token as raw 16-byte values (:data:`STREAM_ID_DTYPE`), no objects made."""
        return self._stream_ids[self.stream_indices(tokens)]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TopologyDescription) and self._entries == other._entries

    def __hash__(self) -> int:
        return hash(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


def _per_node(setting: int | Mapping[str, int], node: str, name: str) -> int:
    if isinstance(setting, Mapping):
        if node not in setting:
            raise InvalidTopology(f"no {name} given for node {node!r}")
        return setting[node]
    return setting


def _token_owners(ring: Mapping[str, Iterable[int]]) -> dict[int, str]:
    owners: dict[int, str] = {}
    for node, tokens in ring.items():
        for token in tokens:
            token = int(token)
            if not MIN_TOKEN < token <= MAX_TOKEN:
                raise InvalidTopology(f"token {token} of node {node!r} is not a Murmur3 token")
            if owners.setdefault(token, node) != node:
                raise InvalidTopology(f"token {token} is claimed by {owners[token]!r} and {node!r}")
    if not owners:
        raise InvalidTopology("the ring has no tokens")
    return owners


def _random_source(rand: random.Random | int | None) -> Callable[[], int]:
    """A 64-bit draw, standing in for ScyllaDB's mt19937_64; a seed makes ids reproducible."""
    source = rand if isinstance(rand, random.Random) else random.Random(rand)
    return lambda: source.getrandbits(64)


def build_topology_description(
    ring: Mapping[str, Iterable[int]],
    *,
    shards: int | Mapping[str, int] = 1,
    ignore_msb: int | Mapping[str, int] = DEFAULT_IGNORE_MSB,
    rand: random.Random | int | None = None,
) -> TopologyDescription:
    """The topology description ScyllaDB would make for ``ring`` (node → vnode tokens).

    One entry per vnode: its end token, the sharding of the node owning that end,
    and per shard ``j`` a stream on the first token of the vnode that shard ``j``
    owns, or on the vnode's end when it owns none (that stream is never used).
    ``shards`` and ``ignore_msb`` are one value for all nodes or a value per node.
    """
    owners = _token_owners(ring)
    tokens = sorted(owners)
    draw = _random_source(rand)
    entries = []
    for index, end in enumerate(tokens):
        # The first vnode wraps around: it starts at the last token.
        start = tokens[index - 1]
        node = owners[end]
        shard_count = _per_node(shards, node, "shard count")
        msb = _per_node(ignore_msb, node, "ignore_msb")
        streams = tuple(
            StreamId.create(first_token_for_shard(start, end, shard, shard_count, msb), index, draw())
            for shard in range(shard_count)
        )
        entries.append(TokenRangeDescription(end, streams, msb))
    return TopologyDescription(entries)


def rebuild_topology_description(
    rows: Iterable[tuple[int, Iterable[StreamId]]],
    ignore_msb: int | Mapping[int, int] = DEFAULT_IGNORE_MSB,
) -> TopologyDescription:
    """A topology description from ``cdc_streams_descriptions_v2`` rows (range_end, streams set).

    The set's element order is not shard order, so shard ``j``'s stream is found
    by recomputing the token ScyllaDB gave it. ``ignore_msb`` is not in that
    table: pass the cluster value or one per range end.
    """
    rows = sorted((int(end), list(streams)) for end, streams in rows)
    if not rows:
        raise InvalidTopology("no description rows")
    entries = []
    for position, (end, streams) in enumerate(rows):
        start = rows[position - 1][0]
        msb = ignore_msb[end] if isinstance(ignore_msb, Mapping) else ignore_msb
        unmatched = list(streams)
        ordered = []
        for shard in range(len(streams)):
            token = first_token_for_shard(start, end, shard, len(streams), msb)
            match = next((stream for stream in unmatched if stream.token == token), None)
            if match is None:
                raise InvalidTopology(f"range ending at {end} has no stream on token {token} for shard {shard}")
            # Fallback slots share the end token and are never used. But the shard owning `end` may own
            # nothing else in the range, so its used stream sits on `end` too: a set cannot tell which
            # tied id is that one, and token `end` alone may be given a fallback's id.
            unmatched.remove(match)
            ordered.append(match)
        entries.append(TokenRangeDescription(end, tuple(ordered), msb))
    return TopologyDescription(entries)


def rebuild_from_stream_set(
    streams: Iterable[StreamId], ignore_msb: int = DEFAULT_IGNORE_MSB
) -> TopologyDescription:
    """A topology description from a generation's one set of streams (the v1 ``cdc_streams_descriptions``).

    That layout keeps no range ends. They are recovered from the streams: a stream's
    vnode index names its range, and a range ``(start, end]`` always has a stream on
    ``start + 1`` (that token is some shard's first), the smallest token of a
    non-wrapping range. The result is checked like :func:`rebuild_topology_description`.
    """
    groups: dict[int, list[StreamId]] = {}
    for stream in streams:
        groups.setdefault(stream.index, []).append(stream)
    if not groups or sorted(groups) != list(range(len(groups))):
        raise InvalidTopology(f"stream vnode indices must be 0..n-1, got {sorted(groups)[:10]}")
    ranges = [groups[index] for index in range(len(groups))]
    if len(ranges) == 1:
        return _rebuild_single_range(ranges[0], ignore_msb)
    ends = [min(stream.token for stream in members) - 1 for members in ranges[1:]]
    # Entry 0 wraps: its streams above every token of the last range start right after the last end.
    last_range_top = max(stream.token for stream in ranges[-1])
    wrapped = [stream.token for stream in ranges[0] if stream.token > last_range_top]
    ends.append(min(wrapped) - 1 if wrapped else MAX_TOKEN)
    if ends[0] <= MIN_TOKEN or any(a >= b for a, b in zip(ends, ends[1:])):
        raise InvalidTopology("stream tokens do not follow their vnode indices")
    return rebuild_topology_description(zip(ends, ranges), ignore_msb)


def _rebuild_single_range(streams: list[StreamId], ignore_msb: int) -> TopologyDescription:
    # A one-token ring (t, t] has no other range to bound it: try every stream as the one on t + 1.
    for token in sorted({stream.token for stream in streams}):
        end = MAX_TOKEN if token == MIN_TOKEN + 1 else token - 1
        try:
            return rebuild_topology_description([(end, streams)], ignore_msb)
        except InvalidTopology:
            continue
    raise InvalidTopology("no ring token fits the streams of the single range")
