"""Compressed segments: one block per sync section, positions in the uncompressed stream."""
import struct

import pytest

from connector.commitlog import CorruptSegment, SegmentReader, TruncatedSegment, UnsupportedSegment
from tests.unit.connector.commitlog.mutations import COMPRESSORS, SCHEMA, SECTIONS
from tests.unit.connector.commitlog.segment_builder import descriptor, entry, marker, segment

SEGMENT_ID = 1700000000002


def read(path, **options):
    with SegmentReader(path, SCHEMA, **options) as reader:
        return list(reader.changes())


def header_length(compressor: str) -> int:
    return len(descriptor(SEGMENT_ID, 7, {"compressionClass": compressor, "compressionParameters": {}}))


def logical_entry_offsets(start: int) -> list[int]:
    """Where each entry sits in the uncompressed layout that starts sections at `start`."""
    offsets, pos = [], start
    for mutations in SECTIONS:
        pos += 8
        for m in mutations:
            offsets.append(pos)
            pos += len(entry(m))
    return offsets


def values(changes):
    return [c.cells["v"].value for c in changes]


@pytest.mark.parametrize("compressor", COMPRESSORS)
def test_compressed_segment_reads_at_logical_positions(write_segment, compressor):
    path = write_segment(segment(SEGMENT_ID, SECTIONS, compressor=compressor), SEGMENT_ID)
    start = header_length(compressor)
    with SegmentReader(path, SCHEMA) as reader:
        assert reader.descriptor.compression == compressor
        changes = list(reader.changes())
        assert values(changes) == [1, 2, 3, 4, 5, 6]
        assert [c.position.entry_offset for c in changes] == logical_entry_offsets(start)
        for k in range(len(changes)):
            assert list(reader.changes(after=changes[k].position)) == changes[k + 1:]
        assert reader.end == start + sum(8 + sum(len(entry(m)) for m in ms) for ms in SECTIONS)


def test_limit_counts_logical_positions(write_segment):
    path = write_segment(segment(SEGMENT_ID, SECTIONS, compressor="LZ4Compressor"), SEGMENT_ID)
    first_section_end = header_length("LZ4Compressor") + 8 + sum(len(entry(m)) for m in SECTIONS[0])
    assert values(read(path, limit=first_section_end)) == [1, 2]
    assert values(read(path, limit=first_section_end - 1)) == []


def test_fully_qualified_compressor_name(write_segment):
    data = segment(SEGMENT_ID, SECTIONS, compressor="DeflateCompressor")
    header = descriptor(SEGMENT_ID, 7, {"compressionClass": "org.apache.cassandra.io.compress.DeflateCompressor",
                                        "compressionParameters": {}})
    old_header_length = len(descriptor(SEGMENT_ID, 7, {"compressionClass": "DeflateCompressor",
                                                       "compressionParameters": {}}))
    assert len(header) != old_header_length  # rebuild the sections for the longer header
    path = write_segment(header + _sections_after(data, old_header_length, len(header)), SEGMENT_ID)
    assert values(read(path)) == [1, 2, 3, 4, 5, 6]


def _sections_after(data: bytes, old_start: int, new_start: int) -> bytes:
    """Move the compressed sections of `data` to start at new_start, rewriting the markers."""
    out, pos, shift = bytearray(), old_start, new_start - old_start
    while pos + 8 <= len(data):
        nxt = struct.unpack_from(">i", data, pos)[0]
        out += marker(SEGMENT_ID, pos + shift, nxt + shift) + data[pos + 8:nxt]
        pos = nxt
    return bytes(out)


def test_torn_last_section_of_a_live_compressed_segment(write_segment):
    data = segment(SEGMENT_ID, SECTIONS, compressor="LZ4Compressor")
    path = write_segment(data[:-5], SEGMENT_ID)
    complete = header_length("LZ4Compressor") + 8 * 2 + sum(len(entry(m)) for s in SECTIONS[:2] for m in s)
    assert values(read(path, limit=complete)) == [1, 2, 3]
    with pytest.raises(TruncatedSegment):
        read(path)


def test_damaged_block_is_corrupt(write_segment):
    data = bytearray(segment(SEGMENT_ID, SECTIONS, compressor="DeflateCompressor"))
    data[40] ^= 0xFF
    with pytest.raises(CorruptSegment) as caught:
        read(write_segment(bytes(data), SEGMENT_ID))
    assert caught.value.position >= 20


def test_unknown_compressor(write_segment):
    header = descriptor(SEGMENT_ID, 7, {"compressionClass": "BrotliCompressor"})
    with pytest.raises(UnsupportedSegment, match="BrotliCompressor"):
        read(write_segment(header + marker(SEGMENT_ID, len(header), len(header) + 12) + bytes(4), SEGMENT_ID))


def test_checkpoint_in_a_compressed_segment(write_segment):
    path = write_segment(segment(SEGMENT_ID, SECTIONS, compressor="SnappyCompressor"), SEGMENT_ID)
    first_section_end = header_length("SnappyCompressor") + 8 + sum(len(entry(m)) for m in SECTIONS[0])
    with SegmentReader(path, SCHEMA, limit=first_section_end) as reader:
        assert values(reader.changes()) == [1, 2]
        checkpoint = reader.checkpoint
    with SegmentReader(path, SCHEMA) as reader:
        assert values(reader.changes(after=checkpoint)) == [3, 4, 5, 6]
