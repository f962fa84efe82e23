"""Tables built from the schema rows a DDL statement writes to the commit log."""
import uuid

from connector.commitlog import Cell, Change, Op, Position
from connector.schema.logged import FlagRow, LoggedTables, column_row, type_row
from schemas.tables import Column, ColumnKind, Table, UserType

COLUMNS = Table("system_schema", "columns", uuid.uuid4(), (
    Column("keyspace_name", "text", ColumnKind.PARTITION_KEY, 0),
    Column("table_name", "text", ColumnKind.CLUSTERING, 0), Column("column_name", "text", ColumnKind.CLUSTERING, 1),
    Column("kind", "text", ColumnKind.REGULAR), Column("position", "int", ColumnKind.REGULAR),
    Column("type", "text", ColumnKind.REGULAR), Column("clustering_order", "text", ColumnKind.REGULAR)))
TABLES = Table("system_schema", "tables", uuid.uuid4(), (
    Column("keyspace_name", "text", ColumnKind.PARTITION_KEY, 0),
    Column("table_name", "text", ColumnKind.CLUSTERING, 0), Column("id", "uuid", ColumnKind.REGULAR),
    Column("cdc", "boolean", ColumnKind.REGULAR)))
FIRST, SECOND = uuid.uuid4(), uuid.uuid4()


def column(entry: int, table: str, name: str, kind: str, position: int, type_: str = "int") -> Change:
    cells = {"kind": Cell(kind, 5), "position": Cell(position, 5), "type": Cell(type_, 5),
             "clustering_order": Cell("none" if kind != "clustering" else "asc", 5)}
    return Change(Position(1, entry, 0, 0), COLUMNS, Op.INSERT, ("ks",), (table, name), cells)


def table_row(entry: int, table: str = "t") -> Change:
    return Change(Position(1, entry, 1, 0), TABLES, Op.INSERT, ("ks",), (table,), {})


def create(logged: LoggedTables, entry: int, table_id: uuid.UUID, *columns: tuple, table: str = "t") -> None:
    """A CREATE's rows, its columns first (a mutation's updates come in the order of their table ids)."""
    for name, kind, position in columns:
        row = column(entry, table, name, kind, position)
        logged.column_row(row, column_row(row))
    logged.table_row(table_row(entry, table), table_id, FlagRow(True, 1_000))


def test_a_created_table_is_built_from_its_rows_in_either_order():
    logged = LoggedTables()
    create(logged, 100, FIRST, ("k", "partition_key", 0), ("c", "clustering", 0), ("v", "regular", -1))
    table, flag = logged.table(FIRST)
    assert (table.keyspace, table.name, table.id, table.cdc) == ("ks", "t", FIRST, True) and flag.at == 1_000
    assert [c.name for c in table.partition_key] == ["k"] and [c.name for c in table.clustering] == ["c"]
    assert [(c.name, c.type) for c in table.regular_columns] == [("v", "int")]
    assert logged.table(SECOND) is None


def test_a_later_alter_adds_its_columns():
    logged = LoggedTables()
    create(logged, 100, FIRST, ("k", "partition_key", 0))
    row = column(200, "t", "w", "regular", -1, "text")
    logged.column_row(row, column_row(row))
    table, _ = logged.table(FIRST)
    assert [(c.name, c.type) for c in table.regular_columns] == [("w", "text")]


def test_a_table_created_again_keeps_only_its_own_columns():
    logged = LoggedTables()
    create(logged, 100, FIRST, ("k", "partition_key", 0), ("old", "regular", -1))
    create(logged, 300, SECOND, ("id", "partition_key", 0))
    assert logged.table(FIRST) is None
    table, _ = logged.table(SECOND)
    assert [c.name for c in table.columns] == ["id"]


def test_rows_without_the_key_columns_make_no_table():
    """An ALTER's rows of a table whose CREATE came before the log was read."""
    logged = LoggedTables()
    create(logged, 100, FIRST, ("w", "regular", -1))
    assert logged.table(FIRST) is None


def test_the_oldest_tables_are_forgotten_first():
    logged = LoggedTables(max_tables=2)
    for i, name in enumerate(("a", "b", "c")):
        create(logged, 100 + i, uuid.UUID(int=i + 1), ("k", "partition_key", 0), table=name)
    assert logged.table(uuid.UUID(int=1)) is None
    assert [logged.table(uuid.UUID(int=i))[0].name for i in (2, 3)] == ["b", "c"]


def test_a_deleted_column_row_is_no_column():
    deleted = Change(Position(1, 5, 0, 0), COLUMNS, Op.ROW_DELETE, ("ks",), ("t", "v"), {})
    assert column_row(deleted) is None


TYPES = Table("system_schema", "types", uuid.uuid4(), (
    Column("keyspace_name", "text", ColumnKind.PARTITION_KEY, 0), Column("type_name", "text", ColumnKind.CLUSTERING, 0),
    Column("field_names", "frozen<list<text>>", ColumnKind.REGULAR),
    Column("field_types", "frozen<list<text>>", ColumnKind.REGULAR)))


def test_the_last_row_of_a_type_is_kept_per_keyspace():
    logged = LoggedTables()
    for names, types in ((["street"], ["text"]), (["street", "zip"], ["text", "int"])):
        row = Change(Position(1, 9, 0, 0), TYPES, Op.INSERT, ("ks",), ("addr",),
                     {"field_names": Cell(names, 5), "field_types": Cell(types, 5)})
        logged.type_row(type_row(row))
    assert logged.types_of("ks") == {"addr": UserType("ks", "addr", ("street", "zip"), ("text", "int"))}
    assert logged.types_of("other") == {}
    assert type_row(Change(Position(1, 9, 0, 0), TYPES, Op.ROW_DELETE, ("ks",), ("addr",), {})) is None
