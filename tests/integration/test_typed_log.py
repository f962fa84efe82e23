"""A typed log's rows as Spark makes them in the JVM (`TypedLog.frame`) against the Python reference
(`TypedLog.row`): the same Arrow values for every CQL type and shape of row; and what the Delta sink does
with a value Spark will not read: the reference makes that batch's rows, and writes them or names the
change that does not fit."""
from __future__ import annotations

import datetime as dt
import json
import math
import uuid

import pyarrow as pa
import pytest

from schemas.runtime.access import CassandraCluster
from schemas.tables.loader import read_table
from spark.rows import LOG_ROW, arrow_schema
from spark.sinks.delta.sink import DeltaSink
from spark.sinks.log_table import TYPED_FIELDS, LogLayout, LogRowEncoder
from spark.sinks.typed_log import TYPED_REFUSALS, TypedLog
from tests.integration.micro_batches import log_row, micro_batch

pytestmark = pytest.mark.integration

FIRST, SECOND = "157e5210-7cbb-11ee-9858-c9aa1eb53e69", "257e5210-7cbb-11ee-9858-c9aa1eb53e69"
EVERY_TYPE = {
    "note": "text static", "day": "date", "since": "time", "big": "varint", "price": "decimal", "raw": "blob",
    "took": "duration", "ip": "inet", "small": "smallint", "tiny": "tinyint", "f": "float", "d": "double",
    "ok": "boolean", "u": "uuid", "tu": "timeuuid", "items": "list<int>", "tags": "set<text>", "home": "addr",
    "fhome": "frozen<addr>", "pair": "frozen<tuple<int, text, blob>>", '"Odd Name-1"': "map<text, bigint>",
    "nested": "frozen<map<frozen<map<int, int>>, text>>", "ts": "map<timeuuid, text>", "blobs": "set<blob>",
    "vec": "vector<float, 3>", "durs": "frozen<list<duration>>", "dates": "map<date, frozen<set<timestamp>>>",
    "words": "map<text, frozen<list<text>>>",
}
# Each column's value as the log's JSON text (`spark.rows`).
EVERY_VALUE = {
    "note": json.dumps("n"), "day": "-1", "since": "49530000000000", "big": json.dumps("1180591620717411303424"),
    "price": json.dumps("-12.345"), "raw": json.dumps("0x00ff"), "took": json.dumps({"months": 14, "days": 3,
                                                                                     "nanoseconds": 5}),
    "ip": json.dumps("::1"), "small": "-2", "tiny": "-1", "f": "NaN", "d": "-Infinity", "ok": "true",
    "u": json.dumps(str(uuid.UUID(int=7))), "tu": json.dumps(FIRST), "items": json.dumps({FIRST: 5, SECOND: 6}),
    "tags": json.dumps(["a", "b"]), "home": json.dumps({"zip code": 1}),
    "fhome": json.dumps({"street": "Main \"St\" é", "zip code": 2}), "pair": json.dumps([1, "t", "0x01"]),
    "Odd Name-1": json.dumps([["k", 2 ** 40]]), "nested": json.dumps([[[[1, 2]], "x"]]),
    "ts": json.dumps([[FIRST, "one"]]), "blobs": json.dumps(["0x00", "0xff"]), "vec": "[1.5, -0.0, 3.25]",
    "durs": json.dumps([{"months": 1, "days": 2, "nanoseconds": 3}]),
    "dates": json.dumps([[-1, [0, 1_699_284_279_123]]]), "words": json.dumps([["k", ["a", "b"]]]),
}


@pytest.fixture
def table(cql, keyspace) -> str:
    cql.execute(f'CREATE TYPE {keyspace}.addr (street text, "zip code" int)')
    columns = ", ".join(f"{name} {type_text}" for name, type_text in EVERY_TYPE.items())
    cql.execute(f"CREATE TABLE {keyspace}.every (id int, at timestamp, {columns}, PRIMARY KEY (id, at))")
    return "every"


def rows_of(keyspace: str, table: str) -> list[dict]:
    """Log rows of every shape: every value; none; a partition deletion; removed elements of each
    collection and UDT; values, deletions and removed elements of columns the table does not have."""
    shapes = [
        dict(columns=EVERY_VALUE),
        dict(columns={}),
        dict(columns={"small": None, "note": json.dumps("")}, deleted=["tags", "home"]),
        dict(elements={"home": json.dumps(["street"]), "tags": json.dumps(["c"]), "items": json.dumps([SECOND]),
                       "ts": json.dumps([FIRST]), "dates": json.dumps([-1]), "blobs": json.dumps(["0x00"])}),
        dict(columns={"tiny": "1", "gone": json.dumps("v")}, deleted=["was"], elements={"old": json.dumps(["x"])}),
    ]
    out = []
    for n, shape in enumerate(shapes):
        row = dict(zip(LOG_ROW.fieldNames(), log_row(n, **shape)))
        key = {"id": n} if n == 2 else {"id": n, "at": 1_699_284_279_123 + n}
        out.append({**row, "keyspace": keyspace, "table": table, "key": json.dumps(key)})
    return out


