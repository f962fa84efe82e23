"""Rewriting v1 stream descriptions into the v2 tables, as ScyllaDB 4.4 did on upgrade.

The v1 layout, ``cdc_streams_descriptions (time timestamp PRIMARY KEY, streams
frozen<set<blob>>, expired timestamp)``, keeps a generation's streams in one
collection, which grows past what one cell should hold on large clusters. The steps
follow ScyllaDB's ``maybe_rewrite_streams_descriptions``:

1. no v1 table: nothing to do;
2. a ``cdc_local`` row ``key = 'rewritten'``: done before;
3. every v1 timestamp, sorted; those too old to hold live log rows are skipped;
4. generations already in ``cdc_generation_timestamps`` are left alone;
5. the others are published (ranges, then timestamp), their description taken from
   the internal table or, when it has none, recovered from the v1 stream set;
6. the ``rewritten`` row is written, naming the last v1 generation.
"""

from __future__ import annotations

import bisect
import time
from dataclasses import dataclass

from .errors import InvalidStreamId, InvalidTopology
from .generations import MICROS_PER_MILLI, MICROS_PER_SECOND, Generation
from .storage import LOCAL_TABLE, GenerationStore
from .stream_id import StreamId
from .topology import DEFAULT_IGNORE_MSB, rebuild_from_stream_set

V1_TABLE = "cdc_streams_descriptions"
REWRITTEN_KEY = "rewritten"
# ScyllaDB widens the TTL horizon by 10 s for clock drift between nodes.
CLOCK_DRIFT_MARGIN = 10 * MICROS_PER_SECOND

_SELECT_TABLE = "SELECT table_name FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?"
_SELECT_REWRITTEN = f"SELECT key FROM {{keyspace}}.{LOCAL_TABLE} WHERE key = ?"
_INSERT_REWRITTEN = f"INSERT INTO {{keyspace}}.{LOCAL_TABLE} (key, streams_timestamp) VALUES (?, ?)"
_SELECT_V1_TIMESTAMPS = f"SELECT toUnixTimestamp(time) AS time FROM {{keyspace}}.{V1_TABLE}"
_SELECT_V1_STREAMS = f"SELECT streams FROM {{keyspace}}.{V1_TABLE} WHERE time = ?"

NO_V1_TABLE = "no v1 table"
ALREADY_REWRITTEN = "already rewritten"
REWRITTEN = "rewritten"


@dataclass(frozen=True)
class RewriteReport:
    """What one run did; generation timestamps in microseconds."""

    outcome: str  # NO_V1_TABLE, ALREADY_REWRITTEN or REWRITTEN
    rewritten: tuple[int, ...] = ()
    already_published: tuple[int, ...] = ()
    too_old: tuple[int, ...] = ()
    # Neither the internal table nor the v1 streams describe them; ScyllaDB gives up on these too.
    unrecoverable: tuple[int, ...] = ()


def first_live_generation(timestamps: list[int], horizon: int) -> int:
    """Index of the oldest generation that may still own live log rows, in sorted ``timestamps``.

    Rows older than ``horizon`` are dead. A generation whose successor started at or
    before the horizon has only dead rows; the one operating at the horizon does not.
    """
    first = bisect.bisect_right(timestamps, horizon)
    return first - 1 if first else 0


def rewrite_v1_to_v2(
    store: GenerationStore,
    *,
    ttl_seconds: int,
    now: int | None = None,
    ignore_msb: int = DEFAULT_IGNORE_MSB,
) -> RewriteReport:
    """Copy live v1 generations of ``store``'s keyspace into the v2 tables, once.

    ``ttl_seconds`` is the longest CDC log TTL (0: rows never expire, nothing is too
    old); ``now`` is in microseconds, the current time by default. ``ignore_msb`` is
    used for generations recovered from v1 streams, which do not keep it.
    """
    if ttl_seconds < 0:
        raise ValueError(f"ttl must be non-negative, got {ttl_seconds}")
    if store.execute(_SELECT_TABLE, (store.keyspace, V1_TABLE)).one() is None:
        return RewriteReport(NO_V1_TABLE)
    if store.execute(_SELECT_REWRITTEN, (REWRITTEN_KEY,)).one() is not None:
        return RewriteReport(ALREADY_REWRITTEN)
    times_ms = sorted(row.time for row in store.execute(_SELECT_V1_TIMESTAMPS))
    first = 0
    if ttl_seconds:
        now = time.time_ns() // 1000 if now is None else now
        horizon_ms = (now - ttl_seconds * MICROS_PER_SECOND - CLOCK_DRIFT_MARGIN) // MICROS_PER_MILLI
        first = first_live_generation(times_ms, horizon_ms)
    rewritten, published, unrecoverable = [], [], []
    for time_ms in times_ms[first:]:
        timestamp = time_ms * MICROS_PER_MILLI
        if store.is_published(time_ms):
            published.append(timestamp)
        elif _rewrite_generation(store, time_ms, ignore_msb):
            rewritten.append(timestamp)
        else:
            unrecoverable.append(timestamp)
    store.execute(_INSERT_REWRITTEN, (REWRITTEN_KEY, times_ms[-1] if times_ms else None))
    too_old = tuple(time_ms * MICROS_PER_MILLI for time_ms in times_ms[:first])
    return RewriteReport(REWRITTEN, tuple(rewritten), tuple(published), too_old, tuple(unrecoverable))


def _rewrite_generation(store: GenerationStore, time_ms: int, ignore_msb: int) -> bool:
    description = store.read_internal_description(time_ms)
    if description is None:
        row = store.execute(_SELECT_V1_STREAMS, (time_ms,)).one()
        streams = row.streams if row is not None and row.streams else ()
        try:
            description = rebuild_from_stream_set(map(StreamId, streams), ignore_msb)
        except (InvalidTopology, InvalidStreamId):
            return False
    store.publish(Generation(time_ms * MICROS_PER_MILLI, description))
    return True
