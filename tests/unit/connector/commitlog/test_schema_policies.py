"""Unknown tables, refreshed schemas and schemas that do not fit the bytes."""
import uuid

import pytest

from connector.commitlog import UNDECODABLE, Position, SchemaMismatch, SegmentReader, Undecodable, UnknownTable
from connector.commitlog.compression import DECOMPRESSORS
from connector.commitlog.layout import ColumnLayout
from connector.commitlog.unfiltered import read_clustering
from schemas.cql import parse_type
from schemas.tables import Column, ColumnKind, SchemaSnapshot, Table
from tests.unit.connector.commitlog.segment_builder import clustering
from tests.unit.connector.commitlog.testdata import SCHEMA_40, SEGMENT_40, skip_unknown

SYSTEM_LOCAL = uuid.UUID("7ad54392-bcdd-35a6-8417-4e047860b377")
STANDARD1 = uuid.UUID("657e5210-7cbb-11ee-9858-c9aa1eb53e69")


def test_policy_can_supply_a_refreshed_schema():
    """Standard1 is learnt at its first entry (and kept); system tables are skipped."""
    calls = []

    def refresh(unknown: UnknownTable):
        calls.append(unknown.table_id)
        return SCHEMA_40 if SCHEMA_40.table(unknown.table_id) else None

    with SegmentReader(SEGMENT_40, SchemaSnapshot(), on_schema_miss=refresh) as reader:
        changes = list(reader.changes())
        assert reader.schema is SCHEMA_40
    assert len(changes) == 355 and calls[0] == SYSTEM_LOCAL
    assert calls.count(STANDARD1) == 1


def test_a_refresh_that_still_lacks_the_table_raises():
    with SegmentReader(SEGMENT_40, SchemaSnapshot(), on_schema_miss=lambda unknown: SCHEMA_40) as reader:
        with pytest.raises(UnknownTable) as caught:
            list(reader.changes())
    assert caught.value.table_id == SYSTEM_LOCAL and caught.value.position == 28


def test_policy_may_raise_its_own_error():
    def stop(unknown):
        raise RuntimeError(f"stop at {unknown.position}")

    with SegmentReader(SEGMENT_40, SCHEMA_40, on_schema_miss=stop) as reader:
        with pytest.raises(RuntimeError, match="stop at 28"):
            list(reader.changes())


def wrong_standard1(**types: str) -> SchemaSnapshot:
    good = SCHEMA_40.table(STANDARD1)
    columns = tuple(Column(c.name, types.get(c.name, c.type), c.kind, c.position) for c in good.columns)
    return SchemaSnapshot.of([Table(good.keyspace, good.name, good.id, columns)])


@pytest.mark.parametrize("schema, message", [
    (wrong_standard1(col="bigint"), "does not fit"),  # a fixed 8-byte clustering value instead of text
    (wrong_standard1(val="uuid"), "does not fit"),
    (SchemaSnapshot.of([Table("Keyspace1", "Standard1", STANDARD1, (
        Column("key", "ascii", ColumnKind.PARTITION_KEY, 0), Column("col", "ascii", ColumnKind.CLUSTERING, 0),
        Column("other", "blob", ColumnKind.REGULAR)))]), "not in Keyspace1.Standard1"),
])
def test_schema_that_does_not_fit_is_a_typed_error(schema, message):
    with SegmentReader(SEGMENT_40, schema, on_schema_miss=skip_unknown) as reader:
        with pytest.raises(SchemaMismatch, match=message) as caught:
            list(reader.changes())
    assert caught.value.position == 1584 and caught.value.segment == str(SEGMENT_40)


def test_an_entry_the_policy_gives_up_on_comes_whole_and_the_read_goes_on():
    """The connector's answer to a miss no refresh can help: each such entry comes as an Undecodable
    holding its exact bytes (decoded with the right schema, they are the entry's changes)."""
    def give_up(miss):
        return UNDECODABLE if isinstance(miss, SchemaMismatch) else None

    with SegmentReader(SEGMENT_40, wrong_standard1(val="uuid"), on_schema_miss=give_up) as reader:
        given_up = list(reader.changes())
    with SegmentReader(SEGMENT_40, SCHEMA_40, on_schema_miss=skip_unknown) as reader:
        expected = list(reader.changes())
        decoder = reader._decoder
    entries = [item for item in given_up if isinstance(item, Undecodable)]
    assert entries[0].position == Position.whole_entry(entries[0].position.segment_id, 1584)
    assert entries[0].error.position == 1584 and len(entries) > 1
    assert given_up[-1].position.entry_offset > 1584  # the read went on
    for entry in entries:
        offset = entry.position.entry_offset
        again = decoder.decode(entry.mutation, offset)
        assert again and [(c.position, c.partition_key, c.cells) for c in again] == [
            (c.position, c.partition_key, c.cells) for c in expected if c.position.entry_offset == offset]


def test_a_policy_giving_the_snapshot_that_missed_hands_the_entry_over_whole():
    """A refresh that found nothing new cannot help: the entry comes whole, no retry for ever."""
    schema = wrong_standard1(val="uuid")
    with SegmentReader(SEGMENT_40, schema, on_schema_miss=lambda miss: schema if isinstance(
            miss, SchemaMismatch) else None) as reader:
        read = list(reader.changes())
    assert [item.error.position for item in read if isinstance(item, Undecodable)][0] == 1584


def test_more_than_32_clustering_values_use_several_headers():
    columns = [ColumnLayout(f"c{i}", parse_type("int" if i % 2 else "text")) for i in range(33)]
    values = [None if i == 3 else (b"" if i == 32 else (i.to_bytes(4, "big") if i % 2 else b"t%d" % i))
              for i in range(33)]
    raw = clustering(*values, fixed=tuple(bool(i % 2) for i in range(33)))
    decoded, end = read_clustering(raw, 0, columns)
    assert end == len(raw)
    assert decoded == tuple(None if i == 3 else ("" if i == 32 else (i if i % 2 else f"t{i}")) for i in range(33))


def test_zstd_frame_without_content_size():
    import zstandard

    content = b"entries " * 100
    block = zstandard.ZstdCompressor(write_content_size=False).compress(content)
    assert DECOMPRESSORS["ZstdCompressor"](block, len(content)) == content
