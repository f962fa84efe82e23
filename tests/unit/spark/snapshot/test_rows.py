"""A snapshot's result rows (the serialized values Cassandra returns) → log rows with operation `read`."""
from __future__ import annotations

import datetime as dt
import json
import uuid

import numpy as np
import pytest

from schemas.cql import CqlValueError, Duration, parse_type
from schemas.cql.composite import compose
from schemas.tables.model import Column, ColumnKind, Table, UserType
from spark import rows as R
from spark.snapshot.raw import RowsSection
from spark.snapshot.rows import TableRows
from spark.streams.generations import Generation
from spark.streams.tokens import tokens_of_keys
from spark.streams.topology import build_topology_description

GENERATION = Generation(1_700_000_000_000_000, build_topology_description({"n1": (-100, 100)}, shards=2, rand=3))
VERSION_US = 1_800_000_000_000_000
P, K, S, R_ = ColumnKind.PARTITION_KEY, ColumnKind.CLUSTERING, ColumnKind.STATIC, ColumnKind.REGULAR


def table(*columns: Column) -> Table:
    return Table("shop", "orders", uuid.uuid4(), columns)


def enc(type_text: str, value) -> bytes:
    return parse_type(type_text).encode(value)


def big(n: int) -> bytes:
    return n.to_bytes(8, "big", signed=True)


def at_micros(micros: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=micros)


def test_a_row_of_every_kind_of_column_reads_as_the_log_writes_it():
    t = table(Column("id", "int", P, 0), Column("day", "text", P, 1), Column("line", "int", K, 0),
              Column("owner", "text", S), Column("at", "timestamp", R_), Column("tags", "set<text>", R_),
              Column("qty", "map<text, int>", R_), Column("prices", "list<decimal>", R_),
              Column("pair", "frozen<tuple<int, blob>>", R_))
    rows = TableRows(t, {})
    key = [enc("int", 7), enc("text", "mon")]
    partition_key = compose(key)
    token = int(tokens_of_keys([partition_key])[0])
    at = dt.datetime(2026, 11, 1, 9, 30, 0, 123000, tzinfo=dt.timezone.utc)
    raw = (big(token), *key, enc("int", 1),
           enc("text", "ann"), big(10), (3600).to_bytes(4, "big"),  # owner, with a TTL
           enc("timestamp", at), big(30), None,  # at
           enc("set<text>", ["a", "b"]), big(20),  # tags: a collection has no TTL selected
           enc("map<text, int>", {"x": 1}), big(25),
           enc("list<decimal>", ["1.50", "-2"]), big(40),
           None, None, None)  # pair: null
    [row] = rows.log_rows([raw], GENERATION, VERSION_US).to_pylist()
    assert row["cdc$operation"] == R.ROW_READ
    assert json.loads(row["key"]) == {"id": 7, "day": "mon", "line": 1}
    assert {k: json.loads(v) for k, v in row["columns"]} == {
        "owner": "ann", "at": int(at.timestamp() * 1000), "tags": ["a", "b"], "qty": [["x", 1]],
        "prices": ["1.50", "-2"]}
    assert row["write_time_us"] == 40  # the newest cell's
    assert row["write_time"] == at_micros(40)
    assert row["cdc$ttl"] == 3600
    assert (row["partition_key"], row["token"]) == (partition_key, token)
    assert row["cdc$stream_id"] == GENERATION.streams_for_tokens(np.array([token]))[0].tobytes()
    assert row["generation"] == at_micros(GENERATION.timestamp)
    assert row["cdc$time"].startswith(str(uuid.UUID(row["cdc$time"])))  # a valid timeuuid
    assert uuid.UUID(row["cdc$time"]).version == 1


