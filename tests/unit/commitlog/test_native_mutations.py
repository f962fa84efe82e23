"""The native core's mutations, partition updates, rows, markers and cells against the reference
decoder: every change of the real segments (Cassandra 4.0 and 5.0, messaging 12 and 13), of the
hand-built mutations of every cell kind (test_rows), of seeded damaged copies whose CRCs were fixed
so the damage reaches the decoder, and of damage Hypothesis chooses — the same changes, or the same
typed error at the same entry."""
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from connector.commitlog import SegmentReader, skip_unknown_tables
from tests.unit.commitlog import test_cassandra50_messaging13_segment as none_mode
from tests.unit.commitlog import test_cassandra50_segment as cassandra50
from tests.unit.commitlog.native_oracle import native_changes, native_events, outcome, reference_events
from tests.unit.commitlog.segment_builder import segment
from tests.unit.commitlog.test_fuzz import DATA_END, FUZZ, ORIGINAL, ROW_DAMAGE, ROWS_SCHEMA, damaged_row_segments, \
    damaged_rows
from tests.unit.commitlog.test_rows import SCHEMA as ROWS, SEGMENT_ID as ROWS_ID, sample_mutations
from tests.unit.commitlog.testdata import LEGACY, SCHEMA_40, SEGMENT_40, standard1


def reference(path, schema, limit=None, skip_unknown=False):
    with SegmentReader(path, schema, limit=limit,
                       on_schema_miss=skip_unknown_tables if skip_unknown else None) as reader:
        return list(reader.changes())


REAL = [
    (cassandra50.SEGMENT, cassandra50.SCHEMA),
    (none_mode.SEGMENT, none_mode.SCHEMA),
    (LEGACY / "CommitLog-7-1699285478684.log", SCHEMA_40),
    (LEGACY / "CommitLog-6-1699279786262.log", standard1("241bcee0-7cae-11ee-8a02-094014504250")),
    (LEGACY / "CommitLog-6-1699284515156.log", standard1("26be1710-7cb9-11ee-9fce-59fe9713701b")),
    (LEGACY / "CommitLog-6-1699284515157.log", standard1("26be1710-7cb9-11ee-9fce-59fe9713701b")),
]


@pytest.mark.parametrize("path, schema", REAL, ids=lambda v: getattr(v, "name", ""))
def test_real_segments(path, schema):
    assert native_changes(path, schema, skip_unknown=True) == reference(path, schema, skip_unknown=True)


def test_the_real_segments_hold_changes_of_every_kind():
    changes = [c for path, schema in REAL for c in reference(path, schema, skip_unknown=True)]
    assert len(changes) > 1000
    assert {c.op for c in changes} == {"insert", "update", "row_delete", "partition_delete", "range_delete"}


def test_unknown_table_is_the_same_error_at_the_same_entry():
    path, schema = REAL[0]
    expected = outcome(reference, path, schema)
    assert expected[0] == "UnknownTable"
    assert outcome(native_changes, path, schema) == expected


def test_every_cell_kind(write_segment):
    path = write_segment(segment(ROWS_ID, [sample_mutations()]), ROWS_ID)
    expected = reference(path, ROWS)
    assert {c.op for c in expected} == {"insert", "update", "partition_delete", "range_delete"}
    assert native_changes(path, ROWS) == expected


@pytest.mark.parametrize("version", [6, 7, 8])
def test_deletion_times_by_messaging_version(write_segment, version):
    path = write_segment(segment(ROWS_ID, [sample_mutations()], version=version), ROWS_ID, version)
    assert native_changes(path, ROWS) == reference(path, ROWS)


def test_seeded_damage_inside_mutations(write_segment):
    """400 copies of the hand-built mutations with 1-3 bytes changed and CRCs fixed."""
    kinds = set()
    for case, data in enumerate(damaged_row_segments(4321, 400)):
        path = write_segment(data, ROWS_ID)
        expected = outcome(reference, path, ROWS_SCHEMA)
        got = outcome(native_changes, path, ROWS_SCHEMA)
        kinds.add(expected[0] if isinstance(expected, tuple) else "read")
        assert got == expected, case
    assert {"SchemaMismatch", "read"} <= kinds


@FUZZ
@given(ROW_DAMAGE)
@example(damage=(0, [(2611, 241)]))  # a duration's months beyond 32 bits: once encoded by the native path only
def test_hypothesis_damage_inside_mutations(damage):
    """Damage Hypothesis chooses (and shrinks) inside a mutation with its CRCs fixed: the same changes
    and the same events byte for byte, or the same typed error at the same entry, from both decoders."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / f"CommitLog-7-{ROWS_ID}.log"
        path.write_bytes(damaged_rows(*damage))
        assert outcome(native_changes, path, ROWS_SCHEMA) == outcome(reference, path, ROWS_SCHEMA)
        assert outcome(native_events, path, ROWS_SCHEMA) == outcome(reference_events, path, ROWS_SCHEMA)


@FUZZ
@given(st.lists(st.tuples(st.integers(0, DATA_END - 1), st.integers(0, 255)), min_size=1, max_size=6))
def test_hypothesis_damage_anywhere_in_a_real_segment(edits):
    """Bytes of Cassandra's 4.0 segment changed anywhere, CRCs left as they are (framing damage
    mostly): the same changes before the damage and the same typed error at the same position."""
    data = bytearray(ORIGINAL)
    for position, value in edits:
        data[position] = value
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / SEGMENT_40.name
        path.write_bytes(data)
        assert outcome(native_changes, path, SCHEMA_40, skip_unknown=True) == \
            outcome(reference, path, SCHEMA_40, skip_unknown=True)
