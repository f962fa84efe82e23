"""Cassandra's own CommitLogUpgradeTest segments decode to the expected cells and hash."""
import pytest

from connector.commitlog import EncryptedSegment, Op, SegmentReader
from tests.unit.connector.commitlog.testdata import LEGACY, SCHEMA_40, SEGMENT_40, skip_unknown, standard1


def upgrade_test_hash(changes) -> tuple[int, int]:
    """CommitLogUpgradeTest.Hasher over rows whose first clustering value starts with 'name'."""
    total = cells = 0
    for change in changes:
        if change.table.name != "Standard1" or not change.clustering:
            continue
        first = change.clustering[0]
        if first is None or not first.startswith("name"):
            continue
        for cell in change.cells.values():
            shift = 0
            for byte in cell.value:
                total = (total + (byte << shift)) & 0xFFFFFFFF
                shift = (shift + 8) & 0x1F
            cells += 1
    return cells, total - (1 << 32) if total >= 1 << 31 else total


def read_all(names, schema):
    changes = []
    for name in names:
        with SegmentReader(LEGACY / name, schema, on_schema_miss=skip_unknown) as reader:
            changes += reader.changes()
    return changes


@pytest.mark.parametrize("names, table_id, expected", [
    (["CommitLog-7-1699285478684.log"], "657e5210-7cbb-11ee-9858-c9aa1eb53e69", (355, -918027651)),
    (["CommitLog-6-1699279786262.log"], "241bcee0-7cae-11ee-8a02-094014504250", (98, -325801478)),
    (["CommitLog-6-1699284515156.log", "CommitLog-6-1699284515157.log"],
     "26be1710-7cb9-11ee-9fce-59fe9713701b", (1404, -576744414)),
])
def test_legacy_segment_hash(names, table_id, expected):
    assert upgrade_test_hash(read_all(names, standard1(table_id))) == expected


def test_40_segment_details():
    with SegmentReader(SEGMENT_40, SCHEMA_40, on_schema_miss=skip_unknown) as reader:
        assert reader.descriptor.version == 7
        assert reader.descriptor.messaging_version == 12
        assert reader.descriptor.header_length == 20
        changes = list(reader.changes())
        assert reader.end == 75011  # the empty closing section ends where the zero marker is
    assert len(changes) == 355
    # The smallest Standard1 entry, decoded by hand in the format reference (§17.1).
    smallest = [c for c in changes if c.position.entry_offset == 19646]
    assert len(smallest) == 1
    change = smallest[0]
    assert change.op is Op.INSERT
    assert change.partition_key == ("old-style mapred",)
    assert change.clustering == ("name0",)
    assert change.liveness.timestamp == 1699285480066000
    assert change.cells["val"].value == b"67"
    assert change.cells["val"].timestamp == 1699285480066000
    positions = [c.position for c in changes]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)


def test_encrypted_segment_is_a_typed_error():
    with pytest.raises(EncryptedSegment, match="unsupported: encrypted segment") as caught:
        SegmentReader(LEGACY / "CommitLog-6-1480001790339.log", SCHEMA_40)
    assert caught.value.segment.endswith("CommitLog-6-1480001790339.log")
