"""CompositeType, the serialized form of a partition key of several columns: per component an unsigned
16-bit big-endian length, the component's bytes, and an end-of-component byte (0). A key of one column
is that column's bytes alone."""
from __future__ import annotations

import struct
from collections.abc import Sequence

from .types import CqlType, CqlValueError

_UINT16 = struct.Struct(">H")
_MAX_COMPONENT_LENGTH = 0xFFFF


def compose(components: Sequence[bytes]) -> bytes:
    parts = []
    for component in components:
        if len(component) > _MAX_COMPONENT_LENGTH:
            raise CqlValueError(f"a key component is limited to 65535 bytes, got {len(component)}")
        parts.append(_UINT16.pack(len(component)) + component + b"\x00")
    return b"".join(parts)


def decompose(key: bytes, count: int) -> list[bytes]:
    """The `count` components of a composite key; ValueError when it holds fewer or more."""
    components, p = [], 0
    for _ in range(count):
        if p + 2 > len(key):
            raise ValueError("composite partition key is shorter than its columns")
        (size,) = _UINT16.unpack_from(key, p)
        end = p + 2 + size
        if end >= len(key):
            raise ValueError("composite partition key is shorter than its columns")
        components.append(key[p + 2:end])
        p = end + 1  # end-of-component byte
    if p != len(key):
        raise ValueError("composite partition key has more components than the table")
    return components


def encode_partition_key(types: Sequence[CqlType], values: Sequence) -> bytes:
    """The serialized partition key of `values` (one per key column, none null)."""
    if len(values) != len(types):
        raise CqlValueError(f"{len(values)} values for {len(types)} key columns")
    if not types:
        raise CqlValueError("a partition key has at least one column")
    if any(v is None for v in values):
        raise CqlValueError("a partition key column cannot be null")
    components = [t.encode(v) for t, v in zip(types, values)]
    return components[0] if len(components) == 1 else compose(components)


def decode_partition_key(types: Sequence[CqlType], key: bytes) -> tuple:
    """The values of the partition key columns: the inverse of `encode_partition_key`."""
    if len(types) == 1:
        return (types[0].decode_or_empty(key),)
    return tuple(t.decode_or_empty(c) for t, c in zip(types, decompose(key, len(types))))
