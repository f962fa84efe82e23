"""Cassandra's legacy test segments (data/legacy, see its README) and the schemas they were written with."""
import uuid
from pathlib import Path

from connector.commitlog import skip_unknown_tables
from connector.schema import Column, ColumnKind, SchemaSnapshot, Table

REPO_ROOT = Path(__file__).resolve().parents[3]
LEGACY = Path(__file__).resolve().parent / "data" / "legacy"
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