def comparable(value):
    """A value with NaN as text (NaN equals nothing, itself included) and maps' entries as lists."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [comparable(v) for v in value]
    return value


def test_the_jvm_makes_the_typed_rows_the_python_reference_makes(spark, cql, keyspace, table) -> None:
    base, user_types = read_table(cql, keyspace, table)
    typed = TypedLog(LogLayout.of_table(base, user_types, counters=True))
    rows = rows_of(keyspace, table)
    frame = spark.createDataFrame([tuple(row[n] for n in LOG_ROW.fieldNames()) for row in rows], LOG_ROW)
    made = typed.frame(frame.select(*(f"`{n}`" for n in TYPED_FIELDS)))
    assert [(f.name, f.dataType, f.metadata) for f in made.schema.fields] == [
        (f.name, f.dataType, f.metadata) for f in typed.schema.fields]
    encoder = LogRowEncoder(typed.layout)
    reference = pa.RecordBatch.from_pylist([typed.row(row, encoder) for row in rows],
                                           schema=arrow_schema(typed.schema)).to_pylist()
    got = made.toArrow().to_pylist()
    assert len(got) == len(reference) == 5
    for n, (jvm, python) in enumerate(zip(got, reference)):
        for name in python:
            assert comparable(jvm[name]) == comparable(python[name]), f"row {n}, {name}"
    assert got[0]["raw"] == b"\x00\xff" and got[0]["at"] == dt.datetime(2023, 11, 6, 15, 24, 39, 123_000,
                                                                          tzinfo=dt.timezone.utc)
    assert got[4]["cdc$other_columns"] == [("gone", '"v"'), ("was", None), ("cdc$deleted_elements_old", '["x"]')]


def test_a_value_spark_will_not_read_is_made_by_the_reference(spark, cql, keyspace, table, stack, tmp_path) -> None:
    rows = rows_of(keyspace, table)
    # A time as ISO text and an int as a string: the reference reads both (a user's own JSON may hold them).
    lenient = {**rows[1], "key": json.dumps({"id": 1, "at": "2023-11-06T15:24:39.124Z"}),
               "columns": {"small": json.dumps("12")}}
    frame = spark.createDataFrame([tuple(lenient[n] for n in LOG_ROW.fieldNames())], LOG_ROW)
    base, user_types = read_table(cql, keyspace, table)
    typed = TypedLog(LogLayout.of_table(base, user_types, counters=True))
    with pytest.raises(Exception) as refused:
        typed.frame(frame).collect()
    assert any(refusal in str(refused.value) for refusal in TYPED_REFUSALS)

    sink = DeltaSink(spark, tmp_path / "lake", "typed-test", layout="typed",
                     cluster=CassandraCluster((stack.cassandra_host,), stack.cassandra_port))
    as_tuple = lambda row: tuple(row[n] for n in LOG_ROW.fieldNames())  # noqa: E731
    sink.write(micro_batch(spark, 0, [as_tuple(rows[0]), as_tuple(lenient)]))
    written = spark.read.format("delta").load(str(tmp_path / "lake" / "typed" / keyspace / table))
    by_id = {row["id"]: row for row in written.toArrow().to_pylist()}
    assert sorted(by_id) == [0, 1]
    assert by_id[1]["small"] == 12 and by_id[1]["at"] == dt.datetime(2023, 11, 6, 15, 24, 39, 124_000,
                                                                      tzinfo=dt.timezone.utc)
    assert by_id[0]["big"] == "1180591620717411303424" and by_id[0]["tags"] == ["a", "b"]

    broken = {**rows[2], "columns": {"small": json.dumps("many")}, "change_id": "c0ffee"}
    with pytest.raises(Exception, match=r"change c0ffee .*does not fit the typed log"):
        sink.write(micro_batch(spark, 1, [as_tuple(broken)]))
    assert written.count() == 2  # nothing of the refused batch


def test_a_batch_of_tables_written_side_by_side_holds_each_row_once_after_one_table_failed(
        spark, cql, keyspace, stack, tmp_path) -> None:
    tables = ["a", "b", "c"]
    for name in tables:
        cql.execute(f"CREATE TABLE {keyspace}.{name} (id int, at timestamp, note text, PRIMARY KEY (id, at))")
    rows = []
    for n in range(30):
        row = dict(zip(LOG_ROW.fieldNames(), log_row(n, columns={"note": json.dumps(f"note {n}")})))
        row.update(keyspace=keyspace, table=tables[n % 3], key=json.dumps({"id": n, "at": 1_699_284_279_123}))
        rows.append(tuple(row[name] for name in LOG_ROW.fieldNames()))
    lake = tmp_path / "lake"
    sink = DeltaSink(spark, lake, "side-by-side", layout="typed", concurrent_tables=3,
                     cluster=CassandraCluster((stack.cassandra_host,), stack.cassandra_port))
    # A file where b's typed log goes: its write fails, a and c are written beside it.
    blocked = lake / "typed" / keyspace / "b"
    blocked.parent.mkdir(parents=True)
    blocked.write_text("not a directory")
    with pytest.raises(Exception):
        sink.write(micro_batch(spark, 0, rows))
    read = lambda name: spark.read.format("delta").load(str(lake / "typed" / keyspace / name))  # noqa: E731
    assert sorted(r["id"] for r in read("a").collect()) == list(range(0, 30, 3))
    assert sorted(r["id"] for r in read("c").collect()) == list(range(2, 30, 3))

    blocked.unlink()
    again = DeltaSink(spark, lake, "side-by-side", layout="typed", concurrent_tables=3,
                      cluster=CassandraCluster((stack.cassandra_host,), stack.cassandra_port))
    again.write(micro_batch(spark, 0, rows))  # the batch's replay: a and c hold it already
    for offset, name in enumerate(tables):
        assert sorted(r["id"] for r in read(name).collect()) == list(range(offset, 30, 3)), name


def test_one_sink_writes_a_column_added_between_its_batches(spark, cql, keyspace, stack, tmp_path) -> None:
    """A sink keeps each typed log's rows' expressions from batch to batch: a column the base table gains
    between two batches is still written, in its own type, by the same sink."""
    cql.execute(f"CREATE TABLE {keyspace}.grows (id int PRIMARY KEY, note text)")

    def row(n: int, columns: dict[str, str]) -> tuple:
        values = dict(zip(LOG_ROW.fieldNames(), log_row(n, columns=columns)))
        values.update(keyspace=keyspace, table="grows", key=json.dumps({"id": n}))
        return tuple(values[name] for name in LOG_ROW.fieldNames())

    sink = DeltaSink(spark, tmp_path / "lake", "grows", layout="typed",
                     cluster=CassandraCluster((stack.cassandra_host,), stack.cassandra_port))
    sink.write(micro_batch(spark, 0, [row(0, {"note": json.dumps("first")})]))
    cql.execute(f"ALTER TABLE {keyspace}.grows ADD sizes list<int>")
    sink.write(micro_batch(spark, 1, [row(1, {"note": json.dumps("second"), "sizes": json.dumps({FIRST: 7})})]))
    sink.write(micro_batch(spark, 2, [row(2, {"sizes": json.dumps({SECOND: 8})})]))
    written = spark.read.format("delta").load(str(tmp_path / "lake" / "typed" / keyspace / "grows"))
    assert dict(written.dtypes)["sizes"] == "map<string,int>"  # a non-frozen list: by element timeuuid
    assert {r["id"]: (r["note"], r["sizes"]) for r in written.toArrow().to_pylist()} == {
        0: ("first", None), 1: ("second", [(FIRST, 7)]), 2: (None, [(SECOND, 8)])}


def test_a_late_copy_of_a_change_the_typed_log_holds_is_written_once(spark, cql, keyspace, stack, tmp_path) -> None:
    """Rows read late (replicas' copies) are looked up in the typed log by its key and written only when absent;
    a typed log whose first rows come late is created with them."""
    for name in ("kept", "first_late"):
        cql.execute(f"CREATE TABLE {keyspace}.{name} (id int, region text, name text, PRIMARY KEY (id, region))")

    def row(n: int, table: str) -> tuple:
        values = dict(zip(LOG_ROW.fieldNames(), log_row(n)))
        values.update(keyspace=keyspace, table=table)
        return tuple(values[name] for name in LOG_ROW.fieldNames())

    sink = DeltaSink(spark, tmp_path / "lake", "late", layout="typed",
                     cluster=CassandraCluster((stack.cassandra_host,), stack.cassandra_port))
    sink.write(micro_batch(spark, 0, [row(1, "kept"), row(2, "kept")]))
    sink.write(micro_batch(spark, 1, [row(2, "kept"), row(3, "kept"), row(7, "first_late")], late=True))
    logs = tmp_path / "lake" / "typed" / keyspace
    read = lambda name: spark.read.format("delta").load(str(logs / name)).collect()  # noqa: E731
    assert sorted((r["id"], r["name"]) for r in read("kept")) == [(n, f"order {n}") for n in (1, 2, 3)]
    assert [r["id"] for r in read("first_late")] == [7]
