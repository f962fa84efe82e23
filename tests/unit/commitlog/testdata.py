"""Locations of the shared test segments and the schemas they were written with."""
import os
import uuid
from pathlib import Path

from connector.commitlog import skip_unknown_tables
from connector.schema import Column, ColumnKind, SchemaSnapshot, Table

REPO_ROOT = Path(__file__).resolve().parents[3]


def testdata_dir() -> Path:
    """Shared test data: $RINGTAIL_TESTDATA, else ../shared/testdata next to the repository."""
    return Path(os.environ.get("RINGTAIL_TESTDATA", REPO_ROOT.parent / "shared" / "testdata"))


LEGACY = testdata_dir() / "cassandra-legacy-commitlog"
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
