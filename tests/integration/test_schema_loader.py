"""The schema loader reads the real cluster's system_schema into the snapshot the reader decodes with."""

from __future__ import annotations

import time

from schemas.cql.parser import parse_type
from schemas.cql.types import UnsupportedType
from schemas.tables.loader import read_snapshot
from schemas.tables.model import ClusteringOrder, ColumnKind


def test_loads_keys_order_kinds_types_and_cdc_flag(cql, keyspace: str) -> None:
    cql.execute(f"CREATE TYPE {keyspace}.address (street text, zip int)")
    cql.execute(
        f"CREATE TABLE {keyspace}.orders ("
        " tenant text, region int, placed timestamp, line int, note text static,"
        " items list<text>, tags frozen<set<int>>, home address, embedding vector<float, 3>,"
        " PRIMARY KEY ((tenant, region), placed, line))"
        " WITH CLUSTERING ORDER BY (placed DESC, line ASC) AND cdc = true"
    )
    cql.execute(f"CREATE TABLE {keyspace}.plain (id uuid PRIMARY KEY, v int)")

    version, snapshot = read_snapshot(cql)
    assert version is not None
    orders = snapshot.table_by_name(keyspace, "orders")
    assert orders is not None and orders.cdc is True
    assert snapshot.table(orders.id) is orders
    assert [c.name for c in orders.partition_key] == ["tenant", "region"]
    assert [(c.name, c.clustering_order) for c in orders.clustering] == [
        ("placed", ClusteringOrder.DESC), ("line", ClusteringOrder.ASC)]
    assert [c.name for c in orders.static_columns] == ["note"]
    assert orders.column("items").type == "list<text>"
    assert orders.column("tags").type == "frozen<set<int>>"
    assert orders.column("home").type == "address"
    assert orders.column("embedding").type == "vector<float, 3>"
    assert orders.column("items").kind is ColumnKind.REGULAR
    plain = snapshot.table_by_name(keyspace, "plain")
    assert plain is not None and plain.cdc is False

    address = snapshot.types_of(keyspace)["address"]
    assert address.field_names == ("street", "zip") and address.field_types == ("text", "int")


def test_dropped_columns_keep_their_type_and_time(cql, keyspace: str) -> None:
    cql.execute(f"CREATE TABLE {keyspace}.t (id int PRIMARY KEY, gone map<text, int>, kept int) WITH cdc = true")
    before = time.time_ns() // 1000
    cql.execute(f"ALTER TABLE {keyspace}.t DROP gone")
    after = time.time_ns() // 1000

    table = read_snapshot(cql)[1].table_by_name(keyspace, "t")
    assert table.column("gone") is None
    dropped = table.dropped_columns["gone"]
    assert dropped.type == "map<text, int>"
    # dropped_time is stored in milliseconds; allow for that truncation.
    assert before - 1000 <= dropped.dropped_time <= after + 1000


def test_every_type_in_the_cluster_parses(cql, keyspace: str) -> None:
    cql.execute(f"CREATE TYPE {keyspace}.point (x double, y double)")
    cql.execute(
        f"CREATE TABLE {keyspace}.all_types (k int PRIMARY KEY, a ascii, b bigint, c blob, d boolean,"
        " f date, g decimal, h double, i duration, j float, l inet,"
        " m smallint, n text, o time, p timestamp, q timeuuid, r tinyint, s uuid, t varint,"
        " u vector<float, 2>, v map<text, frozen<list<int>>>, w set<frozen<tuple<int, text>>>,"
        " x point, y frozen<point>, z tuple<int, point>)"
    )
    snapshot = read_snapshot(cql)[1]
    parsed = 0
    for table in snapshot.tables.values():
        types = snapshot.types_of(table.keyspace)
        for column in table.columns:
            try:
                parse_type(column.type, types, table.keyspace)
            except UnsupportedType:
                # Custom marshal classes exist only in a few system tables.
                assert table.keyspace.startswith("system"), (table.qualified_name, column.type)
            parsed += 1
    assert parsed > 100
