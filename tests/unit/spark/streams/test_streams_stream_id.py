"""Stream id layout (cdc/generation.cc), round trips, ordering and validation."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark.streams import InvalidStreamId, StreamId, UnknownStreamIdVersion
from spark.streams.stream_id import MAX_INDEX
from spark.streams.tokens import MAX_TOKEN, MIN_TOKEN

tokens = st.integers(MIN_TOKEN, MAX_TOKEN)
indices = st.integers(0, MAX_INDEX)
randoms = st.integers(0, 2**64 - 1)


def test_layout_by_hand():
    stream = StreamId.create(token=-5, vnode_index=3, random_bits=12345)
    # High qword: -5 two's complement. Low: random << 26 | index << 4 | version 1.
    low = (12345 << 26) | (3 << 4) | 1
    assert stream.value == bytes.fromhex("fffffffffffffffb") + low.to_bytes(8, "big")
    assert stream.hex() == "0xfffffffffffffffb000000c0e4000031"
    assert (stream.token, stream.index, stream.version, stream.random_bits) == (-5, 3, 1, 12345)


def test_field_boundaries():
    stream = StreamId.create(MAX_TOKEN, MAX_INDEX, 2**38 - 1)
    # Every low bit set except version bits 1-3.
    assert stream.value == bytes.fromhex("7fffffffffffffff" "fffffffffffffff1")
    assert stream.index == MAX_INDEX and stream.random_bits == 2**38 - 1 and stream.version == 1


def test_only_38_random_bits_are_kept():
    # ScyllaDB draws 64 bits and masks them; the upper 26 bits of the draw are lost.
    draw = (0x3FFFFFF << 38) | 0x123456789
    assert StreamId.create(0, 0, draw) == StreamId.create(0, 0, 0x123456789)


@settings(max_examples=300, derandomize=True)
@given(tokens, indices, randoms)
def test_round_trip(token, index, rand):
    stream = StreamId.create(token, index, rand)
    assert (stream.token, stream.index, stream.version) == (token, index, 1)
    assert stream.random_bits == rand % 2**38
    assert StreamId(bytes(stream)) == stream
    assert StreamId.from_hex(stream.hex()) == stream
    assert StreamId.from_hex(stream.hex()[2:].upper()) == stream
    assert len(bytes(stream)) == 16


def test_ordering_is_unsigned_blob_order():
    positive = StreamId.create(1, 0)
    negative = StreamId.create(-1, 0)
    # Negative tokens start with 0x8.. - 0xf.. and sort after positive ones as blobs.
    assert positive < negative
    assert sorted([negative, positive]) == [positive, negative]
    same_token = [StreamId.create(7, index, rand) for index, rand in [(2, 0), (1, 5), (1, 0)]]
    assert sorted(same_token) == [StreamId.create(7, 1, 0), StreamId.create(7, 2, 0), StreamId.create(7, 1, 5)]


def test_ordering_matches_bytes_on_random_ids():
    rng = random.Random(3)
    ids = [StreamId.create(rng.randrange(MIN_TOKEN, MAX_TOKEN), rng.randrange(MAX_INDEX), rng.getrandbits(64))
           for _ in range(500)]
    assert [bytes(s) for s in sorted(ids)] == sorted(bytes(s) for s in ids)
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize("value", [b"", b"\x00" * 15, b"\x00" * 17, "00" * 16])
def test_wrong_size_or_type(value):
    with pytest.raises(InvalidStreamId):
        StreamId(value)


def test_version_above_one_is_rejected():
    # The ScyllaDB docs show ids made before versioned ids existed; ScyllaDB rejects them too.
    with pytest.raises(UnknownStreamIdVersion):
        StreamId.from_hex("0x365fd1a9ae34373954529ac8169dfb93")
    assert StreamId(bytes(16)).version == 0  # versions 0 and 1 pass, as in ScyllaDB


@pytest.mark.parametrize(
    ("token", "index", "rand"),
    [(MAX_TOKEN + 1, 0, 0), (MIN_TOKEN - 1, 0, 0), (0, MAX_INDEX + 1, 0), (0, -1, 0), (0, 0, -1)],
)
def test_invalid_fields(token, index, rand):
    with pytest.raises(InvalidStreamId):
        StreamId.create(token, index, rand)


@pytest.mark.parametrize("text", ["0x1234", "zz" * 16, "0x" + "0" * 31])
def test_invalid_hex(text):
    with pytest.raises(InvalidStreamId):
        StreamId.from_hex(text)
