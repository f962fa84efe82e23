"""Descriptor, sync markers and entries on the real 4.0.11 segment and damaged copies of it."""
import struct
import zlib

import pytest

from connector.commitlog import (CorruptSegment, CrcMismatch, SegmentReader, TruncatedSegment, UnknownTable,
                                 UnsupportedVersion, read_descriptor)
from connector.commitlog.sync import sections
from tests.unit.connector.commitlog.segment_builder import descriptor, marker
from tests.unit.connector.commitlog.testdata import SCHEMA_40, SEGMENT_40, skip_unknown

SEGMENT_ID = 1699285478684
MARKERS = [20, 467, 1576, 75003]  # section chain of the 4.0.11 segment; a zero marker at 75011
ORIGINAL = SEGMENT_40.read_bytes()


def all_changes(path, **options):
    with SegmentReader(path, SCHEMA_40, on_schema_miss=skip_unknown, **options) as reader:
        return list(reader.changes())


REFERENCE = all_changes(SEGMENT_40)


def test_header_and_its_crc():
    header = ORIGINAL[:20]
    assert header.hex(" ") == "00 00 00 07 00 00 01 8b a5 4e ad 1c 00 02 7b 7d 94 30 80 a5"
    parsed = read_descriptor(header, "x")
    assert (parsed.version, parsed.segment_id, parsed.parameters, parsed.header_length) == (7, SEGMENT_ID, {}, 20)
    # The CRC takes the id low word first and the parameter length as four bytes.
    assert zlib.crc32(bytes.fromhex("00000007 a54ead1c 0000018b 00000002 7b7d")) == 0x943080A5
    assert descriptor(SEGMENT_ID) == header


def test_header_crc_mismatch_names_file_and_position():
    damaged = bytearray(ORIGINAL[:20])
    damaged[14] ^= 0x01  # inside the parameters
    with pytest.raises(CrcMismatch) as caught:
        read_descriptor(bytes(damaged), "CommitLog-7-1.log")
    assert caught.value.position == 16 and caught.value.segment == "CommitLog-7-1.log"


@pytest.mark.parametrize("version", [5, 9, 1234])
def test_unknown_version(write_segment, version):
    path = write_segment(descriptor(42, version) + bytes(8), 42, version)
    with pytest.raises(UnsupportedVersion, match=f"version {version}") as caught:
        SegmentReader(path, SCHEMA_40)
    assert caught.value.segment == str(path)


def test_marker_chain():
    with SegmentReader(SEGMENT_40, SCHEMA_40) as reader:
        found = [(s.marker, s.start, s.end) for s in sections(reader._buf, reader.descriptor, "x")]
    assert found == [(m, m + 8, n) for m, n in zip(MARKERS, MARKERS[1:] + [75011])]
    assert ORIGINAL[20:28] == marker(SEGMENT_ID, 20, 467)


@pytest.mark.parametrize("limit", [0, 20, 100, 467, 1000, 1576, 75002, 75003, 75011, 1 << 20])
def test_limit_stops_cleanly_at_the_last_section_it_covers(limit):
    changes = all_changes(SEGMENT_40, limit=limit)
    covered = max([m for m in MARKERS + [75011] if m <= limit], default=0)
    assert changes == [c for c in REFERENCE if c.position.entry_offset < covered]


@pytest.mark.parametrize("cut", MARKERS[1:])
def test_zeroed_tail_ends_the_chain(write_segment, cut):
    live = ORIGINAL[:cut] + bytes(len(ORIGINAL) - cut)
    path = write_segment(live, SEGMENT_ID)
    assert all_changes(path) == [c for c in REFERENCE if c.position.entry_offset < cut]
    assert all_changes(path, limit=cut) == [c for c in REFERENCE if c.position.entry_offset < cut]


def test_torn_marker_past_the_limit_is_the_live_tail(write_segment):
    torn = bytearray(ORIGINAL)
    torn[1576:1584] = struct.pack(">iI", 75003, 0)  # `next` written, CRC not yet
    path = write_segment(bytes(torn), SEGMENT_ID)
    expected = [c for c in REFERENCE if c.position.entry_offset < 1576]
    assert all_changes(path) == expected
    assert all_changes(path, limit=1576) == expected
    with pytest.raises(CrcMismatch) as caught:
        all_changes(path, limit=75011)
    assert caught.value.position == 1576


def test_entry_crc_mismatch_inside_the_durable_part(write_segment):
    entry_offset = 19646  # the smallest Standard1 entry, 64 bytes of mutation
    damaged = bytearray(ORIGINAL)
    damaged[entry_offset + 30] ^= 0x40
    path = write_segment(bytes(damaged), SEGMENT_ID)
    with pytest.raises(CrcMismatch, match="mutation CRC") as caught:
        all_changes(path)
    assert caught.value.position == entry_offset and caught.value.segment == str(path)
    damaged[entry_offset + 30] ^= 0x40
    damaged[entry_offset + 3] ^= 0x01  # the size field
    with pytest.raises(CrcMismatch, match="size CRC"):
        all_changes(write_segment(bytes(damaged), SEGMENT_ID))


