"""Cassandra's variant of MurmurHash3 x64_128.

Cassandra (and ScyllaDB, to stay compatible) reads the tail bytes, the last
``len % 16``, as *signed* bytes, so a tail byte >= 0x80 is sign-extended to 64
bits before it is shifted into place. The 16-byte body blocks are read unsigned,
as in the reference algorithm. Everything else is standard MurmurHash3.

Three implementations share these semantics:

- :func:`x64_128`: pure Python, the definition the others are tested against;
- :func:`h1_batch`: numpy, vectorized over many keys;
- :func:`mmh3_agrees` tells when the standard ``mmh3`` gives the same result
  (no tail byte >= 0x80), so callers may use it as a fast path.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np

_MASK64 = (1 << 64) - 1
_C1 = 0x87C37B91114253D5
_C2 = 0x4CF5AD432745937F
_FMIX1 = 0xFF51AFD7ED558CCD
_FMIX2 = 0xC4CEB9FE1A85EC53


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _MASK64


def _fmix(k: int) -> int:
    k ^= k >> 33
    k = (k * _FMIX1) & _MASK64
    k ^= k >> 33
    k = (k * _FMIX2) & _MASK64
    return k ^ (k >> 33)


def _mix_k1(k1: int) -> int:
    return (_rotl((k1 * _C1) & _MASK64, 31) * _C2) & _MASK64


def _mix_k2(k2: int) -> int:
    return (_rotl((k2 * _C2) & _MASK64, 33) * _C1) & _MASK64


def _signed(x: int) -> int:
    return x - (1 << 64) if x >> 63 else x


def x64_128(data: bytes, seed: int = 0) -> tuple[int, int]:
    """Both 64-bit halves, as signed integers (Java longs), of Cassandra's hash."""
    length = len(data)
    nblocks = length // 16
    h1 = h2 = seed & _MASK64
    for k1, k2 in struct.iter_unpack("<QQ", data[: nblocks * 16]):
        h1 ^= _mix_k1(k1)
        h1 = (_rotl(h1, 27) + h2) & _MASK64
        h1 = (h1 * 5 + 0x52DCE729) & _MASK64
        h2 ^= _mix_k2(k2)
        h2 = (_rotl(h2, 31) + h1) & _MASK64
        h2 = (h2 * 5 + 0x38495AB5) & _MASK64

    k1 = k2 = 0
    for i, byte in enumerate(data[nblocks * 16 :]):
        # Java's `(long) key.get(i)`: the byte is signed, so 0x80..0xff spread ones upwards.
        extended = (byte | ~0xFF) if byte & 0x80 else byte
        lane = (extended << (8 * (i % 8))) & _MASK64
        if i < 8:
            k1 ^= lane
        else:
            k2 ^= lane
    # Mixing a zero lane is a no-op, so there is no need to test the tail length.
    h2 ^= _mix_k2(k2)
    h1 ^= _mix_k1(k1)

    h1 ^= length
    h2 ^= length
    h1 = (h1 + h2) & _MASK64
    h2 = (h2 + h1) & _MASK64
    h1 = _fmix(h1)
    h2 = _fmix(h2)
    h1 = (h1 + h2) & _MASK64
    h2 = (h2 + h1) & _MASK64
    return _signed(h1), _signed(h2)


def mmh3_agrees(data: bytes) -> bool:
    """True when the standard algorithm (``mmh3``) gives Cassandra's result for ``data``.

    The variants differ only in how tail bytes >= 0x80 are widened.
    """
    return data[len(data) - len(data) % 16 :].isascii()


# numpy twins of the scalar helpers above; uint64 arithmetic wraps modulo 2**64.
_U = np.uint64


def _rotl_v(x: np.ndarray, r: int) -> np.ndarray:
    return (x << _U(r)) | (x >> _U(64 - r))


def _fmix_v(k: np.ndarray) -> np.ndarray:
    k = k ^ (k >> _U(33))
    k = k * _U(_FMIX1)
    k = k ^ (k >> _U(33))
    k = k * _U(_FMIX2)
    return k ^ (k >> _U(33))


def _mix_k1_v(k1: np.ndarray) -> np.ndarray:
    return _rotl_v(k1 * _U(_C1), 31) * _U(_C2)


def _mix_k2_v(k2: np.ndarray) -> np.ndarray:
    return _rotl_v(k2 * _U(_C2), 33) * _U(_C1)


_LANE_SHIFTS = (np.arange(8, dtype=np.uint64) * _U(8))[None, :]


def _tail_lane(tail: np.ndarray) -> np.ndarray:
    """XOR of 8 sign-extended, shifted tail bytes per row; zero padding adds nothing."""
    widened = tail.view(np.int8).astype(np.int64).view(np.uint64)
    return np.bitwise_xor.reduce(widened << _LANE_SHIFTS, axis=1)


def _h1_same_block_count(rows: np.ndarray, lengths: np.ndarray, nblocks: int) -> np.ndarray:
    """h1 for keys that all have ``nblocks`` body blocks; ``rows`` is zero-padded to (nblocks+1)*16."""
    h1 = np.zeros(len(rows), dtype=np.uint64)
    h2 = np.zeros(len(rows), dtype=np.uint64)
    lanes = rows.view("<u8")
    for i in range(nblocks):
        h1 ^= _mix_k1_v(lanes[:, 2 * i])
        h1 = _rotl_v(h1, 27) + h2
        h1 = h1 * _U(5) + _U(0x52DCE729)
        h2 ^= _mix_k2_v(lanes[:, 2 * i + 1])
        h2 = _rotl_v(h2, 31) + h1
        h2 = h2 * _U(5) + _U(0x38495AB5)
    tail = rows[:, nblocks * 16 :]
    h2 ^= _mix_k2_v(_tail_lane(tail[:, 8:]))
    h1 ^= _mix_k1_v(_tail_lane(tail[:, :8]))
    length = lengths.astype(np.uint64)
    h1 ^= length
    h2 ^= length
    h1 = h1 + h2
    h2 = h2 + h1
    h1 = _fmix_v(h1)
    h2 = _fmix_v(h2)
    return h1 + h2


def h1_batch(keys: Sequence[bytes]) -> np.ndarray:
    """First halves (seed 0) of Cassandra's hash of every key, as an int64 array."""
    lengths = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
    # A trailing zero byte lets every gather below read in bounds.
    flat = np.frombuffer(b"".join(keys) + b"\0", dtype=np.uint8)
    starts = np.cumsum(lengths) - lengths
    result = np.empty(len(keys), dtype=np.uint64)
    block_counts = lengths // 16
    # Keys with the same number of body blocks go through the loop together.
    for nblocks in np.unique(block_counts):
        members = np.flatnonzero(block_counts == nblocks)
        width = (int(nblocks) + 1) * 16
        columns = np.arange(width)
        inside = columns[None, :] < lengths[members, None]
        positions = np.where(inside, starts[members, None] + columns[None, :], len(flat) - 1)
        rows = np.ascontiguousarray(flat[positions])
        result[members] = _h1_same_block_count(rows, lengths[members], int(nblocks))
    return result.view(np.int64)
