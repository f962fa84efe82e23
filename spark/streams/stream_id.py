"""CDC stream ids: 128 bits stored as a 16-byte big-endian blob.

High 64 bits: the stream's token (two's complement). Low 64 bits, from the least
significant bit: version (4 bits), vnode index (22 bits), random (38 bits), as
ScyllaDB's ``cdc::stream_id(dht::token, size_t)`` composes them. The random bits
keep ids of two generations apart when they land on the same token.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import total_ordering

import numpy as np

from .errors import InvalidStreamId, UnknownStreamIdVersion
from .tokens import MAX_TOKEN, MIN_TOKEN

VERSION_1 = 1
VERSION_BITS = 4
INDEX_BITS = 22
RANDOM_BITS = 38
INDEX_SHIFT = VERSION_BITS
RANDOM_SHIFT = VERSION_BITS + INDEX_BITS
MAX_INDEX = (1 << INDEX_BITS) - 1
STREAM_ID_SIZE = 16
# Raw 16-byte ids in numpy arrays; "S16" would drop trailing zero bytes when read back.
STREAM_ID_DTYPE = np.dtype(f"V{STREAM_ID_SIZE}")


def _field(low_qword: int, shift: int, bits: int) -> int:
    return (low_qword >> shift) & ((1 << bits) - 1)


@total_ordering
@dataclass(frozen=True, eq=True)
class StreamId:
    """One CDC stream id. Ordered as CQL orders blobs: unsigned bytes, so the token leads."""

    value: bytes

    def __post_init__(self) -> None:
        if not isinstance(self.value, bytes) or len(self.value) != STREAM_ID_SIZE:
            raise InvalidStreamId(f"a stream id is {STREAM_ID_SIZE} bytes, got {self.value!r}")
        # As weak as ScyllaDB's own check: ids made before versioning have random low bits.
        if self.version > VERSION_1:
            raise UnknownStreamIdVersion(f"unknown CDC stream id version {self.version}")

    @classmethod
    def create(cls, token: int, vnode_index: int, random_bits: int = 0) -> StreamId:
        """The id ScyllaDB builds for ``token`` in vnode ``vnode_index``; only 38 random bits are kept."""
        if not MIN_TOKEN <= token <= MAX_TOKEN:
            raise InvalidStreamId(f"token {token} is not a 64-bit signed integer")
        if not 0 <= vnode_index <= MAX_INDEX:
            # ScyllaDB asserts that the index reads back unchanged; larger rings trip it.
            raise InvalidStreamId(f"vnode index {vnode_index} does not fit in {INDEX_BITS} bits")
        if random_bits < 0:
            raise InvalidStreamId(f"random bits must be non-negative, got {random_bits}")
        low_qword = (
            VERSION_1
            | (vnode_index << INDEX_SHIFT)
            | ((random_bits & ((1 << RANDOM_BITS) - 1)) << RANDOM_SHIFT)
        )
        return cls(struct.pack(">qQ", token, low_qword))

    @classmethod
    def from_hex(cls, text: str) -> StreamId:
        digits = text[2:] if text[:2].lower() == "0x" else text
        try:
            value = bytes.fromhex(digits)
        except ValueError as exc:
            raise InvalidStreamId(f"not a hex stream id: {text!r}") from exc
        return cls(value)

    @property
    def token(self) -> int:
        return struct.unpack_from(">q", self.value)[0]

    @property
    def low_qword(self) -> int:
        return struct.unpack_from(">Q", self.value, 8)[0]

    @property
    def version(self) -> int:
        return _field(self.low_qword, 0, VERSION_BITS)

    @property
    def index(self) -> int:
        """The vnode index: position of the owning range's end in the sorted ring."""
        return _field(self.low_qword, INDEX_SHIFT, INDEX_BITS)

    @property
    def random_bits(self) -> int:
        return _field(self.low_qword, RANDOM_SHIFT, RANDOM_BITS)

    def hex(self) -> str:
        return "0x" + self.value.hex()

    def __bytes__(self) -> bytes:
        return self.value

    def __str__(self) -> str:
        return self.hex()

    def __lt__(self, other: StreamId) -> bool:
        if not isinstance(other, StreamId):
            return NotImplemented
        return self.value < other.value