@pytest.mark.parametrize("length", [0, 3, 19, 500, 40000, 75002])
def test_truncated_file(write_segment, length):
    path = write_segment(ORIGINAL[:length], SEGMENT_ID)
    with pytest.raises(TruncatedSegment) as caught:
        all_changes(path)
    assert caught.value.segment == str(path)


def test_file_ending_inside_a_marker_ends_the_chain(write_segment):
    # Cassandra's rule: no room for a marker means no more data.
    assert all_changes(write_segment(ORIGINAL[:75005], SEGMENT_ID)) == REFERENCE


def test_truncated_file_with_a_limit_before_the_cut_reads_cleanly(write_segment):
    path = write_segment(ORIGINAL[:40000], SEGMENT_ID)
    assert all_changes(path, limit=1576) == [c for c in REFERENCE if c.position.entry_offset < 1576]
    with pytest.raises(TruncatedSegment):
        all_changes(path, limit=75011)


def test_marker_pointing_backwards_is_corrupt(write_segment):
    damaged = bytearray(ORIGINAL)
    damaged[467:471] = struct.pack(">i", 100)
    with pytest.raises(CorruptSegment) as caught:
        all_changes(write_segment(bytes(damaged), SEGMENT_ID))
    assert caught.value.position == 467


def test_file_name_must_match_the_header_id(write_segment):
    with pytest.raises(CorruptSegment, match="file name"):
        SegmentReader(write_segment(ORIGINAL, SEGMENT_ID + 1), SCHEMA_40)


def test_unknown_table_is_raised_with_its_position():
    with pytest.raises(UnknownTable) as caught:
        with SegmentReader(SEGMENT_40, SCHEMA_40) as reader:
            list(reader.changes())
    assert caught.value.position == 28  # the first entry: a system.local mutation
    assert str(caught.value.table_id) == "7ad54392-bcdd-35a6-8417-4e047860b377"


def test_resume_after_each_change():
    with SegmentReader(SEGMENT_40, SCHEMA_40, on_schema_miss=skip_unknown) as reader:
        for k in range(0, len(REFERENCE), 17):
            assert list(reader.changes(after=REFERENCE[k].position)) == REFERENCE[k + 1:]
        assert list(reader.changes(after=REFERENCE[-1].position)) == []


def test_resume_position_of_another_segment_is_rejected():
    with SegmentReader(SEGMENT_40, SCHEMA_40) as reader:
        with pytest.raises(ValueError):
            list(reader.changes(after=REFERENCE[0].position._replace(segment_id=1)))


def test_live_segment_read_again_with_a_larger_limit(write_segment):
    """A preallocated segment is mapped whole: later syncs become visible to the same reader."""
    path = write_segment(ORIGINAL[:1576] + bytes(len(ORIGINAL) - 1576), SEGMENT_ID)
    with SegmentReader(path, SCHEMA_40, limit=1576, on_schema_miss=skip_unknown) as reader:
        assert list(reader.changes()) == []  # only system tables so far
        with open(path, "r+b") as file:  # the writer syncs the next section
            file.seek(1576)
            file.write(ORIGINAL[1576:75011])
        reader.limit = 75003
        first = list(reader.changes())
        assert first == [c for c in REFERENCE if c.position.entry_offset < 75003] and first
        assert list(reader.changes(after=first[-1].position)) == []


@pytest.mark.parametrize("limit", [467, 1576, 75003])
def test_checkpoint_resumes_after_the_sections_read(limit):
    with SegmentReader(SEGMENT_40, SCHEMA_40, limit=limit, on_schema_miss=skip_unknown) as reader:
        first = list(reader.changes())
        checkpoint = reader.checkpoint
    assert checkpoint.entry_offset == limit
    with SegmentReader(SEGMENT_40, SCHEMA_40, on_schema_miss=skip_unknown) as reader:
        assert first + list(reader.changes(after=checkpoint)) == REFERENCE


def test_checkpoint_does_not_move_back_when_nothing_new_is_read():
    with SegmentReader(SEGMENT_40, SCHEMA_40, limit=1576, on_schema_miss=skip_unknown) as reader:
        list(reader.changes())
        checkpoint = reader.checkpoint
    with SegmentReader(SEGMENT_40, SCHEMA_40, limit=1576, on_schema_miss=skip_unknown) as reader:
        assert list(reader.changes(after=checkpoint)) == []
        assert reader.checkpoint == checkpoint
