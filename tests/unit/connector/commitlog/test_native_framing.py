"""The native core's descriptor, sync sections and entries against the reference decoder, on
Cassandra's real segments, segments of every compressor, and damaged copies: the same entries at
the same logical offsets, or the same typed error at the same position."""
import random
import struct
from pathlib import Path

import pytest

from connector.commitlog import CommitLogError, TruncatedSegment, read_descriptor
from connector.commitlog.entry import entries
from connector.commitlog.sync import sections
from schemas import _native
from tests.unit.connector.commitlog.mutations import COMPRESSORS, SECTIONS
from tests.unit.connector.commitlog.segment_builder import segment
from tests.unit.connector.commitlog.testdata import SEGMENT_40

DATA = Path(__file__).resolve().parent / "data"
REAL = sorted(DATA.glob("*.log")) + sorted((DATA / "legacy").glob("*.log"))
ORIGINAL = SEGMENT_40.read_bytes()
SEGMENT_ID = 1699285478684


def reference(path: Path, limit=None, start=None):
    """(entries, end, end of segment) as the reference reader finds them."""
    buf = path.read_bytes()
    if not buf:
        raise TruncatedSegment(str(path), 0, "empty file")
    descriptor = read_descriptor(buf, str(path))
    found, end, end_of_segment = [], descriptor.header_length, False
    for section in sections(buf, descriptor, str(path), limit):
        if start is None or section.end > start:
            inside = start is not None and section.start <= start
            reading = entries(section, str(path), start if inside else None)
            while True:
                try:
                    found.append(next(reading))
                except StopIteration as stop:
                    end_of_segment = bool(stop.value)
                    break
        end = max(end, section.end)
        if end_of_segment:
            break
    return found, end, end_of_segment


def native(path: Path, limit=None, start=None):
    read = _native.Segment(path).entries(limit, start)
    if read.error is not None:
        raise read.error
    return read.entries, read.end, read.end_of_segment


def outcome(read, *args):
    """What a read gives: its result, or its error's class, segment and position."""
    try:
        return read(*args)
    except CommitLogError as error:
        return type(error).__name__, error.segment, error.position


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_real_segments(path):
    expected = outcome(reference, path)
    assert outcome(native, path) == expected
    if isinstance(expected[0], str):  # a segment the reader refuses (the encrypted one)
        return
    if expected[0]:
        middle = expected[0][len(expected[0]) // 2][0]
        assert native(path, None, middle) == reference(path, None, middle)
        assert native(path, middle + 1) == reference(path, middle + 1)
    opened = _native.Segment(path)
    assert opened.size == path.stat().st_size
    descriptor = read_descriptor(path.read_bytes(), str(path))
    assert (opened.segment_id, opened.version, opened.messaging_version, opened.header_length) == (
        descriptor.segment_id, descriptor.version, descriptor.messaging_version, descriptor.header_length)
    assert opened.compression == descriptor.compression


@pytest.mark.parametrize("compressor", COMPRESSORS)
def test_compressed_segments(write_segment, compressor):
    path = write_segment(segment(1700000000002, SECTIONS, compressor=compressor), 1700000000002)
    expected = reference(path)
    assert len(expected[0]) == 6
    assert native(path) == expected
    assert _native.Segment(path).compression == compressor
    for offset, _ in expected[0]:
        assert native(path, None, offset) == reference(path, None, offset)
    damaged = bytearray(path.read_bytes())
    damaged[-20] ^= 0xFF  # inside the last compressed block
    path.write_bytes(bytes(damaged))
    assert outcome(native, path) == outcome(reference, path)


@pytest.mark.parametrize("limit", [0, 20, 100, 467, 1000, 1576, 75002, 75003, 75011, 1 << 20])
def test_limits(limit):
    assert native(SEGMENT_40, limit) == reference(SEGMENT_40, limit)
    assert _native.Segment(SEGMENT_40).sections(limit) == [
        (s.marker, s.start, s.end) for s in sections(ORIGINAL, read_descriptor(ORIGINAL, "x"), "x", limit)]


def damaged(offset: int, replacement: bytes) -> bytes:
    data = bytearray(ORIGINAL)
    data[offset:offset + len(replacement)] = replacement
    return bytes(data)


DAMAGES = {
    "header crc": damaged(14, b"\x7c"),
    "version": damaged(0, struct.pack(">i", 9)),
    "torn marker": damaged(1576, struct.pack(">iI", 75003, 0)),
    "marker backwards": damaged(467, struct.pack(">i", 100)),
    "marker past eof": damaged(467, struct.pack(">i", 1 << 24)),
    "mutation crc": damaged(19646 + 30, bytes([ORIGINAL[19646 + 30] ^ 0x40])),
    "size crc": damaged(19646 + 3, bytes([ORIGINAL[19646 + 3] ^ 0x01])),
    "zeroed tail": ORIGINAL[:1576] + bytes(len(ORIGINAL) - 1576),
    "cut in a marker": ORIGINAL[:75005],
    **{f"cut at {n}": ORIGINAL[:n] for n in (0, 3, 19, 500, 40000, 75002)},
}


@pytest.mark.parametrize("name", DAMAGES)
@pytest.mark.parametrize("limit", [None, 1576, 75011])
def test_damaged_copies(write_segment, name, limit):
    path = write_segment(DAMAGES[name], SEGMENT_ID)
    expected = outcome(reference, path, limit)
    assert outcome(native, path, limit) == expected


def test_file_name_must_match_the_header_id(write_segment):
    path = write_segment(ORIGINAL, SEGMENT_ID + 1)
    assert outcome(native, path) == outcome(reference, path) == ("CorruptSegment", str(path), 4)


def test_random_byte_flips(write_segment):
    """Seeded: each copy has a few bytes changed anywhere in the durable part."""
    rng = random.Random(1789)
    kinds = set()
    for case in range(300):
        data = bytearray(ORIGINAL)
        for _ in range(rng.randint(1, 3)):
            data[rng.randrange(0, 75011)] = rng.randrange(256)
        path = write_segment(bytes(data), SEGMENT_ID)
        expected = outcome(reference, path, 75011)
        assert outcome(native, path, 75011) == expected, case
        kinds.add(expected[0] if isinstance(expected[0], str) else "read")
    assert {"CrcMismatch", "read"} <= kinds
