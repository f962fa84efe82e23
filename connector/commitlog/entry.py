"""Log entries inside a sync section (CommitLog.add).

    int32 size | uint32 CRC32(size) | size bytes mutation | uint32 CRC32(size, mutation)

The second CRC continues the first one.
"""
from __future__ import annotations

import struct
import zlib
from typing import Iterator

from .errors import CorruptSegment, CrcMismatch
from .sync import Section

ENTRY_OVERHEAD = 12
MIN_MUTATION_SIZE = 10  # Cassandra rejects anything smaller as garbage
_HEAD = struct.Struct(">iI")
_UINT32 = struct.Struct(">I")


def entries(section: Section, segment: str, start: int | None = None) -> Iterator[tuple[int, bytes]]:
    """(logical offset, mutation bytes) of each entry from logical position `start`.

    Returns True (as the generator's value) when a zero size marks the end of the segment.
    """
    data, base = section.load()
    i = (section.start if start is None else start) - base
    length = section.end - base
    while i + 4 <= length:
        offset = base + i
        if i + 8 > length:
            raise CorruptSegment(segment, offset, "entry header overruns its sync section")
        size, size_crc = _HEAD.unpack_from(data, i)
        if size == 0:
            return True
        head_crc = zlib.crc32(data[i:i + 4])
        if head_crc != size_crc:
            raise CrcMismatch(segment, offset, "entry size CRC mismatch")
        end = i + 8 + size
        if size < MIN_MUTATION_SIZE or end + 4 > length:
            raise CorruptSegment(segment, offset, f"invalid entry size {size}")
        mutation = bytes(data[i + 8:end])
        if zlib.crc32(mutation, head_crc) != _UINT32.unpack_from(data, end)[0]:
            raise CrcMismatch(segment, offset, "mutation CRC mismatch")
        yield offset, mutation
        i = end + 4
    return False
