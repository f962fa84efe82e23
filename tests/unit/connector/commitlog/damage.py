"""Damage to segments for the decoders to meet: the legacy 4.0 segment and its entries, and seeded or
Hypothesis-chosen damage to the mutations of every cell kind (`mutations.py`) with the entry's CRCs fixed,
so the damage reaches the decoder rather than the framing."""
import random
import struct
import zlib
from pathlib import Path
from typing import Iterator

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from connector.commitlog import SegmentReader
from tests.unit.connector.commitlog.mutations import SEGMENT_ID as ROWS_ID, sample_mutations
from tests.unit.connector.commitlog.segment_builder import segment
from tests.unit.connector.commitlog.testdata import SCHEMA_40, SEGMENT_40, skip_unknown

DATA_END = 75019  # the zero marker at 75011 and its 8 bytes; zeros follow
ORIGINAL = SEGMENT_40.read_bytes()[:DATA_END]
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def entry_spans(path: Path = SEGMENT_40, schema=SCHEMA_40, limit: int | None = None) -> list[tuple[int, int]]:
    """(offset, mutation size) of every entry of the segment at `path` (up to `limit`)."""
    with SegmentReader(path, schema, on_schema_miss=skip_unknown) as reader:
        from connector.commitlog.entry import entries
        from connector.commitlog.sync import sections

        return [(offset, len(m)) for s in sections(reader._buf, reader.descriptor, "x", limit)
                for offset, m in entries(s, "x")]


def with_fixed_crcs(data: bytearray, offset: int, size: int) -> None:
    """Recompute the entry's CRCs so damage inside the mutation reaches the decoder."""
    size_bytes = bytes(data[offset:offset + 4])
    head = zlib.crc32(size_bytes)
    struct.pack_into(">I", data, offset + 8 + size, zlib.crc32(bytes(data[offset + 8:offset + 8 + size]), head))


def _row_spans() -> tuple[bytes, list[tuple[int, int]]]:
    """A segment of the hand-built mutations of every cell kind (`mutations.py`), and the (entry offset,
    mutation size) of each."""
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
