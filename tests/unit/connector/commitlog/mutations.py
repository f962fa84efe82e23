"""Hand-built mutations of a rich schema — every cell kind and CQL type, statics, range tombstones,
collections — and the sections of the compressed segments: the inputs the commit-log reader tests share."""
import struct
import uuid

from schemas.cql import parse_type
from schemas.tables import parse_ddl
from tests.unit.connector.commitlog.segment_builder import (
    cell, clustering, complex_cells, deletion, mutation, partition_update, range_marker, row)
from tests.unit.schemas.cql.samples import SAMPLES, TIMEUUID, i32

TABLE_ID = uuid.UUID("0b0c3f40-7d00-11ee-b962-0242ac120002")
COUNTERS_ID = uuid.UUID("0b0c3f41-7d00-11ee-b962-0242ac120002")
SAMPLES_ID = uuid.UUID("0b0c3f42-7d00-11ee-b962-0242ac120002")
SEGMENT_ID = 1700000000001
TS = 1700000000000000  # µs
NOW = 1700000000  # s
DDL = f"""
CREATE KEYSPACE ks WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': '1'}};
CREATE TYPE ks.addr (street text, zip int);
CREATE TABLE ks.events (
    p1 int, p2 text, c1 int, c2 text,
    s text static,
    v int, t text, old blob,
    l list<text>, st set<int>, m map<text, int>, u addr,
    PRIMARY KEY ((p1, p2), c1, c2)
) WITH ID = {TABLE_ID} AND CLUSTERING ORDER BY (c1 ASC, c2 DESC) AND cdc = true;
ALTER TABLE ks.events DROP old USING TIMESTAMP {TS - 5};
CREATE TABLE ks.counters (k int PRIMARY KEY, n counter) WITH ID = {COUNTERS_ID};
CREATE TABLE ks.samples (k int PRIMARY KEY, {", ".join(f"c{i} {s[0]}" for i, s in enumerate(SAMPLES))})
    WITH ID = {SAMPLES_ID};
"""
SCHEMA = parse_ddl(DDL)
USER_TYPES = SCHEMA.types_of("ks")
KEY = struct.pack(">H", 4) + i32(1) + b"\x00" + struct.pack(">H", 1) + b"a" + b"\x00"  # CompositeType(1, 'a')
CK = clustering(i32(10), b"x", fixed=(True, False))


def update(body: bytes, **options) -> bytes:
    options.setdefault("regulars", ("v", "t"))
    options.setdefault("min_timestamp", TS)
    options.setdefault("min_ldt", NOW)
    return partition_update(TABLE_ID, KEY, body, **options)


SAMPLE_COLUMNS = tuple(f"c{i}" for i in range(len(SAMPLES)))


def samples_mutation() -> bytes:
    """One cell of every CQL type."""
    fixed = {c.name for c in SCHEMA.table(SAMPLES_ID).columns if parse_type(c.type, USER_TYPES, "ks").fixed_length}
    cells = b"".join(cell(raw, timestamp=TS, fixed=n in fixed, min_timestamp=TS)
                     for n, (_, raw, _, _) in zip(SAMPLE_COLUMNS, SAMPLES))
    return mutation(partition_update(SAMPLES_ID, i32(1), row(b"", cells, min_timestamp=TS), regulars=SAMPLE_COLUMNS,
                                     min_timestamp=TS))


def static_mutation() -> bytes:
    """A partition deletion, a static row and a row in one update."""
    static = row(b"", cell(b"S", fixed=False), timestamp=TS + 1, static=True, min_timestamp=TS)
    rows = row(CK, cell(i32(1), fixed=True), timestamp=TS + 2, missing=0b10, min_timestamp=TS)
    return mutation(update(rows, statics=("s",), partition_deletion=deletion(TS, NOW, TS, NOW), static_row=static,
                           rows=1))


def range_mutation() -> bytes:
    """[1 .. 5) deleted at TS, [5 .. (9, 'z')] at TS + 1: a start bound, a boundary, an end bound."""
    first, second = deletion(TS, NOW, TS, NOW), deletion(TS + 1, NOW, TS, NOW)
    body = (range_marker(1, clustering(i32(1), fixed=(True,)), 1, first)  # INCL_START_BOUND
            + range_marker(2, clustering(i32(5), fixed=(True,)), 1, first, second)  # EXCL_END_INCL_START
            + range_marker(6, clustering(i32(9), b"z", fixed=(True, False)), 2, second))  # INCL_END_BOUND
    return mutation(update(body))


T2 = TIMEUUID.bytes[:15] + b"\x70"


def collections_mutation() -> bytes:
    """A list overwrite, a set add and remove, a map put and a UDT field update."""
    live = deletion(-(1 << 63), 0x7FFFFFFF, TS, NOW)  # DeletionTime.LIVE: no complex deletion
    list_cells = complex_cells(cell(b"a", path=TIMEUUID.bytes), cell(b"b", path=T2),
                               deletion_bytes=deletion(TS - 1, NOW, TS, NOW))
    set_cells = complex_cells(cell(None, path=i32(3)),
                              cell(None, timestamp=TS, path=i32(4), deleted_at=NOW, min_timestamp=TS, min_ldt=NOW),
                              deletion_bytes=live)
    map_cells = complex_cells(cell(i32(1), path=b"k"), deletion_bytes=live)
    udt_cells = complex_cells(cell(i32(12345), path=struct.pack(">h", 1)), deletion_bytes=live)
    body = row(CK, list_cells + set_cells + map_cells + udt_cells, timestamp=TS, complex_deletion=True,
               min_timestamp=TS)
    return mutation(update(body, regulars=("l", "st", "m", "u")))


def sample_mutations() -> list[bytes]:
    return [samples_mutation(), static_mutation(), range_mutation(), collections_mutation()]


# The compressed segments' compressors, and sections of one insert per clustering value.
COMPRESSORS = ["LZ4Compressor", "SnappyCompressor", "DeflateCompressor", "ZstdCompressor", "NoopCompressor"]


def clustered_insert(value: int) -> bytes:
    body = row(clustering(i32(value), b"x", fixed=(True, False)), cell(i32(value), fixed=True), timestamp=TS,
               min_timestamp=TS)
    return mutation(partition_update(TABLE_ID, KEY, body, regulars=("v",), min_timestamp=TS))


SECTIONS = [[clustered_insert(1), clustered_insert(2)], [clustered_insert(3)],
            [clustered_insert(4), clustered_insert(5), clustered_insert(6)]]
