"""A segment written by a real Cassandra 5.0 node with storage_compatibility_mode: NONE.

data/CommitLog-8-1795324415034.log is descriptor version 8, messaging 13 (unsigned 32-bit local
deletion times), cut after its zero marker. Besides system tables it holds:

    INSERT INTO n.t (k, c, v, m) VALUES (1, 2, 'none-mode', {'a': 1}) USING TIMESTAMP T AND TTL 600
    DELETE FROM n.t USING TIMESTAMP T+1 WHERE k = 1 AND c = 3
    DELETE FROM n.t USING TIMESTAMP T+2 WHERE k = 2
"""

from connector.commitlog import Op, SegmentReader, skip_unknown_tables
from tests.unit.connector.commitlog.testdata import SCHEMA_50_NONE, SEGMENT_50_NONE

T = 1_700_000_000_000_000


def test_messaging_13_segment_decodes():
    with SegmentReader(SEGMENT_50_NONE, SCHEMA_50_NONE, on_schema_miss=skip_unknown_tables) as reader:
        assert reader.descriptor.version == 8
        assert reader.descriptor.messaging_version == 13
        insert, row_delete, partition_delete = list(reader.changes())

    assert insert.op is Op.INSERT and insert.partition_key == (1,) and insert.clustering == (2,)
    assert insert.liveness.timestamp == T and insert.liveness.ttl == 600
    v = insert.cells["v"]
    assert (v.value, v.timestamp, v.ttl) == ("none-mode", T, 600)
    # Expiry = local write time + TTL, an unsigned 32-bit number of seconds in messaging 13.
    assert v.local_deletion_time == insert.liveness.expires_at == 1795325054
    m = insert.cells["m"]
    assert [(c.path, c.value, c.ttl) for c in m.cells] == [("a", 1, 600)]
    assert m.deletion.marked_for_delete_at == T - 1  # the INSERT overwrites the whole map

    assert row_delete.op is Op.ROW_DELETE and row_delete.clustering == (3,)
    assert row_delete.deletion.marked_for_delete_at == T + 1
    assert row_delete.deletion.local_deletion_time == 1795324454
    assert partition_delete.op is Op.PARTITION_DELETE and partition_delete.partition_key == (2,)
    assert partition_delete.deletion.marked_for_delete_at == T + 2
