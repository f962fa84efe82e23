"""ScyllaDB's token → shard arithmetic ("biased-token-round-robin").

A token is unbiased (shifted onto unsigned order), its ``ignore_msb`` top bits
are dropped, and the remaining 64-bit value is read as a fraction of the shard
count. So the shard pattern repeats every 2**(64 - ignore_msb) tokens.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .errors import InvalidTopology
from .tokens import MAX_TOKEN, MIN_TOKEN

_MASK64 = (1 << 64) - 1
_BIAS = 1 << 63
# Python stand-in for ScyllaDB's maximum_token(): after every key token.
AFTER_ALL_TOKENS = MAX_TOKEN + 1


def check_sharding(shard_count: int, ignore_msb: int) -> None:
    if not 1 <= shard_count < (1 << 32):
        raise InvalidTopology(f"shard count must be in [1, 2**32), got {shard_count}")
    if not 0 <= ignore_msb < 64:
        raise InvalidTopology(f"ignore_msb must be in [0, 64), got {ignore_msb}")


def _zero_based_shard_of(unbiased: int, shard_count: int, ignore_msb: int) -> int:
    return (((unbiased << ignore_msb) & _MASK64) * shard_count) >> 64


def shard_of(token: int, shard_count: int, ignore_msb: int) -> int:
    """Shard owning ``token`` on a node with ``shard_count`` shards (``dht::shard_of``)."""
    check_sharding(shard_count, ignore_msb)
    return _zero_based_shard_of((token + _BIAS) & _MASK64, shard_count, ignore_msb)


def shards_of(tokens: np.ndarray, shard_counts: np.ndarray | int, ignore_msb: np.ndarray | int) -> np.ndarray:
    """:func:`shard_of` over arrays; counts and ``ignore_msb`` may vary per token."""
    unbiased = np.asarray(tokens, dtype=np.int64).view(np.uint64) ^ np.uint64(_BIAS)
    fraction = unbiased << np.asarray(ignore_msb, dtype=np.uint64)
    counts = np.asarray(shard_counts, dtype=np.uint64)
    # High 64 bits of fraction * count without 128-bit integers: split the fraction
    # into 32-bit halves. The sum below stays under 2**64 while count <= 2**32.
    high = fraction >> np.uint64(32)
    low = fraction & np.uint64(0xFFFFFFFF)
    return ((high * counts + ((low * counts) >> np.uint64(32))) >> np.uint64(32)).astype(np.int64)


@lru_cache(maxsize=256)
def shard_starts(shard_count: int, ignore_msb: int) -> tuple[int, ...]:
    """Smallest unbiased, msb-stripped value owned by each shard (``init_zero_based_shard_start``)."""
    check_sharding(shard_count, ignore_msb)
    if shard_count > 1 << (64 - ignore_msb):
        # Some shard would own no token at all, and the search below would look for it forever.
        raise InvalidTopology(
            f"ignore_msb {ignore_msb} leaves 2**{64 - ignore_msb} tokens per span, fewer than {shard_count} shards"
        )
    if shard_count == 1:
        return (0,)
    starts = []
    for shard in range(shard_count):
        value = ((shard << 64) // shard_count) >> ignore_msb
        # The division can land slightly before the shard's edge; step up to it.
        while _zero_based_shard_of(value, shard_count, ignore_msb) != shard:
            value += 1
        starts.append(value)
    return tuple(starts)


def token_for_next_shard(token: int, shard: int, shard_count: int, ignore_msb: int, spans: int = 1) -> int:
    """First token after ``token``'s span that ``shard`` owns, ``spans`` spans ahead.

    Returns :data:`AFTER_ALL_TOKENS` when that lies past the end of the ring.
    """
    starts = shard_starts(shard_count, ignore_msb)
    unbiased = (token + _BIAS) & _MASK64
    current = _zero_based_shard_of(unbiased, shard_count, ignore_msb)
    if ignore_msb == 0:
        if spans > 1 or shard <= current:
            return AFTER_ALL_TOKENS
        return starts[shard] - _BIAS
    span = (unbiased >> (64 - ignore_msb)) + spans - (1 if shard > current else 0)
    if span >= (1 << ignore_msb):
        return AFTER_ALL_TOKENS
    return ((span << (64 - ignore_msb)) | starts[shard]) - _BIAS


def _first_token_in_open_closed(start: int, end: int, shard: int, shard_count: int, ignore_msb: int) -> int:
    # Requires start < end; `end` may be AFTER_ALL_TOKENS.
    token = start + 1
    if _zero_based_shard_of((token + _BIAS) & _MASK64, shard_count, ignore_msb) != shard:
        token = token_for_next_shard(token, shard, shard_count, ignore_msb)
    return min(token, end)


def first_token_for_shard(start: int, end: int, shard: int, shard_count: int, ignore_msb: int) -> int:
    """First token of ``(start, end]`` owned by ``shard``, walking the ring from ``start``.

    Falls back to ``end`` when the shard owns none of the range, as
    ``dht::find_first_token_for_shard`` does; ``start >= end`` is the wrap-around range.
    """
    check_sharding(shard_count, ignore_msb)
    if not 0 <= shard < shard_count:
        raise InvalidTopology(f"shard {shard} out of range for {shard_count} shards")
    # ScyllaDB's sharder drops ignore_msb for a single shard; it would only cut needless spans.
    msb = ignore_msb if shard_count > 1 else 0
    if start < end:
        return _first_token_in_open_closed(start, end, shard, shard_count, msb)
    if start != MAX_TOKEN:
        token = _first_token_in_open_closed(start, AFTER_ALL_TOKENS, shard, shard_count, msb)
        if token != AFTER_ALL_TOKENS:
            return token
    # Nothing in (start, MAX_TOKEN]: continue from the start of the ring.
    return _first_token_in_open_closed(MIN_TOKEN, end, shard, shard_count, msb)
