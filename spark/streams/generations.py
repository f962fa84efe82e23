"""CDC generations by timestamp, and which stream a write goes to.

All timestamps here are microseconds since the epoch, the unit of write
timestamps; the description tables store generation timestamps in
milliseconds (see :attr:`Generation.timestamp_ms`).

A generation operates from its timestamp until the next generation's.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

import numpy as np

from .errors import (
    GenerationDataUnavailable,
    InvalidTopology,
    NoGenerationOperating,
    WriteFromThePast,
    WriteFromTheFuture,
)
from .stream_id import STREAM_ID_DTYPE, StreamId
from .topology import DEFAULT_IGNORE_MSB, TopologyDescription, build_topology_description

MICROS_PER_MILLI = 1_000
MICROS_PER_SECOND = 1_000_000
DEFAULT_LEEWAY = 5 * MICROS_PER_SECOND
# ScyllaDB delays a new generation by 2 * ring_delay + leeway so every node learns it in time;
# ring_delay defaults to 30 s.
DEFAULT_GENERATION_DELAY = 2 * 30 * MICROS_PER_SECOND + DEFAULT_LEEWAY


@dataclass(frozen=True)
class Generation:
    timestamp: int
    # None while only the timestamp is known (ScyllaDB rejects writes to such a generation).
    description: TopologyDescription | None = None
    # When the last live log row of this generation died, once known.
    expired: int | None = None

    @property
    def timestamp_ms(self) -> int:
        return self.timestamp // MICROS_PER_MILLI

    def topology(self) -> TopologyDescription:
        """The description, which a generation known only by its timestamp cannot give."""
        if self.description is None:
            raise GenerationDataUnavailable(
                f"generation {self.timestamp} is known by its timestamp only; its streams are not"
            )
        return self.description

    def streams_for_tokens(self, tokens: np.ndarray) -> np.ndarray:
        """Stream ids of many tokens at once, as raw 16-byte values (:data:`STREAM_ID_DTYPE`)."""
        return self.topology().stream_ids(tokens)


def _shape(description: TopologyDescription) -> tuple:
    """What a ring change alters: range ends, stream tokens and sharding; not the random bits."""
    return tuple(
        (entry.token_range_end, tuple(s.token for s in entry.streams), entry.sharding_ignore_msb)
        for entry in description.entries
    )


class Generations:
    """The generations a cluster has introduced, like ScyllaDB's ``cdc::metadata``."""

    def __init__(self, generations: Iterable[Generation] = (), *, leeway: int = DEFAULT_LEEWAY) -> None:
        if leeway < 0:
            raise ValueError(f"leeway must be non-negative, got {leeway}")
        self.leeway = leeway
        self._generations: list[Generation] = []
        self._timestamps: list[int] = []
        for generation in generations:
            self.insert(generation)

    @property
    def generations(self) -> tuple[Generation, ...]:
        return tuple(self._generations)

    def insert(self, generation: Generation) -> None:
        """Add a generation, or fill in the description of one known only by timestamp."""
        position = bisect.bisect_left(self._timestamps, generation.timestamp)
        if position < len(self._timestamps) and self._timestamps[position] == generation.timestamp:
            known = self._generations[position]
            if known.description is not None and known.description != generation.description:
                raise InvalidTopology(f"two different generations at timestamp {generation.timestamp}")
            self._generations[position] = generation
            return
        self._timestamps.insert(position, generation.timestamp)
        self._generations.insert(position, generation)

    def _position_at(self, ts: int) -> int:
        position = bisect.bisect_right(self._timestamps, ts) - 1
        if position < 0:
            raise NoGenerationOperating(
                f"could not find any CDC stream for timestamp {ts}: no generation operates yet"
            )
        return position

    def operating_at(self, ts: int) -> Generation:
        """The generation with the largest timestamp not after ``ts``."""
        return self._generations[self._position_at(ts)]

    def get_stream(self, ts: int, token: int) -> StreamId:
        """The stream of a write with timestamp ``ts`` to a partition with ``token``."""
        return self.operating_at(ts).topology().get_stream(token)

    def stream_ids(self, timestamps: np.ndarray | int, tokens: np.ndarray) -> np.ndarray:
        """:meth:`get_stream` over arrays, as raw 16-byte ids; one timestamp may serve every token."""
        tokens = np.asarray(tokens, dtype=np.int64)
        timestamps = np.broadcast_to(np.asarray(timestamps, dtype=np.int64), tokens.shape)
        positions = np.searchsorted(np.array(self._timestamps, dtype=np.int64), timestamps, side="right") - 1
        if (positions < 0).any():
            earliest = int(timestamps[positions < 0].min())
            raise NoGenerationOperating(f"could not find any CDC stream for timestamp {earliest}")
        ids = np.empty(tokens.shape, dtype=STREAM_ID_DTYPE)
        for position in np.unique(positions):
            members = positions == position
            ids[members] = self._generations[position].streams_for_tokens(tokens[members])
        return ids

    def get_streams(self, timestamps: np.ndarray | int, tokens: np.ndarray) -> list[StreamId]:
        """:meth:`stream_ids` as :class:`StreamId` objects."""
        return [StreamId(value) for value in self.stream_ids(timestamps, tokens).tolist()]

    def accept_write(self, ts: int, now: int) -> Generation:
        """The generation a write goes to, if ScyllaDB would accept it at time ``now``.

        Accepted: ``T <= ts < now + leeway``, where ``T`` is the timestamp of the
        generation operating at ``now``.
        """
        if ts >= now + self.leeway:
            raise WriteFromTheFuture(
                f"write timestamp {ts} is at or beyond now ({now}) + leeway ({self.leeway})", write_ts=ts, now=now
            )
        current = self.operating_at(now)
        if ts < current.timestamp:
            raise WriteFromThePast(
                f"write timestamp {ts} precedes the current generation ({current.timestamp})", write_ts=ts, now=now
            )
        return self.operating_at(ts)

    def stream_for_write(self, ts: int, token: int, now: int) -> StreamId:
        """:meth:`get_stream` for a write that passes :meth:`accept_write`."""
        return self.accept_write(ts, now).topology().get_stream(token)

    def add_for_ring(
        self,
        ring: Mapping[str, Iterable[int]],
        now: int,
        *,
        delay: int = DEFAULT_GENERATION_DELAY,
        shards: int | Mapping[str, int] = 1,
        ignore_msb: int | Mapping[str, int] = DEFAULT_IGNORE_MSB,
        rand: random.Random | int | None = None,
    ) -> Generation | None:
        """Introduce a generation for ``ring`` if it differs from the latest one.

        The first generation starts at ``now``; later ones ``delay`` after it, so
        that every node learns them before they operate. Timestamps are whole
        milliseconds, as ScyllaDB stores them. Returns None when the ring is unchanged.
        """
        description = build_topology_description(ring, shards=shards, ignore_msb=ignore_msb, rand=rand)
        if self._generations:
            latest = self._generations[-1]
            if latest.description is not None and _shape(latest.description) == _shape(description):
                return None
            start = now + delay
        else:
            start = now
        start -= start % MICROS_PER_MILLI
        if self._timestamps and start <= self._timestamps[-1]:
            raise InvalidTopology(f"new generation at {start} would not follow the latest ({self._timestamps[-1]})")
        generation = Generation(start, description)
        self.insert(generation)
        return generation

    def expire(self, now: int, ttl_seconds: int) -> list[Generation]:
        """Mark generations whose log rows are all dead at ``now`` and return them.

        A generation stops taking writes when the next one starts; its rows live
        ``ttl_seconds`` more. A TTL of 0 keeps rows forever, so nothing expires.
        """
        if ttl_seconds < 0:
            raise ValueError(f"ttl must be non-negative, got {ttl_seconds}")
        if ttl_seconds == 0:
            return []
        newly_expired = []
        for position, (generation, successor) in enumerate(zip(self._generations, self._generations[1:])):
            dead_from = successor.timestamp + ttl_seconds * MICROS_PER_SECOND
            if generation.expired is None and now > dead_from:
                self._generations[position] = replace(generation, expired=dead_from)
                newly_expired.append(self._generations[position])
        return newly_expired
