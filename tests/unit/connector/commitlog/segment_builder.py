"""Serialize commit log structures the way Cassandra writes them, for building test segments.

Only what the tests need: a descriptor, sync sections (plain or compressed), entries with
both CRCs, and the pieces of a mutation (partition update header, rows, cells, markers).
"""
from __future__ import annotations

import json
import struct
import uuid
import zlib

from schemas.cql.vint import write_uvint, write_vint

TIMESTAMP_EPOCH = 1442880000000000
DELETION_TIME_EPOCH = 1442880000


uvint, svint = write_uvint, write_vint  # the names the tests use


def vbytes(raw: bytes) -> bytes:
    return uvint(len(raw)) + raw


# ---- segment framing ---------------------------------------------------------------------

def descriptor(segment_id: int, version: int = 7, parameters: dict | None = None) -> bytes:
    params = json.dumps(parameters or {}, separators=(",", ":")).encode()
    crc = zlib.crc32(params, zlib.crc32(struct.pack(">iIII", version, segment_id & 0xFFFFFFFF,
                                                    segment_id >> 32, len(params))))
    return struct.pack(">iqH", version, segment_id, len(params)) + params + struct.pack(">I", crc)


def entry(mutation: bytes) -> bytes:
    size = struct.pack(">i", len(mutation))
    head_crc = zlib.crc32(size)
    return size + struct.pack(">I", head_crc) + mutation + struct.pack(">I", zlib.crc32(mutation, head_crc))


def marker(segment_id: int, position: int, next_position: int) -> bytes:
    crc = zlib.crc32(struct.pack(">III", segment_id & 0xFFFFFFFF, segment_id >> 32, position))
    return struct.pack(">iI", next_position, crc)


def segment(segment_id: int, sections: list[list[bytes]], version: int = 7, compressor: str | None = None,
            size: int | None = None) -> bytes:
    """A segment whose sections hold the given mutations; padded with zeros to `size`.

    Uncompressed segments end with a zero marker, as a closed mmap segment does.
    """
    params = {"compressionClass": compressor, "compressionParameters": {}} if compressor else {}
    out = bytearray(descriptor(segment_id, version, params))
    for mutations in sections:
        content = b"".join(entry(m) for m in mutations)
        position = len(out)
        if compressor is None:
            out += marker(segment_id, position, position + 8 + len(content)) + content
        else:
            block = compress(compressor, content)
            out += marker(segment_id, position, position + 12 + len(block))
            out += struct.pack(">i", len(content)) + block
    if compressor is None:
        out += bytes(8)
    if size is not None:
        out += bytes(size - len(out))
    return bytes(out)


def compress(compressor: str, content: bytes) -> bytes:
    if compressor == "LZ4Compressor":
        import lz4.block

        return lz4.block.compress(content, store_size=True)
    if compressor == "SnappyCompressor":
        import cramjam

        return bytes(cramjam.snappy.compress_raw(content))
    if compressor == "DeflateCompressor":
        return zlib.compress(content)
    if compressor == "ZstdCompressor":
        import zstandard

        return zstandard.ZstdCompressor(level=3, write_checksum=True).compress(content)
    if compressor == "NoopCompressor":
        return content
    raise ValueError(compressor)


# ---- mutation pieces ----------------------------------------------------------------------

def mutation(*updates: bytes) -> bytes:
    return uvint(len(updates)) + b"".join(updates)


def columns(*names: str) -> bytes:
    return uvint(len(names)) + b"".join(vbytes(n.encode()) for n in names)


def partition_update(table_id: uuid.UUID, key: bytes, body: bytes, *, regulars: tuple[str, ...] = (),
                     statics: tuple[str, ...] | None = None, min_timestamp: int = TIMESTAMP_EPOCH,
                     min_ldt: int = DELETION_TIME_EPOCH, min_ttl: int = 0, partition_deletion: bytes = b"",
                     static_row: bytes = b"", rows: int | None = None) -> bytes:
    """A partition update; `body` is the rows and markers, the end-of-partition byte is added."""
    flags = 0
    if partition_deletion:
        flags |= 0x04
    if statics is not None:
        flags |= 0x08
    if rows is not None:
        flags |= 0x10
    out = table_id.bytes + vbytes(key) + bytes([flags])
    out += uvint(min_timestamp - TIMESTAMP_EPOCH) + uvint((min_ldt - DELETION_TIME_EPOCH) & 0xFFFFFFFF)
    out += uvint(min_ttl)
    if statics is not None:
        out += columns(*statics)
    out += columns(*regulars) + partition_deletion + static_row
    if rows is not None:
        out += uvint(rows)
    return out + body + b"\x01"


