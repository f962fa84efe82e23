"""Reading system_schema while a DDL statement reaches it table by table."""
import uuid
from collections import namedtuple

from schemas.tables.loader import read_snapshot

TableRow = namedtuple("TableRow", "keyspace_name table_name id cdc altered_at")
ColumnRow = namedtuple("ColumnRow", "keyspace_name table_name column_name kind position clustering_order type")
DroppedRow = namedtuple("DroppedRow", "keyspace_name table_name column_name dropped_ms kind type")
VersionRow = namedtuple("VersionRow", "schema_version")
TABLE_ID, VERSION = uuid.uuid4(), uuid.uuid4()
KEY = ColumnRow("ks", "t", "id", "partition_key", 0, "none", "int")
V = ColumnRow("ks", "t", "v", "regular", -1, "none", "text")
BEFORE = {"columns": [KEY, V], "dropped_columns": []}
# `ALTER TABLE ks.t DROP v` half applied: gone from `columns`, not yet in `dropped_columns`.
TORN = {"columns": [KEY], "dropped_columns": []}
AFTER = {"columns": [KEY], "dropped_columns": [DroppedRow("ks", "t", "v", 5, "regular", "text")]}


class Session:
    """Answers the loader's queries from one state of system_schema per read, the version unchanged
    (the cluster bumps it only once the statement is applied)."""

    def __init__(self, *states: dict) -> None:
        self.states, self.reads = list(states), 0

    def execute(self, query: str, *args):
        if "system.local" in query:
            return _Rows([VersionRow(VERSION)])
        table = query.split("FROM system_schema.")[1].split()[0]
        state = self.states[min(self.reads, len(self.states) - 1)]
        rows = {"tables": [TableRow("ks", "t", TABLE_ID, True, 1)], "views": [], "types": [], **state}[table]
        if table == "types":  # the last query of a read
            self.reads += 1
        return _Rows(rows)


class _Rows(list):
    def one(self):
        return self[0] if self else None


def test_a_read_catching_a_statement_half_applied_is_read_again():
    version, snapshot = read_snapshot(Session(TORN, AFTER, AFTER))
    table = snapshot.table(TABLE_ID)
    assert version == VERSION and [c.name for c in table.columns] == ["id"] and "v" in table.dropped_columns


def test_two_reads_that_agree_are_the_snapshot():
    session = Session(BEFORE, BEFORE, AFTER)
    assert [c.name for c in read_snapshot(session)[1].table(TABLE_ID).columns] == ["id", "v"]
    assert session.reads == 2
