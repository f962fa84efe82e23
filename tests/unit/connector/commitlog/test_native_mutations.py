"""The native core's mutations, partition updates, rows, markers and cells against the reference
decoder: every change of the real segments (Cassandra 4.0 and 5.0, messaging 12 and 13), of the
hand-built mutations of every cell kind (test_rows), of seeded damaged copies whose CRCs were fixed
so the damage reaches the decoder, and of damage Hypothesis chooses — the same changes, or the same
typed error at the same entry."""
import struct
import tempfile
import uuid
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from connector.commitlog import skip_unknown_tables
from schemas.tables import parse_ddl
from tests.unit.connector.commitlog.damage import (DATA_END, FUZZ, ORIGINAL, ROW_DAMAGE, damaged_row_segments,
                                                  damaged_rows)
from tests.unit.connector.commitlog.mutations import (CK, SCHEMA as ROWS, SEGMENT_ID as ROWS_ID, TABLE_ID, TS,
                                                     sample_mutations)
from tests.unit.connector.commitlog.native_oracle import native_changes, native_events, outcome, reference_changes, \
    reference_events
from tests.unit.connector.commitlog.segment_builder import cell, mutation, partition_update, row, segment
from tests.unit.connector.commitlog.testdata import (LEGACY, SCHEMA_40, SCHEMA_50, SCHEMA_50_NONE, SEGMENT_40,
                                                    SEGMENT_50, SEGMENT_50_NONE, standard1)
from tests.unit.schemas.cql.samples import i32


def reference(path, schema, limit=None, skip_unknown=False):
    return list(reference_changes(path, schema, limit, skip_unknown_tables if skip_unknown else None))


REAL = [
    (SEGMENT_50, SCHEMA_50),
    (SEGMENT_50_NONE, SCHEMA_50_NONE),
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


# The first of the two components of ks.events' key, CompositeType(1, 'a') cut short.
SHORT_KEY = struct.pack(">H", 4) + i32(1) + b"\x00"


@pytest.mark.parametrize("rows", [0, 1])
@pytest.mark.parametrize("then_unknown", [False, True])
def test_a_key_that_does_not_fit_is_a_mismatch_with_or_without_rows_and_before_an_unknown_table(
        write_segment, rows, then_unknown):
    """The reference reader decodes an update's key as it reads it, rows or none, before it meets
    the next update's table id; the native core checks keys after decoding the mutation."""
    body = row(CK, cell(i32(7), fixed=True), timestamp=TS, missing=0b10, min_timestamp=TS) if rows else b""
    updates = [partition_update(TABLE_ID, SHORT_KEY, body, regulars=("v", "t"), min_timestamp=TS)]
    if then_unknown:
        updates.append(partition_update(uuid.UUID(int=7), i32(1), b""))
    path = write_segment(segment(ROWS_ID, [[mutation(*updates)]]), ROWS_ID)
    expected = outcome(reference, path, ROWS)
    assert expected[0] == "SchemaMismatch"
    assert outcome(native_changes, path, ROWS) == expected
    assert outcome(native_events, path, ROWS) == outcome(reference_events, path, ROWS) == expected


DEAD_ID = uuid.UUID("0b0c3f43-7d00-11ee-b962-0242ac120002")
DEAD = parse_ddl(f"""
CREATE KEYSPACE ks WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': '1'}};
CREATE TABLE ks.dead (k int PRIMARY KEY, a text, gone text) WITH ID = {DEAD_ID};
ALTER TABLE ks.dead DROP gone USING TIMESTAMP {TS};
""")


@pytest.mark.parametrize("regulars, values", [
    (("a", "a"), [b"\xff", b"ok"]),  # a damaged header names a column twice: its first cell is not written
    (("a", "gone"), [b"ok", b"\xff"]),  # a dropped column's cell is dead data
], ids=["a column twice", "a dropped column"])
def test_cells_no_event_carries_are_decoded_all_the_same(write_segment, regulars, values):
    """Text that is not UTF-8 in a cell the event leaves out: the reference reader decodes every
    cell it reads, so the entry does not fit the schema for both decoders."""
    cells = b"".join(cell(v, timestamp=TS - 10, min_timestamp=TS - 10) for v in values)
    body = row(b"", cells, min_timestamp=TS - 10)
    update = partition_update(DEAD_ID, i32(1), body, regulars=regulars, min_timestamp=TS - 10)
    path = write_segment(segment(ROWS_ID, [[mutation(update)]]), ROWS_ID)
    expected = outcome(reference, path, DEAD)
    assert expected[0] == "SchemaMismatch"
    assert outcome(native_changes, path, DEAD) == expected
    assert outcome(native_events, path, DEAD) == outcome(reference_events, path, DEAD) == expected


@pytest.mark.parametrize("version", [6, 7, 8])
def test_deletion_times_by_messaging_version(write_segment, version):
    path = write_segment(segment(ROWS_ID, [sample_mutations()], version=version), ROWS_ID, version)
    assert native_changes(path, ROWS) == reference(path, ROWS)


def test_seeded_damage_inside_mutations(write_segment):
    """400 copies of the hand-built mutations with 1-3 bytes changed and CRCs fixed."""
    kinds = set()
    for case, data in enumerate(damaged_row_segments(4321, 400)):
        path = write_segment(data, ROWS_ID)
        expected = outcome(reference, path, ROWS)
        got = outcome(native_changes, path, ROWS)
        kinds.add(expected[0] if isinstance(expected, tuple) else "read")
        assert got == expected, case
    assert {"SchemaMismatch", "read"} <= kinds


@FUZZ
@given(ROW_DAMAGE)
@example(damage=(0, [(2611, 241)]))  # a duration's months beyond 32 bits: once encoded by the native path only
@example(damage=(2, [(0, 2), (1037, 0)]))  # a key that does not fit, then an unknown table: once unknown natively
def test_hypothesis_damage_inside_mutations(damage):
    """Damage Hypothesis chooses (and shrinks) inside a mutation with its CRCs fixed: the same changes
    and the same events byte for byte, or the same typed error at the same entry, from both decoders."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / f"CommitLog-7-{ROWS_ID}.log"
        path.write_bytes(damaged_rows(*damage))
        assert outcome(native_changes, path, ROWS) == outcome(reference, path, ROWS)
        assert outcome(native_events, path, ROWS) == outcome(reference_events, path, ROWS)


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
