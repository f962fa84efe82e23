"""Rows, cells, deletions and markers of hand-built mutations, read through a real segment file;
every read is also made by the native core, which must give the same changes."""
import struct
import uuid

import pytest

from connector.commitlog import Op, SegmentReader
from connector.commitlog.render import ChangeRenderer
from schemas.tables import parse_ddl
from tests.unit.connector.commitlog.mutations import (
    CK, COUNTERS_ID, NOW, SAMPLE_COLUMNS, SAMPLES_ID, SCHEMA, SEGMENT_ID, T2, TS, collections_mutation,
    range_mutation, samples_mutation, static_mutation, update)
from tests.unit.connector.commitlog.native_oracle import native_changes
from tests.unit.connector.commitlog.segment_builder import (
    cell, clustering, deletion, descriptor, entry, marker, mutation, partition_update, row, segment, uvint)
from tests.unit.schemas.cql.samples import SAMPLES, TIMEUUID, i32


def read(write_segment, *mutations, version=7, schema=SCHEMA):
    path = write_segment(segment(SEGMENT_ID, [list(mutations)], version=version), SEGMENT_ID, version)
    with SegmentReader(path, schema) as reader:
        changes = list(reader.changes())
    assert native_changes(path, schema) == changes
    return changes


def only(changes):
    assert len(changes) == 1
    return changes[0]


def test_insert_with_composite_key_and_desc_clustering(write_segment):
    body = row(CK, cell(i32(7), fixed=True) + cell(b"hi", timestamp=TS + 3, min_timestamp=TS),
               timestamp=TS, min_timestamp=TS)
    change = only(read(write_segment, mutation(update(body, rows=1))))
    assert change.op is Op.INSERT
    assert change.partition_key == (1, "a")
    assert change.clustering == (10, "x")
    assert change.liveness.timestamp == TS
    assert change.cells["v"].value == 7 and change.cells["v"].timestamp == TS
    assert change.cells["t"].value == "hi" and change.cells["t"].timestamp == TS + 3
    assert change.table.name == "events" and change.table.cdc
    assert change.position == (SEGMENT_ID, 20 + 8, 0, 0)


def test_every_cql_type_as_a_cell(write_segment):
    change = only(read(write_segment, samples_mutation()))
    assert change.op is Op.UPDATE and change.partition_key == (1,)
    assert [change.cells[n].value for n in SAMPLE_COLUMNS] == [s[2] for s in SAMPLES]
    rendered = ChangeRenderer(SCHEMA).render(change, "seg")
    assert [rendered["cells"][n]["value"] for n in SAMPLE_COLUMNS] == [s[3] for s in SAMPLES]


def test_ttl_row_and_cells_inherit_it(write_segment):
    body = row(CK, cell(i32(7), fixed=True, ttl=60, use_row_ttl=True), timestamp=TS, ttl=60,
               expires_at=NOW + 60, min_timestamp=TS, min_ldt=NOW)
    change = only(read(write_segment, mutation(update(body, regulars=("v",)))))
    assert (change.liveness.ttl, change.liveness.expires_at) == (60, NOW + 60)
    assert (change.cells["v"].ttl, change.cells["v"].local_deletion_time) == (60, NOW + 60)


def test_expiring_cell_with_its_own_ttl(write_segment):
    body = row(CK, cell(b"x", timestamp=TS, ttl=30, expires_at=NOW + 30, min_timestamp=TS, min_ldt=NOW),
               min_timestamp=TS)
    change = only(read(write_segment, mutation(update(body, regulars=("t",)))))
    assert change.op is Op.UPDATE
    t = change.cells["t"]
    assert (t.value, t.ttl, t.local_deletion_time, t.tombstone) == ("x", 30, NOW + 30, False)
    assert ChangeRenderer(SCHEMA).render(change, "s")["cells"]["t"] == {
        "value": "x", "timestamp": TS, "ttl": 30, "expires_at": NOW + 30}


def test_cell_tombstone(write_segment):
    body = row(CK, cell(None, timestamp=TS, deleted_at=NOW, min_timestamp=TS, min_ldt=NOW), min_timestamp=TS)
    t = only(read(write_segment, mutation(update(body, regulars=("t",))))).cells["t"]
    assert (t.value, t.tombstone, t.local_deletion_time, t.timestamp) == (None, True, NOW, TS)


@pytest.mark.parametrize("shadowable", [False, True])
def test_row_deletion(write_segment, shadowable):
    body = row(CK, b"", row_deletion=deletion(TS, NOW, TS, NOW), shadowable=shadowable, missing=0b11,
               min_timestamp=TS)
    change = only(read(write_segment, mutation(update(body))))
    assert change.op is Op.ROW_DELETE and change.shadowable is shadowable
    assert (change.deletion.marked_for_delete_at, change.deletion.local_deletion_time) == (TS, NOW)
    assert change.cells == {}