def test_a_row_of_key_only_takes_the_version_time_and_a_static_only_partition_has_no_clustering():
    t = table(Column("id", "bigint", P, 0), Column("line", "int", K, 0), Column("owner", "text", S))
    rows = TableRows(t, {})
    key = enc("bigint", 5)
    token = big(int(tokens_of_keys([key])[0]))
    key_only, static_only = rows.log_rows([(token, key, enc("int", 2), None, None, None),
                                           (token, key, None, enc("text", "bo"), big(9), None)],
                                          GENERATION, VERSION_US).to_pylist()
    assert (json.loads(key_only["key"]), key_only["columns"], key_only["write_time_us"]) == (
        {"id": 5, "line": 2}, [], VERSION_US)
    assert (json.loads(static_only["key"]), static_only["write_time_us"]) == ({"id": 5}, 9)
    assert key_only["change_id"] != static_only["change_id"]


def test_the_statement_selects_each_cells_write_time_and_the_ttl_of_single_cell_columns_only():
    t = table(Column("Id", "int", P, 0), Column("tags", "set<text>", R_), Column("n", "int", R_))
    rows = TableRows(t, {})
    assert rows.select == ('SELECT token("Id"), "Id", tags, maxwritetime(tags), n, maxwritetime(n), ttl(n)'
                           ' FROM shop.orders WHERE token("Id") > ? AND token("Id") <= ?')
    assert rows.probe.endswith('WHERE token("Id") > ? AND token("Id") <= ? PER PARTITION LIMIT 1 LIMIT ?')


def ttls(*values: int | None) -> bytes:
    """ttl() of a multi-cell column: a list<int>, null for an element without a TTL."""
    return len(values).to_bytes(4, "big") + b"".join(
        b"\xff\xff\xff\xff" if v is None else (4).to_bytes(4, "big") + v.to_bytes(4, "big") for v in values)


def test_for_a_mirror_each_row_carries_its_cells_with_their_write_times_and_ttls():
    t = table(Column("id", "int", P, 0), Column("line", "int", K, 0), Column("owner", "text", S),
              Column("note", "text", R_), Column("tags", "set<text>", R_), Column("items", "list<int>", R_))
    rows = TableRows(t, {}, cells=True)
    assert rows.select == ("SELECT token(id), id, line, owner, maxwritetime(owner), ttl(owner), note,"
                           " maxwritetime(note), ttl(note), tags, maxwritetime(tags), writetime(tags), ttl(tags),"
                           " items,"
                           " maxwritetime(items), writetime(items), ttl(items) FROM shop.orders"
                           " WHERE token(id) > ? AND token(id) <= ?")
    key = enc("int", 7)
    token = big(int(tokens_of_keys([key])[0]))
    before = int(dt.datetime.now().timestamp())
    read, static_only = rows.log_rows([
        (token, key, enc("int", 1), enc("text", "ann"), big(10), None, enc("text", "n"), big(20),
         (600).to_bytes(4, "big"), enc("set<text>", ["a", "b"]), big(31), enc("list<bigint>", [30, 31]),
         ttls(None, 60), enc("list<int>", [5, 6]), big(40), enc("list<bigint>", [40, 40]), ttls(None, None)),
        (token, key, None, enc("text", "bo"), big(9), None, None, None, None, None, None, None, None, None, None,
         None, None),
    ], GENERATION, VERSION_US).to_pylist()
    cells = json.loads(read["cells"])
    expiry = cells["c"]["note"][2]
    assert before <= expiry - 600 <= int(dt.datetime.now().timestamp())  # now + the TTL left
    items = cells["c"].pop("items")
    assert cells == {"k": [1], "s": False, "l": [20, 0, None], "d": None, "c": {
        "owner": [10, 0, None, 0, "ann"], "note": [20, 600, expiry, 0, "n"],
        "tags": [None, [["a", 30, 0, None, 0, None], ["b", 31, 60, expiry - 540, 0, None]]]}}
    # A list's elements get keys in its order (CQL does not give their timeuuids).
    assert [e[1:] for e in items[1]] == [[40, 0, None, 0, 5], [40, 0, None, 0, 6]]
    keys = [uuid.UUID(e[0]) for e in items[1]]
    assert keys[0].time < keys[1].time and all(k.version == 1 for k in keys)
    assert json.loads(static_only["cells"]) == {"k": None, "s": True, "l": None, "d": None,
                                                "c": {"owner": [9, 0, None, 0, "bo"]}}


