"""The native core's events against the event contract's Python writer: for every change of the
real segments (a Cassandra 5.0 table of every type, messaging 12 and 13, Cassandra's 4.0 segment),
of hand-built mutations of every cell kind and CQL type, and of seeded damaged copies, the framed
key and value bytes are identical to what `TableEncoder` and fastavro give — or both refuse the
entry with the same typed error."""
import pytest

from connector import native_core
from connector.commitlog import CommitLogError, SegmentReader, UnknownTable, skip_unknown_tables
from schemas import _native
from schemas.tables.model import SchemaSnapshot
from tests.unit.connector.commitlog.conftest import write_segment  # noqa: F401 (a fixture)
from tests.unit.connector.commitlog.native_oracle import SOURCE, TS_MS, event_rows, native_events as native, \
    outcome, reference_events as reference, schema_ids
from tests.unit.connector.commitlog.damage import damaged_row_segments
from tests.unit.connector.commitlog.mutations import SCHEMA as ROWS, SEGMENT_ID as ROWS_ID, sample_mutations
from tests.unit.connector.commitlog.segment_builder import segment
from tests.unit.connector.commitlog.testdata import (SCHEMA_40, SCHEMA_50, SCHEMA_50_NONE, SEGMENT_40, SEGMENT_50,
                                                    SEGMENT_50_NONE)

REAL = [(SEGMENT_50, SCHEMA_50), (SEGMENT_50_NONE, SCHEMA_50_NONE), (SEGMENT_40, SCHEMA_40)]


@pytest.mark.parametrize("path, schema", REAL, ids=lambda v: getattr(v, "name", ""))
def test_real_segments(path, schema):
    expected = reference(path, schema, skip_unknown=True)
    assert expected
    assert native(path, schema, skip_unknown=True) == expected


@pytest.mark.parametrize("version", [7, 8])
def test_every_cell_kind_and_type(write_segment, version):
    path = write_segment(segment(ROWS_ID, [sample_mutations()], version=version), ROWS_ID, version)
    expected = reference(path, ROWS)
    assert len(expected) >= 5
    assert native(path, ROWS) == expected


def test_seeded_damage_inside_mutations(write_segment):
    """400 copies of the hand-built mutations with 1-3 bytes changed and CRCs fixed: the same events,
    or both refuse the entry (a value the Python layer reads is written by neither)."""
    kinds = set()
    for case, data in enumerate(damaged_row_segments(2718, 400)):
        path = write_segment(data, ROWS_ID)
        expected = outcome(reference, path, ROWS)
        kinds.add(expected[0] if isinstance(expected, tuple) else "events")
        assert outcome(native, path, ROWS) == expected, case
    assert {"SchemaMismatch", "events"} <= kinds


def segment_events(path, schema, limit=None, max_events=None):
    """Every event of a segment by `Segment.events` in passes of at most `max_events`, entries of
    tables the schema lacks passed over; and the error that ended the last pass."""
    segment = _native.Segment(path)
    decoder, _ = native_core.decoder(schema, segment.messaging_version, SOURCE, schema_ids(schema))
    found, start, skip = [], None, None
    while True:
        read = segment.events(decoder, path.name, TS_MS, limit=limit, start=start, max_events=max_events, skip=skip)
        events, end, end_of_segment, resume, error = read.events, read.end, read.end_of_segment, read.resume, read.error
        found += event_rows(segment.segment_id, events)
        if isinstance(error, UnknownTable):
            start = skip = error.position
            continue
        if resume is None:
            return found, end, end_of_segment, error
        assert max_events is not None and len(events) >= max_events
        start, skip = resume, None


@pytest.mark.parametrize("max_events", [None, 1, 7, 100])
@pytest.mark.parametrize("path, schema", REAL, ids=lambda v: getattr(v, "name", ""))
def test_a_segment_in_passes(path, schema, max_events):
    events, end, end_of_segment, error = segment_events(path, schema, max_events=max_events)
    assert error is None
    assert events == reference(path, schema, skip_unknown=True)
    with SegmentReader(path, schema, on_schema_miss=skip_unknown_tables) as reader:
        list(reader.changes())
        assert end == reader.end


@pytest.mark.parametrize("damage", [19646 + 30, 1576 + 5, 40000])
def test_events_before_damage_are_returned_with_its_error(write_segment, damage):
    """A damaged entry or marker inside the durable part: the events before it, then its error."""
    data = bytearray(SEGMENT_40.read_bytes())
    data[damage] ^= 0x40
    path = write_segment(bytes(data), 1699285478684)
    reached = []
    with SegmentReader(path, SCHEMA_40, limit=75011, on_schema_miss=skip_unknown_tables) as reader:
        with pytest.raises(CommitLogError) as expected:
            reached += reader.changes()
    events, _, _, error = segment_events(path, SCHEMA_40, limit=75011, max_events=50)
    assert (type(error), error.position) == (type(expected.value), expected.value.position)
    assert [e[0] for e in events] == [tuple(c.position) for c in reached]
    assert damage != 19646 + 30 or len(events) > 50


def test_a_table_whose_types_the_schema_lacks_is_left_out_and_its_changes_meet_it_as_an_unknown_tables():
    """A schema read while a keyspace was dropped: its tables without its types. The decoder is made without the
    table that names a type (its changes then refresh the schema, as an unknown table's do); the other tables'
    changes are decoded as before."""
    lacking = SchemaSnapshot(SCHEMA_50.tables, {})
    without = SchemaSnapshot({i: t for i, t in SCHEMA_50.tables.items() if t.name != "everything"}, {})
    _, tables = native_core.decoder(lacking, 12, SOURCE)
    assert sorted(t.name for t in tables) == ["counters"]
    def unframed(events):  # the schema ids the helpers number the tables with differ between the two schemas
        return [(position, time, key[5:], value[5:]) for position, time, key, value in events]

    expected = unframed(reference(SEGMENT_50, without, skip_unknown=True))
    assert expected
    assert unframed(native(SEGMENT_50, lacking, skip_unknown=True)) == expected