def test_partition_deletion_then_static_row_then_rows(write_segment):
    changes = read(write_segment, static_mutation())
    assert [c.op for c in changes] == [Op.PARTITION_DELETE, Op.INSERT, Op.INSERT]
    assert [c.position.row_index for c in changes] == [0, 1, 2]
    assert changes[0].deletion.marked_for_delete_at == TS and changes[0].clustering == ()
    assert changes[1].static and changes[1].cells["s"].value == "S" and changes[1].clustering == ()
    assert changes[2].cells["v"].value == 1 and "t" not in changes[2].cells


def test_range_tombstones_with_bounds_and_boundaries(write_segment):
    changes = read(write_segment, range_mutation())
    assert [c.op for c in changes] == [Op.RANGE_DELETE, Op.RANGE_DELETE]
    a, b = changes
    assert (a.range_start.clustering, a.range_start.inclusive) == ((1,), True)
    assert (a.range_end.clustering, a.range_end.inclusive) == ((5,), False)
    assert a.deletion.marked_for_delete_at == TS and a.position.row_index == 1
    assert (b.range_start.clustering, b.range_start.inclusive) == ((5,), True)
    assert (b.range_end.clustering, b.range_end.inclusive) == ((9, "z"), True)
    assert b.deletion.marked_for_delete_at == TS + 1 and b.position.row_index == 2
    assert ChangeRenderer(SCHEMA).render(b, "s")["range"] == {
        "start": {"clustering": [5], "inclusive": True}, "end": {"clustering": [9, "z"], "inclusive": True}}


def test_collections_and_udt_cells(write_segment):
    change = only(read(write_segment, collections_mutation()))
    l, st, m, u = (change.cells[n] for n in ("l", "st", "m", "u"))
    assert l.deletion.marked_for_delete_at == TS - 1  # the list was overwritten
    assert [(c.path, c.value) for c in l.cells] == [(TIMEUUID, "a"), (uuid.UUID(bytes=T2), "b")]
    assert st.deletion is None and [(c.path, c.tombstone) for c in st.cells] == [(3, False), (4, True)]
    assert [(c.path, c.value) for c in m.cells] == [("k", 1)]
    assert [(c.path, c.value) for c in u.cells] == [("zip", 12345)]
    rendered = ChangeRenderer(SCHEMA).render(change, "s")["cells"]
    assert rendered["l"] == {"value": ["a", "b"], "timestamp": TS,
                             "deletion": {"timestamp": TS - 1, "local_deletion_time": NOW}}
    assert rendered["st"] == {"value": [3], "timestamp": TS, "removed": [4]}
    assert rendered["m"]["value"] == {"k": 1} and rendered["u"]["value"] == {"zip": 12345}


def test_dropped_column_decodes_with_its_dropped_type(write_segment):
    body = row(CK, cell(b"\x01\x02", timestamp=TS - 10, min_timestamp=TS - 10), min_timestamp=TS - 10)
    change = only(read(write_segment, mutation(update(body, regulars=("old",), min_timestamp=TS - 10))))
    assert change.cells["old"].value == b"\x01\x02"
    assert ChangeRenderer(SCHEMA).render(change, "s")["cells"]["old"]["dropped"] is True


def test_counter_update(write_segment):
    context = struct.pack(">hh", 1, -1) + TIMEUUID.bytes + struct.pack(">qq", 7, 5)
    body = row(b"", cell(context, timestamp=TS, min_timestamp=TS), min_timestamp=TS)
    up = partition_update(COUNTERS_ID, i32(3), body, regulars=("n",), min_timestamp=TS)
    change = only(read(write_segment, mutation(up)))
    assert change.partition_key == (3,) and change.cells["n"].value == 5


def test_empty_text_value_and_empty_clustering(write_segment):
    body = row(clustering(i32(10), b"", fixed=(True, False)), cell(b"", timestamp=TS, min_timestamp=TS),
               min_timestamp=TS)
    change = only(read(write_segment, mutation(update(body, regulars=("t",)))))
    assert change.clustering == (10, "") and change.cells["t"].value == ""