def test_on_cassandra_4_single_cells_carry_their_write_time_and_elements_the_versions_start():
    """Cassandra 4.x has no MAXWRITETIME and no write time of a collection's elements: single-cell columns
    select WRITETIME, multi-cell ones nothing but their value; for a mirror, each element (a UDT field
    with a value) takes the snapshot version's start, without a TTL."""
    t = table(Column("id", "int", P, 0), Column("note", "text", R_), Column("tags", "set<text>", R_),
              Column("qty", "map<text, int>", R_))
    rows = TableRows(t, {}, cells=True, element_times=False)
    assert rows.select == ("SELECT token(id), id, note, writetime(note), ttl(note), tags, qty FROM shop.orders"
                           " WHERE token(id) > ? AND token(id) <= ?")
    assert TableRows(t, {}, element_times=False).select == rows.select
    key = enc("int", 7)
    token = big(int(tokens_of_keys([key])[0]))
    with_note, collections_only = rows.log_rows([
        (token, key, enc("text", "n"), big(20), (600).to_bytes(4, "big"), enc("set<text>", ["a"]),
         enc("map<text, int>", {"x": 1})),
        (token, key, None, None, None, enc("set<text>", ["b"]), None),
    ], GENERATION, VERSION_US).to_pylist()
    assert with_note["write_time_us"] == 20  # the newest cell whose write time Cassandra reads
    assert collections_only["write_time_us"] == VERSION_US
    cells = json.loads(with_note["cells"])
    assert cells["c"]["tags"] == [None, [["a", VERSION_US, 0, None, 0, None]]]
    assert cells["c"]["qty"] == [None, [["x", VERSION_US, 0, None, 0, 1]]]
    assert cells["l"][0] == 20  # the row marker: its oldest cell's write time


def test_a_key_of_many_types_is_the_json_text_of_its_values_and_rows_with_other_nulls_share_a_batch():
    t = table(Column("name", "text", P, 0), Column("at", "double", K, 0), Column("id", "uuid", K, 1),
              Column("note", "text", R_), Column("n", "bigint", R_))
    rows = TableRows(t, {})
    key = enc("text", 'a "quoted" ünïcode\n')
    token = big(int(tokens_of_keys([key])[0]))
    ids = [uuid.UUID(int=1), uuid.UUID(int=2)]
    raws = [(token, key, enc("double", 1.5e-7), enc("uuid", ids[0]), enc("text", "x"), big(5), None, None, None, None),
            (token, key, enc("double", -2.0), enc("uuid", ids[1]), None, None, None, enc("bigint", 9), big(6), None)]
    first, second = rows.log_rows(raws, GENERATION, VERSION_US).to_pylist()
    alone = [rows.log_rows([raw], GENERATION, VERSION_US).to_pylist()[0] for raw in raws]
    made = [(r["change_id"], r["cdc$time"]) for r in (first, second)]
    assert made == [(r["change_id"], r["cdc$time"]) for r in alone]
    for row, at, id_ in ((first, 1.5e-7, ids[0]), (second, -2.0, ids[1])):
        assert row["key"] == json.dumps({"name": 'a "quoted" ünïcode\n', "at": at, "id": str(id_)}, ensure_ascii=False)
    assert (first["columns"], first["write_time_us"]) == ([("note", '"x"')], 5)
    assert (second["columns"], second["write_time_us"]) == ([("n", "9")], 6)


def test_element_write_times_and_ttls_read_as_the_cql_type_layer_reads_them():
    from spark.snapshot.rows import _INTS, _LONGS, _numbers

    def serialized(width: int, values: list[int | None]) -> bytes:  # as ttls() above, of either width
        return len(values).to_bytes(4, "big") + b"".join(b"\xff\xff\xff\xff" if v is None else width.to_bytes(
            4, "big") + v.to_bytes(width, "big", signed=True) for v in values)

    for cql, width, values in ((_LONGS, 8, []), (_LONGS, 8, [1, -2, 1 << 60]), (_LONGS, 8, [None, 3]),
                               (_INTS, 4, [None, None]), (_INTS, 4, [600, 5]), (_INTS, 4, [None, 60]), (_INTS, 4, [0])):
        raw = serialized(width, values)
        assert _numbers(raw, cql) == cql.decode(raw) == values


