"""The real segments the unit tests read and the schemas they were written with: Cassandra's legacy test
segments (data/legacy, see its README) and two a 5.0 node wrote (`test_cassandra50_segment.py` and
`test_cassandra50_messaging13_segment.py` say what they hold)."""
import uuid
from pathlib import Path

from connector.commitlog import SegmentReader, skip_unknown_tables
from schemas.tables import Column, ColumnKind, SchemaSnapshot, Table, parse_ddl, parse_ddl_file

REPO_ROOT = Path(__file__).resolve().parents[4]
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
DDL_50 = DATA / "CommitLog-7-1795323511297.cql"
SCHEMA_50 = parse_ddl_file(DDL_50)


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
