"""Sync sections: the chain of sync markers that follows the descriptor.

    int32 next | int32 CRC32(id_lo, id_hi, marker position) | section content up to `next`

Compressed segments add `int32 uncompressedLength` and store the content as one
compressed block. Positions handed out are logical: the layout an uncompressed segment
would have, which is what Cassandra and the `_cdc.idx` file count in.

Where the chain ends decides what is data: a zero marker, EOF or a section reaching
past `limit` ends reading cleanly. A damaged marker before `limit` is an error; after
it (or with no limit) it is the torn tail of a live segment and ends the chain. A zero
marker before `limit` is not an error: idx files rewritten at startup give the file
length, which lies past the chain of a preallocated segment.
"""
from __future__ import annotations

import mmap
import struct
import zlib
from dataclasses import dataclass
from functools import partial
from typing import Callable, Iterator

from .compression import DECOMPRESSORS
from .descriptor import Descriptor
from .errors import CorruptSegment, CrcMismatch, TruncatedSegment, UnsupportedSegment

MARKER_SIZE = 8
_MARKER = struct.Struct(">iI")
_MARKER_CRC_INPUT = struct.Struct(">III")
_INT32 = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class Section:
    marker: int  # file offset of the sync marker
    start: int  # logical position of the first entry
    end: int  # logical position where the section (and the next marker) starts
    # -> (buffer, base): the content, logical position x at buffer[x - base]; compressed
    # sections are decompressed only when loaded.
    load: Callable[[], tuple[bytes | mmap.mmap, int]]


def sections(buf, descriptor: Descriptor, segment: str, limit: int | None = None) -> Iterator[Section]:
    """Sections of the segment in `buf`, in order, up to the end of the marker chain."""
    compression = descriptor.compression
    decompress = None
    if compression is not None:
        decompress = DECOMPRESSORS.get(compression)
        if decompress is None:
            raise UnsupportedSegment(segment, 14, f"unsupported compressor {compression}")
    id_words = (descriptor.segment_id & 0xFFFFFFFF, (descriptor.segment_id >> 32) & 0xFFFFFFFF)
    file_length = len(buf)
    pos = logical = descriptor.header_length
    while True:
        durable = limit is not None and logical < limit
        if pos > file_length - MARKER_SIZE:
            if durable:
                raise TruncatedSegment(segment, pos, f"file ends before the durable limit {limit}")
            return
        nxt, crc = _MARKER.unpack_from(buf, pos)
        if crc != zlib.crc32(_MARKER_CRC_INPUT.pack(id_words[0], id_words[1], pos)):
            if (nxt == 0 and crc == 0) or not durable:
                return
            raise CrcMismatch(segment, pos, "sync marker CRC mismatch")
        header = MARKER_SIZE if decompress is None else MARKER_SIZE + 4
        if nxt > file_length:
            if durable or limit is None:
                raise TruncatedSegment(segment, pos, f"sync section ends at {nxt}, past EOF {file_length}")
            return
        if nxt < pos + header:
            if durable or limit is None:
                raise CorruptSegment(segment, pos, f"sync marker points backwards to {nxt}")
            return
        start = logical + MARKER_SIZE
        if decompress is None:
            end = nxt
        else:
            (length,) = _INT32.unpack_from(buf, pos + MARKER_SIZE)
            if length < 0:
                raise CorruptSegment(segment, pos + MARKER_SIZE, f"negative section length {length}")
            end = start + length
        if limit is not None and end > limit:
            return
        if decompress is None:  # entries are read in place, without copying the section
            yield Section(pos, start, end, partial(_in_place, buf))
        else:
            yield Section(pos, start, end,
                          partial(_decompress, decompress, buf, pos + header, nxt, start, end, segment))
        pos = nxt
        logical = end


def _in_place(buf) -> tuple[mmap.mmap, int]:
    return buf, 0


def _decompress(decompress, buf, begin: int, end: int, start: int, logical_end: int,
                segment: str) -> tuple[bytes, int]:
    length = logical_end - start
    try:
        data = decompress(bytes(buf[begin:end]), length)
    except ImportError:
        raise
    except Exception as exc:  # every codec has its own error type
        raise CorruptSegment(segment, begin, f"cannot decompress section: {exc}") from None
    if len(data) != length:
        raise CorruptSegment(segment, begin, f"section decompresses to {len(data)} bytes, expected {length}")
    return data, start