def test_a_write_time_of_the_wrong_width_is_an_error_naming_it():
    t = table(Column("id", "int", P, 0), Column("note", "text", R_))
    key = enc("int", 1)
    raw = (big(int(tokens_of_keys([key])[0])), key, enc("text", "x"), b"\x00" * 7, None)
    with pytest.raises(ValueError, match=r"not 8 bytes: b'\\x00"):
        TableRows(t, {}).log_rows([raw], GENERATION, VERSION_US)


def section(rows: list[tuple]) -> RowsSection:
    """Rows of serialized values as the rows section of a RESULT message."""
    values = b"".join(b"\xff\xff\xff\xff" if v is None else len(v).to_bytes(4, "big") + v for row in rows for v in row)
    return RowsSection(len(rows[0]) if rows else 0, len(rows).to_bytes(4, "big") + values)


EVERY_KIND = [
    Column("id", "int", P, 0), Column("day", "text", P, 1), Column("line", "bigint", K, 0),
    Column("owner", "text", S), Column("a", "ascii", R_), Column("b", "blob", R_), Column("yes", "boolean", R_),
    Column("d", "date", R_), Column("dec", "decimal", R_), Column("x", "double", R_), Column("span", "duration", R_),
    Column("f", "float", R_), Column("ip", "inet", R_), Column("small", "smallint", R_), Column("t", "time", R_),
    Column("at", "timestamp", R_), Column("tu", "timeuuid", R_), Column("tiny", "tinyint", R_),
    Column("u", "uuid", R_), Column("big", "varint", R_), Column("tags", "set<text>", R_),
    Column("nums", "list<int>", R_), Column("qty", "map<text, int>", R_), Column("by_day", "map<date, text>", R_),
    Column("pair", "frozen<tuple<int, blob>>", R_), Column("home", "address", R_),
    Column("homes", "frozen<list<frozen<address>>>", R_), Column("v", "vector<float, 3>", R_)]
ADDRESS = UserType("shop", "address", ("street", "zip"), ("text", "int"))


def every_kind_values(i: int) -> list[bytes | None]:
    """The cells of `EVERY_KIND` for row `i`: every value, with nulls and empty values among them."""
    at = dt.datetime(2026, 11, 1, 9, 30, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=i)
    values = [("text", f"owner ✓ {i}"), ("ascii", "plain\ttab"), ("blob", bytes([i % 256, 0, 255])),
              ("boolean", i % 2 == 0), ("date", dt.date(2026, 1, 1) + dt.timedelta(days=i)),
              ("decimal", f"{i}.{i:03d}E-2"), ("double", [1.5e-7, float("nan"), -0.0, 1e16, float("inf")][i % 5]),
              ("duration", None), ("float", 0.1 * i), ("inet", "10.0.0.1" if i % 2 else "::1"),
              ("smallint", -i), ("time", 3_600_000_000_000 + i), ("timestamp", at),
              ("timeuuid", uuid.UUID("d2177dd0-eaa2-11de-a572-001b779c76e3")), ("tinyint", i % 100 - 50),
              ("uuid", uuid.UUID(int=i)), ("varint", -(10 ** 30) - i), ("set<text>", ["a", f"é{i}", '"q"']),
              ("list<int>", [i, -i, 0]), ("map<text, int>", {"x": i, "y\n": -1}),
              ("map<date, text>", {dt.date(2020, 1, 2): "n"}), ("frozen<tuple<int, blob>>", (i, None)),
              ("address", None), ("frozen<list<frozen<address>>>", None), ("vector<float, 3>", [1.0, -2.5, i])]
    raws = [enc(t, v) if v is not None else None for t, v in values]
    raws[7] = enc("duration", Duration(1, 2, 3_000_000_000 + i))
    address = parse_type("address", {"address": ADDRESS}, "shop")
    raws[22] = address.encode({"street": "Main", "zip": None} if i % 2 else {"street": None, "zip": i})
    raws[23] = parse_type("frozen<list<frozen<address>>>", {"address": ADDRESS}, "shop").encode(
        [{"street": "x", "zip": 1}, {"street": None, "zip": None}])
    if i % 3 == 0:  # empty values: None for a number, '' for text
        raws[4], raws[14], raws[0] = b"", b"", b""
    if i % 4 == 1:
        raws[1:6] = [None] * 5
    return raws


