"""The real segments the unit tests read and the schemas they were written with: Cassandra's legacy test
segments (data/legacy, see its README) and two a 5.0 node wrote (`test_cassandra50_segment.py` and
`test_cassandra50_messaging13_segment.py` say what they hold)."""
import uuid
from pathlib import Path

from connector.commitlog import SegmentReader, skip_unknown_tables
from schemas.tables import Column, ColumnKind, SchemaSnapshot, Table, parse_ddl

REPO_ROOT = Path(__file__).resolve().parents[3]
DATA = Path(__file__).resolve().parent / "data"
LEGACY = DATA / "legacy"
SEGMENT_40 = LEGACY / "CommitLog-7-1699285478684.log"


def standard1(table_id: str) -> SchemaSnapshot:
    """Keyspace1.Standard1 as CommitLogUpgradeTest creates it."""
    return SchemaSnapshot.of([Table("Keyspace1", "Standard1", uuid.UUID(table_id), (
        Column("key", "ascii", ColumnKind.PARTITION_KEY, 0),
        Column("col", "ascii", ColumnKind.CLUSTERING, 0),
        Column("val", "blob", ColumnKind.REGULAR),
        Column("val0", "blob", ColumnKind.REGULAR),
    ))])


SCHEMA_40 = standard1("657e5210-7cbb-11ee-9858-c9aa1eb53e69")


# The legacy tests' schemas lack the system tables.
skip_unknown = skip_unknown_tables


# Cassandra 5.0, storage_compatibility_mode CASSANDRA_4: segment format 7, messaging 12.
SEGMENT_50 = DATA / "CommitLog-7-1795323511297.log"
DDL_50 = """
CREATE KEYSPACE ringtail_decoder_check WITH replication = {'class': 'SimpleStrategy', 'replication_factor': '1'};
CREATE TYPE ringtail_decoder_check.addr (street text, zip int);
CREATE TABLE ringtail_decoder_check.everything (
    p1 int, p2 text, c1 int, c2 text, s text static,
    v_ascii ascii, v_bigint bigint, v_blob blob, v_boolean boolean, v_date date, v_decimal decimal,
    v_double double, v_duration duration, v_float float, v_inet inet, v_int int, v_smallint smallint,
    v_text text, v_time time, v_timestamp timestamp, v_timeuuid timeuuid, v_tinyint tinyint, v_uuid uuid,
    v_varint varint, v_vector vector<float, 3>, v_vtext vector<text, 2>,
    f_list frozen<list<int>>, f_set frozen<set<text>>, f_map frozen<map<text, int>>,
    f_tuple frozen<tuple<int, text>>, f_udt frozen<addr>,
    l list<text>, st set<int>, m map<text, int>, u addr, dropme int,
    PRIMARY KEY ((p1, p2), c1, c2)
) WITH ID = c61dbe20-e631-11f1-b597-43589d361815 AND CLUSTERING ORDER BY (c1 ASC, c2 DESC) AND cdc = true;
ALTER TABLE ringtail_decoder_check.everything DROP dropme USING TIMESTAMP 1795323688835000;
CREATE TABLE ringtail_decoder_check.counters (k int PRIMARY KEY, n counter)
    WITH ID = c62a4140-e631-11f1-b597-43589d361815 AND cdc = true;
"""
SCHEMA_50 = parse_ddl(DDL_50)


def changes_50() -> list:
    """Every change of SEGMENT_50 as the reference decoder reads it."""
    with SegmentReader(SEGMENT_50, SCHEMA_50, on_schema_miss=skip_unknown_tables) as reader:
        assert reader.descriptor.messaging_version == 12
        return list(reader.changes())


# Cassandra 5.0, storage_compatibility_mode NONE: segment format 8, messaging 13.
SEGMENT_50_NONE = DATA / "CommitLog-8-1795324415034.log"
SCHEMA_50_NONE = parse_ddl("""
CREATE KEYSPACE n WITH replication = {'class': 'SimpleStrategy', 'replication_factor': '1'};
CREATE TABLE n.t (k int, c int, v text, m map<text, int>, PRIMARY KEY (k, c))
    WITH ID = 8f474810-e633-11f1-b977-01b365fc61ce AND cdc = true;
""")
