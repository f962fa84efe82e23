"""Block decompressors for compressed segments, one block per sync section.

Libraries are imported on first use so uncompressed segments need none of them.
"""
from __future__ import annotations

import zlib
from typing import Callable

# (compressed block, uncompressed length) -> uncompressed bytes
Decompressor = Callable[[bytes, int], bytes]


def _lz4(block: bytes, length: int) -> bytes:
    import lz4.block  # lz4-java block format: 4-byte little-endian length, then the raw block

    return lz4.block.decompress(block)


def _snappy(block: bytes, length: int) -> bytes:
    import cramjam  # snappy-java's raw (unframed) format

    return bytes(cramjam.snappy.decompress_raw(block))


def _deflate(block: bytes, length: int) -> bytes:
    return zlib.decompress(block)


def _zstd(block: bytes, length: int) -> bytes:
    import zstandard  # the frame may omit its content size, so bound the output

    return zstandard.ZstdDecompressor().decompress(block, max_output_size=length)


def _noop(block: bytes, length: int) -> bytes:
    return bytes(block)


DECOMPRESSORS: dict[str, Decompressor] = {
    "LZ4Compressor": _lz4,
    "SnappyCompressor": _snappy,
    "DeflateCompressor": _deflate,
    "ZstdCompressor": _zstd,
    "NoopCompressor": _noop,
}
