"""Murmur3Partitioner tokens of partition keys, exactly as Cassandra computes them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import mmh3
import numpy as np

from . import murmur3
from .keys import partition_key

MIN_TOKEN = -(1 << 63)
MAX_TOKEN = (1 << 63) - 1


def _normalize(h1: int) -> int:
    # Long.MIN_VALUE is the partitioner's minimum token, which no key may take.
    return MAX_TOKEN if h1 == MIN_TOKEN else h1


def token_of_key(key: bytes, *, fast: bool = True) -> int:
    """Token of a serialized partition key.

    With ``fast``, keys whose tail has no byte >= 0x80 are hashed by ``mmh3``,
    which is proven equal there; the rest by the pure implementation.
    """
    if not key:
        # Cassandra returns the minimum token for an empty key (ScyllaDB would hash it to 0).
        return MIN_TOKEN
    if fast and murmur3.mmh3_agrees(key):
        return _normalize(mmh3.hash64(key, 0, signed=True)[0])
    return _normalize(murmur3.x64_128(key)[0])


def tokens_of_keys(keys: Sequence[bytes]) -> np.ndarray:
    """Tokens of many serialized partition keys at once, as an int64 array."""
    keys = list(keys)
    tokens = murmur3.h1_batch(keys)
    tokens[tokens == MIN_TOKEN] = MAX_TOKEN
    tokens[np.fromiter(map(len, keys), dtype=np.int64, count=len(keys)) == 0] = MIN_TOKEN
    return tokens


def token_of(values: Sequence[Any], types: Sequence[str]) -> int:
    """Token of a partition key given as values and their CQL type names.

    ``token_of([7, "abc"], ["int", "text"])`` equals ``SELECT token(a, b)`` for that row.
    """
    return token_of_key(partition_key(values, types))


def tokens_of(rows: Iterable[Sequence[Any]], types: Sequence[str]) -> np.ndarray:
    """Tokens of many partition keys that share the CQL types ``types``."""
    return tokens_of_keys([partition_key(row, types) for row in rows])
