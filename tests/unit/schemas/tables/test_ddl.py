"""DESCRIBE-style DDL becomes a schema snapshot."""
import uuid
from pathlib import Path

import pytest

from schemas.cql import UserType as UserTypeObject, parse_type
from schemas.tables import ClusteringOrder, ColumnKind, DdlError, parse_ddl, parse_ddl_file

SNAPSHOT = parse_ddl_file(Path(__file__).with_name("describe_output.cql"))
ORDERS_ID = uuid.UUID("5a1c395e-b41f-11e5-9f22-ba0be0483c18")


def test_tables_are_keyed_by_id():
    assert set(SNAPSHOT.tables) == {ORDERS_ID, uuid.UUID("7c1c395e-b41f-11e5-9f22-ba0be0483c18"),
                                    uuid.UUID("8d1c395e-b41f-11e5-9f22-ba0be0483c18")}
    orders = SNAPSHOT.table(ORDERS_ID)
    assert (orders.keyspace, orders.name, orders.cdc) == ("shop", "orders", True)
    assert SNAPSHOT.table_by_name("shop", "orders") is orders
    assert SNAPSHOT.table_by_name("shop", "Legacy").cdc is False
    assert SNAPSHOT.table_by_name("shop", "events").partition_key[0].name == "k"


def test_key_columns_in_order_with_clustering_order():
    orders = SNAPSHOT.table(ORDERS_ID)
    assert [(c.name, c.type) for c in orders.partition_key] == [("customer_id", "uuid"), ("region", "text")]
    assert [(c.name, c.clustering_order) for c in orders.clustering] == [
        ("placed_at", ClusteringOrder.DESC), ("order_id", ClusteringOrder.ASC)]
    assert [c.name for c in orders.static_columns] == ["region_note"]
    assert {c.name: c.type for c in orders.regular_columns} == {
        "Total": "decimal", "items": "map<text, int>", "tags": "set<text>", "notes": "list<text>",
        "shipping": "address", "info": 'frozen<"Customer Info">', "embedding": "vector<float, 3>"}


def test_dropped_columns():
    orders = SNAPSHOT.table(ORDERS_ID)
    dropped = orders.dropped_columns["legacy_flag"]
    assert (dropped.type, dropped.dropped_time, dropped.kind) == ("boolean", 1699285478684000, ColumnKind.REGULAR)
    assert orders.column("legacy_flag") is None


def test_user_types_resolve():
    types = SNAPSHOT.types_of("shop")
    assert types["address"].field_names == ("street", "postCode", "geo")
    info = parse_type(SNAPSHOT.table(ORDERS_ID).column("info").type, types, "shop")
    assert isinstance(info, UserTypeObject) and not info.multi_cell
    assert info.field_types[1].field_names == ("street", "postCode", "geo")
    assert parse_type("address", types, "shop").multi_cell


def test_snapshot_is_immutable():
    with pytest.raises(TypeError):
        SNAPSHOT.tables[uuid.uuid4()] = None
    with pytest.raises(AttributeError):
        SNAPSHOT.table(ORDERS_ID).name = "x"


@pytest.mark.parametrize("text, message", [
    ("CREATE TABLE ks.t (k int PRIMARY KEY);", "no ID"),
    ("CREATE TABLE t (k int PRIMARY KEY) WITH ID = 5a1c395e-b41f-11e5-9f22-ba0be0483c18;", "no keyspace"),
    ("CREATE TABLE ks.t (k int) WITH ID = 5a1c395e-b41f-11e5-9f22-ba0be0483c18;", "no PRIMARY KEY"),
    ("CREATE TABLE ks.t (k int, PRIMARY KEY (x)) WITH ID = 5a1c395e-b41f-11e5-9f22-ba0be0483c18;", "not defined"),
    ("ALTER TABLE ks.nope DROP x;", "unknown table"),
    ("CREATE TABLE ks.t (k int PRIMARY KEY", "ends early"),
    ("CREATE TABLE ks.t (k int PRIMARY KEY) WITH ID = 5a1c395e-b41f-11e5-9f22-ba0be0483c18; ALTER TABLE ks.t DROP z;",
     "unknown column"),
])
def test_errors(text, message):
    with pytest.raises(DdlError, match=message):
        parse_ddl(text)


def test_drop_of_several_columns_and_re_add():
    snapshot = parse_ddl("""
        CREATE TABLE ks.t (k int PRIMARY KEY, a int, b text) WITH ID = 5a1c395e-b41f-11e5-9f22-ba0be0483c18;
        ALTER TABLE ks.t DROP (a, b) USING TIMESTAMP 10;
        ALTER TABLE ks.t ADD a blob;
    """)
    table = snapshot.table(ORDERS_ID)
    assert sorted(table.dropped_columns) == ["a", "b"]
    assert table.column("a").type == "blob" and table.dropped_columns["a"].type == "int"
