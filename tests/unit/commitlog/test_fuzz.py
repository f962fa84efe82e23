"""Random and mutated bytes only ever produce the reader's typed errors."""
import random
import struct
import tempfile
import zlib
from pathlib import Path
from typing import Iterator

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connector.commitlog import CommitLogError, SegmentReader
from tests.unit.commitlog.test_rows import SCHEMA as ROWS_SCHEMA
from tests.unit.commitlog.testdata import SCHEMA_40, SEGMENT_40, skip_unknown

SEGMENT_ID = 1699285478684
DATA_END = 75019  # the zero marker at 75011 and its 8 bytes; zeros follow
ORIGINAL = SEGMENT_40.read_bytes()[:DATA_END]
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def entry_spans(segment: Path = SEGMENT_40, schema=SCHEMA_40, limit: int | None = None) -> list[tuple[int, int]]:
    """(offset, mutation size) of every entry of the segment (up to `limit`)."""
    with SegmentReader(segment, schema, on_schema_miss=skip_unknown) as reader:
        from connector.commitlog.entry import entries
        from connector.commitlog.sync import sections

        return [(offset, len(m)) for s in sections(reader._buf, reader.descriptor, "x", limit)
                for offset, m in entries(s, "x")]


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


def with_fixed_crcs(data: bytearray, offset: int, size: int) -> None:
    """Recompute the entry's CRCs so damage inside the mutation reaches the decoder."""
    size_bytes = bytes(data[offset:offset + 4])
    head = zlib.crc32(size_bytes)
    struct.pack_into(">I", data, offset + 8 + size, zlib.crc32(bytes(data[offset + 8:offset + 8 + size]), head))


def _row_spans() -> tuple[bytes, list[tuple[int, int]]]:
    """A segment of the hand-built mutations of every cell kind (test_rows), and the (entry offset,
    mutation size) of each."""
    from tests.unit.commitlog.segment_builder import segment
    from tests.unit.commitlog.test_rows import SEGMENT_ID as ROWS_ID, sample_mutations

    spans, pos = [], 28
    for m in sample_mutations():
        spans.append((pos, len(m)))
        pos += len(m) + 12
    return segment(ROWS_ID, [sample_mutations()]), spans


def damaged_rows(mutation: int, edits: list[tuple[int, int]]) -> bytes:
    """That segment with bytes of one mutation set to new values (positions taken modulo its size)
    and its CRCs fixed, so the damage reaches the decoder."""
    original, spans = _row_spans()
    data = bytearray(original)
    offset, size = spans[mutation % len(spans)]
    for position, value in edits:
        data[offset + 8 + position % size] = value
    with_fixed_crcs(data, offset, size)
    return bytes(data)


# Hypothesis' choice of damage for `damaged_rows`: which mutation, and 1-4 (position, byte) edits.
ROW_DAMAGE = st.tuples(st.integers(0, 3), st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)),
                                                   min_size=1, max_size=4))


def damaged_row_segments(seed: int, count: int) -> Iterator[bytes]:
    """`count` seeded copies of `damaged_rows`, each with 1-3 bytes of one mutation changed."""
    rng = random.Random(seed)
    for _ in range(count):
        yield damaged_rows(rng.randrange(4), [(rng.randrange(1 << 16), rng.randrange(256))
                                              for _ in range(rng.randint(1, 3))])


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
    from tests.unit.commitlog.test_rows import SEGMENT_ID as ROWS_ID

    for data in damaged_row_segments(1234, 400):
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / f"CommitLog-7-{ROWS_ID}.log"
            path.write_bytes(data)
            try:
                with SegmentReader(path, ROWS_SCHEMA) as reader:
                    list(reader.changes())
            except CommitLogError:
                pass