def deletion(marked_for_delete_at: int, local_deletion_time: int, min_timestamp: int = TIMESTAMP_EPOCH,
             min_ldt: int = DELETION_TIME_EPOCH) -> bytes:
    return uvint(marked_for_delete_at - min_timestamp) + uvint(local_deletion_time - min_ldt)


def clustering(*values: bytes | None, fixed: tuple[bool, ...] = ()) -> bytes:
    """Clustering values (None = null, b'' = empty); fixed[i] marks fixed-length types."""
    out = b""
    for batch in range(0, len(values), 32):
        header = 0
        body = b""
        for i, value in enumerate(values[batch:batch + 32]):
            if value is None:
                header |= 1 << (2 * i + 1)
            elif value == b"":
                header |= 1 << (2 * i)
            else:
                body += value if (fixed[batch + i] if fixed else False) else vbytes(value)
        out += uvint(header) + body
    return out


def cell(value: bytes | None = None, *, timestamp: int | None = None, fixed: bool = False,
         path: bytes | None = None, deleted_at: int | None = None, ttl: int | None = None,
         expires_at: int | None = None, use_row_ttl: bool = False, min_timestamp: int = TIMESTAMP_EPOCH,
         min_ldt: int = DELETION_TIME_EPOCH) -> bytes:
    """A cell; timestamp None means USE_ROW_TIMESTAMP."""
    flags = 0
    if deleted_at is not None:
        flags |= 0x01
    if ttl is not None:
        flags |= 0x02
    if not value:
        flags |= 0x04
    if timestamp is None:
        flags |= 0x08
    if use_row_ttl:
        flags |= 0x10
    out = bytes([flags])
    if timestamp is not None:
        out += uvint(timestamp - min_timestamp)
    if (deleted_at is not None or ttl is not None) and not use_row_ttl:
        out += uvint((deleted_at if deleted_at is not None else expires_at) - min_ldt)
        if ttl is not None:
            out += uvint(ttl)
    if path is not None:
        out += vbytes(path)
    if value:
        out += value if fixed else vbytes(value)
    return out


def row(clustering_bytes: bytes, cells: bytes, *, timestamp: int | None = None, ttl: int | None = None,
        expires_at: int | None = None, row_deletion: bytes = b"", shadowable: bool = False,
        missing: int | None = None, complex_deletion: bool = False, static: bool = False,
        min_timestamp: int = TIMESTAMP_EPOCH, min_ldt: int = DELETION_TIME_EPOCH) -> bytes:
    """A row; `missing` is the column subset bitmap (None = HAS_ALL_COLUMNS)."""
    flags = 0x20 if missing is None else 0
    ext = (0x01 if static else 0) | (0x02 if shadowable else 0)
    if timestamp is not None:
        flags |= 0x04
    if ttl is not None:
        flags |= 0x08
    if row_deletion:
        flags |= 0x10
    if complex_deletion:
        flags |= 0x40
    if ext:
        flags |= 0x80
    out = bytes([flags]) + (bytes([ext]) if ext else b"") + (b"" if static else clustering_bytes)
    if timestamp is not None:
        out += uvint(timestamp - min_timestamp)
        if ttl is not None:
            out += uvint(ttl) + uvint(expires_at - min_ldt)
    out += row_deletion
    if missing is not None:
        out += uvint(missing)
    return out + cells


def range_marker(kind: int, prefix: bytes, count: int, *deletions: bytes) -> bytes:
    """A range tombstone bound (one deletion) or boundary (two)."""
    return b"\x02" + bytes([kind]) + struct.pack(">H", count) + prefix + b"".join(deletions)


def complex_cells(*cells: bytes, deletion_bytes: bytes | None = None) -> bytes:
    return (deletion_bytes or b"") + uvint(len(cells)) + b"".join(cells)
