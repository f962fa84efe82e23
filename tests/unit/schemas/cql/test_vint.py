"""VInt vectors of the format reference §17.2 (from Cassandra's VIntCodingTest)."""
import pytest

from schemas.cql.vint import read_uvint, read_vint, to_int64
from tests.unit.connector.commitlog.segment_builder import svint, uvint

VECTORS = [
    (0, "00"), (127, "7f"), (128, "8080"), (255, "80ff"), (16383, "bfff"), (16384, "c04000"),
    (2097152, "e0200000"), (10201, "a7d9"), (1097151, "d0bdbf"), (168435455, "ea0a1eff"),
    (256405479123000, "fce9330d806838"), (2**56 - 1, "feffffffffffffff"),
    (72057594037927937, "ff0100000000000001"), (-1, "ffffffffffffffffff"),
    (-1231238694, "ffffffffffb69cc9da"),
]


@pytest.mark.parametrize("value, encoded", VECTORS)
def test_unsigned_vint_vectors(value, encoded):
    raw = bytes.fromhex(encoded)
    decoded, end = read_uvint(raw + b"\xaa", 0)  # a following byte must not be consumed
    assert end == len(raw)
    assert to_int64(decoded) == value
    assert uvint(value) == raw


@pytest.mark.parametrize("value, size", [
    (53, 1), (10201, 2), (1097151, 3), (168435455, 4), (33251130335, 5), (3281283447775, 6),
    (417672546086779, 7), (52057592037927932, 8), (72057594037927937, 9), (2**63 - 1, 9),
])
def test_sizes_from_vintcodingtest(value, size):
    assert len(uvint(value)) == size
    assert read_uvint(uvint(value), 0) == (value, size)


@pytest.mark.parametrize("k", range(1, 8))
def test_size_boundaries(k):
    assert read_uvint(uvint((1 << 7 * k) - 1), 0)[1] == k
    assert read_uvint(uvint(1 << 7 * k), 0)[1] == k + 1


@pytest.mark.parametrize("value, encoded", [(0, "00"), (-1, "01"), (1, "02"), (-2, "03"), (64, "8080")])
def test_signed_vint(value, encoded):
    assert svint(value).hex() == encoded
    assert read_vint(bytes.fromhex(encoded), 0) == (value, len(encoded) // 2)


def test_truncated_vint_raises_index_error():
    with pytest.raises(IndexError):
        read_uvint(b"\xc0\x40", 0)


def test_java_long_cast():
    assert to_int64(2**64 - 2) == -2
    assert to_int64(2**63 - 1) == 2**63 - 1
