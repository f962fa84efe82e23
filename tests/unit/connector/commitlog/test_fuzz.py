"""Random and mutated bytes only ever produce the reader's typed errors."""
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from connector.commitlog import CommitLogError, SegmentReader
from tests.unit.connector.commitlog.damage import (DATA_END, FUZZ, ORIGINAL, damaged_row_segments, entry_spans,
                                                  with_fixed_crcs)
from tests.unit.connector.commitlog.mutations import SCHEMA as ROWS_SCHEMA, SEGMENT_ID as ROWS_ID
from tests.unit.connector.commitlog.testdata import SCHEMA_40, skip_unknown

SEGMENT_ID = 1699285478684
ENTRIES = entry_spans()


def read_everything(data: bytes, schema=SCHEMA_40, limit=None) -> None:
    """Decode a segment fully; only CommitLogError may escape."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / f"CommitLog-7-{SEGMENT_ID}.log"
        path.write_bytes(data)
        try:
            with SegmentReader(path, schema, limit=limit, on_schema_miss=skip_unknown) as reader:
                for _ in reader.changes():
                    pass
        except CommitLogError as exc:
            assert exc.segment == str(path) and isinstance(exc.position, int)


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes(data):
    read_everything(data)


@FUZZ
@given(st.binary(min_size=4, max_size=200))
def test_random_sections_after_a_valid_header(tail):
    read_everything(ORIGINAL[:20] + tail, limit=None)
    read_everything(ORIGINAL[:20] + tail, limit=len(tail))


@FUZZ
@given(st.lists(st.tuples(st.integers(0, DATA_END - 1), st.integers(0, 255)), min_size=1, max_size=8),
       st.one_of(st.none(), st.integers(0, DATA_END + 100)))
def test_mutated_segment(changes, limit):
    data = bytearray(ORIGINAL)
    for position, value in changes:
        data[position] = value
    read_everything(bytes(data), limit=limit)


@FUZZ
@given(st.integers(0, DATA_END))
def test_truncated_segment(length):
    read_everything(ORIGINAL[:length], limit=DATA_END if length % 2 else None)


@FUZZ
@given(st.sampled_from(ENTRIES), st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)),
                                          min_size=1, max_size=4))
def test_mutated_mutation_with_valid_crcs(span, damage):
    offset, size = span
    data = bytearray(ORIGINAL)
    for relative, value in damage:
        data[offset + 8 + relative % size] = value
    with_fixed_crcs(data, offset, size)
    read_everything(bytes(data))


def test_seeded_random_mutations_decoded_with_a_rich_schema():
    """Mutate hand-built mutations of every cell kind; fixed CRCs push the damage into the decoder."""
    for data in damaged_row_segments(1234, 400):
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / f"CommitLog-7-{ROWS_ID}.log"
            path.write_bytes(data)
            try:
                with SegmentReader(path, ROWS_SCHEMA) as reader:
                    list(reader.changes())
            except CommitLogError:
                pass