def test_several_updates_and_rows_have_distinct_positions(write_segment):
    r1 = row(CK, cell(i32(1), fixed=True), timestamp=TS, missing=0b10, min_timestamp=TS)
    r2 = row(clustering(i32(11), b"y", fixed=(True, False)), cell(i32(2), fixed=True), timestamp=TS,
             missing=0b10, min_timestamp=TS)
    counter_up = partition_update(COUNTERS_ID, i32(3), row(b"", cell(struct.pack(">q", 1), timestamp=TS,
                                                                     min_timestamp=TS), min_timestamp=TS),
                                  regulars=("n",), min_timestamp=TS)
    changes = read(write_segment, mutation(update(r1 + r2), counter_up), mutation(update(r1)))
    assert [c.position[1:] for c in changes] == [(28, 0, 0), (28, 0, 1), (28, 1, 0), (changes[3].position[1], 0, 0)]
    assert changes[3].position.entry_offset > 28


def test_messaging_13_reads_deletion_times_as_unsigned(write_segment):
    late = (1 << 31) + 1000  # after 2038: only representable unsigned
    body = row(CK, cell(None, timestamp=TS, deleted_at=late, min_timestamp=TS, min_ldt=NOW), min_timestamp=TS)
    up = mutation(update(body, regulars=("t",)))
    assert only(read(write_segment, up, version=8)).cells["t"].local_deletion_time == late
    assert only(read(write_segment, up, version=7)).cells["t"].local_deletion_time == late - (1 << 32)


def test_negative_timestamp_wraps_like_java_long(write_segment):
    body = row(CK, cell(i32(1), timestamp=-5, fixed=True, min_timestamp=TS), min_timestamp=TS)
    change = only(read(write_segment, mutation(update(body, regulars=("v",)))))
    assert change.cells["v"].timestamp == -5


def test_large_header_column_subsets(write_segment):
    wide = parse_ddl(f"CREATE TABLE ks.wide (k int PRIMARY KEY, {', '.join(f'x{i} int' for i in range(70))}) "
                     f"WITH ID = {SAMPLES_ID};")
    header = tuple(f"x{i}" for i in range(70))
    # 3 present (< 70 / 2): their indexes; 60 present: the 10 missing indexes.
    few = (uvint(67) + b"".join(uvint(i) for i in (2, 40, 69))
           + b"".join(cell(i32(i), timestamp=TS, fixed=True, min_timestamp=TS) for i in (2, 40, 69)))
    missing = range(0, 70, 7)
    many = (uvint(10) + b"".join(uvint(i) for i in missing)
            + b"".join(cell(i32(i), timestamp=TS, fixed=True, min_timestamp=TS) for i in range(70)
                       if i not in missing))
    rows = b"".join(b"\x00" + subset for subset in (few, many))  # flags 0: no HAS_ALL_COLUMNS
    up = partition_update(SAMPLES_ID, i32(1), rows, regulars=header, min_timestamp=TS)
    first, second = read(write_segment, mutation(up), schema=wide)
    assert {k: c.value for k, c in first.cells.items()} == {"x2": 2, "x40": 40, "x69": 69}
    assert list(second.cells) == [f"x{i}" for i in range(70) if i not in missing]



def test_memory_does_not_grow_with_the_segment(write_segment):
    """Decoding keeps one entry at a time: the traced peak stays flat as the segment grows."""
    import tracemalloc

    def peak_for(rows: int) -> int:
        inserts = [mutation(update(row(clustering(i32(i), b"x", fixed=(True, False)), cell(i32(i), fixed=True),
                                       timestamp=TS, min_timestamp=TS), regulars=("v",))) for i in range(rows)]
        path = write_segment(segment(SEGMENT_ID, [inserts[i:i + 100] for i in range(0, rows, 100)]), SEGMENT_ID)
        del inserts
        tracemalloc.start()
        with SegmentReader(path, SCHEMA) as reader:
            count = sum(1 for _ in reader.changes())
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert count == rows
        return peak

    small, large = peak_for(1_000), peak_for(20_000)
    assert large < 256 * 1024 and large < 2 * small + 64 * 1024


def test_zero_entry_size_ends_the_segment(write_segment):
    """Cassandra stops the whole segment at an entry size of 0, even if markers follow."""
    insert = mutation(update(row(CK, cell(i32(1), fixed=True), timestamp=TS, min_timestamp=TS), regulars=("v",)))
    content = entry(insert) + bytes(12)
    first = descriptor(SEGMENT_ID) + marker(SEGMENT_ID, 20, 28 + len(content)) + content
    data = first + segment(SEGMENT_ID, [[insert]])[len(descriptor(SEGMENT_ID)):]
    second = bytearray(data)
    second[len(first):len(first) + 8] = marker(SEGMENT_ID, len(first), len(first) + 8 + len(entry(insert)))
    with SegmentReader(write_segment(bytes(second), SEGMENT_ID), SCHEMA) as reader:
        assert [c.position.entry_offset for c in reader.changes()] == [28]
        assert reader.end == 28 + len(content)