@pytest.mark.parametrize("element_times", [True, False], ids=["cassandra-5", "cassandra-4"])
def test_the_native_core_reads_a_page_of_every_kind_of_value_as_the_reference_does(element_times):
    rows = TableRows(table(*EVERY_KIND), {"address": ADDRESS}, element_times=element_times)
    assert rows._native is not None, "the native core is built"
    cells = rows.cells
    raws = []
    for i in range(40):
        key = [enc("int", i // 4), enc("text", f"d{i // 8}")]
        token = big(int(tokens_of_keys([compose(key)])[0]))
        values = every_kind_values(i)
        row = [token, *key, None if i % 10 == 9 else enc("bigint", i)]  # every tenth a static row
        for cell, raw in zip(cells, values):
            if i % 10 == 9 and cell.name != "owner":
                raw = None
            row.append(raw)
            if cell.written:
                row.append(None if raw is None else big(1_700_000_000_000_000 + i * 7 % 13))
            if cell.ttl:
                row.append(None if raw is None or i % 3 else (600 + i).to_bytes(4, "big"))
        raws.append(tuple(row))
    page = section(raws)
    assert page.rows == raws
    native = rows.page_rows(page, GENERATION, VERSION_US).to_pydict()
    reference = rows.log_rows(page.rows, GENERATION, VERSION_US).to_pydict()
    assert native.pop("kafka_time") and reference.pop("kafka_time")  # the time each is made
    for name in reference:
        assert native[name] == reference[name], name


def test_a_value_that_does_not_fit_its_type_is_an_error_naming_its_row_and_column():
    t = table(Column("id", "int", P, 0), Column("n", "int", R_))
    rows = TableRows(t, {})
    key = enc("int", 1)
    token = big(int(tokens_of_keys([key])[0]))
    page = section([(token, key, enc("int", 5), big(1), None), (token, key, b"\x00\x01\x02", big(1), None)])
    with pytest.raises(CqlValueError, match=r"shop.orders: row 1 of the page, column n: 3 bytes"):
        rows.page_rows(page, GENERATION, VERSION_US)
    with pytest.raises(ValueError, match="3 bytes"):  # the reference, without the position
        rows.log_rows(page.rows, GENERATION, VERSION_US)


def test_a_rows_section_that_ends_inside_a_row_is_an_error_naming_the_row():
    rows = TableRows(table(Column("id", "int", P, 0), Column("n", "int", R_)), {})
    key = enc("int", 1)
    whole = section([(big(int(tokens_of_keys([key])[0])), key, enc("int", 5), big(1), None)])
    with pytest.raises(CqlValueError, match="row 0 of the page, column n: the section ends inside the row"):
        rows.page_rows(RowsSection(whole.columns, whole.body[:-6]), GENERATION, VERSION_US)
    with pytest.raises(ValueError, match="overruns the rows section"):
        RowsSection(whole.columns, whole.body[:-6]).rows


def test_a_section_taken_over_leaves_the_driver_s_result_without_its_rows():
    rows = [(big(1), enc("int", 2), None), (big(3), b"", enc("text", "x"))]
    held_by_the_driver = section(rows)
    assert len(held_by_the_driver) == 2 and held_by_the_driver[1] == rows[1]
    taken = held_by_the_driver.take()
    assert (len(held_by_the_driver), list(held_by_the_driver)) == (0, [])
    assert (len(taken), taken.rows) == (2, rows)
