"""The Cassandra sink against the real Cassandra and a local Spark: log table layout, exact values of
every CQL type, idempotent replays, a base table gaining columns, dead letters, generations."""
from __future__ import annotations

import datetime
import decimal
import json
import math
import uuid

import pytest
from cassandra import util

from tests.support import micros, timeuuid
from spark.sinks.contract import Resolved
from spark.rows import (
    DEAD_LETTER,
    LOG_ROW,
    PARTITION_DELETE,
    RANGE_DELETE_END_EXCLUSIVE,
    RANGE_DELETE_START_INCLUSIVE,
    ROW_INSERT,
    ROW_UPDATE,
)
from spark.sinks.cassandra.native import encoded_batches
from spark.sinks.cassandra.sink import CassandraSink, _tables, _write_projection
from spark.streams import build_topology_description, read_ring
from spark.streams.generations import Generation, Generations
from spark.streams.storage import GenerationStore
from tests.integration.micro_batches import micro_batch

pytestmark = pytest.mark.integration

UTC = datetime.timezone.utc
WRITE_US = 1_699_284_279_123_456
STREAM_A = bytes.fromhex("7fffffffffffffff0000000000000011")
STREAM_B = bytes.fromhex("8000000000000000ffffffff00000021")
E1 = "757e5210-7cbb-11ee-9858-c9aa1eb53e69"
E2 = "757e5211-7cbb-11ee-9858-c9aa1eb53e69"
U4 = "3d4f0a6c-58c3-4c5e-9e0b-4b8f9e2a7f11"
LOG = "orders_scylla_cdc_log"

BASE_TABLE = """CREATE TABLE {ks}.orders (
    id int, region text, seq int,
    note text STATIC,
    name text, "Ascii Col" ascii, items list<int>, tags set<text>, attrs map<text, int>, home addr, work frozen<addr>,
    spots list<frozen<addr>>, pair tuple<int, text>, nested map<int, frozen<list<text>>>,
    amount decimal, big varint, at timestamp, day date, t time, d duration, ip inet, u uuid, tu timeuuid,
    data blob, f float, dbl double, flag boolean, tiny tinyint, small smallint, lng bigint, v vector<float, 3>,
    PRIMARY KEY ((id, region), seq))"""


def log_row(keyspace: str, n: int, key: dict, *, seq: int = 0, operation: int = ROW_INSERT,
            stream: bytes = STREAM_A, columns: dict | None = None, deleted: list[str] | None = None,
            elements: dict | None = None, ttl: int | None = None, table: str = "orders",
            end_of_batch: bool = True) -> tuple:
    write_us = WRITE_US + n
    row = {
        "keyspace": keyspace, "table": table, "cdc$stream_id": stream, "cdc$time": timeuuid(write_us, n),
        "cdc$batch_seq_no": seq, "cdc$operation": operation, "cdc$ttl": ttl, "cdc$end_of_batch": end_of_batch,
        "key": json.dumps(key),
        "columns": {name: json.dumps(value) for name, value in (columns or {}).items()},
        "deleted_columns": deleted or [],
        "deleted_elements": {name: json.dumps(value) for name, value in (elements or {}).items()},
        "write_time": micros(write_us), "write_time_us": write_us, "partition_key": n.to_bytes(4, "big"),
        "token": n, "generation": micros(1_699_000_000_000_000), "change_id": f"change-{n}",
        "kafka_time": micros(write_us + 2_000), "source": {
            "node": "n1", "segment_id": 1, "entry_offset": n, "update_index": 0, "row_index": seq,
            "topic": f"ringtail.{keyspace}.{table}", "partition": 0, "offset": 100 + n, "schema_id": 1},
    }
    return tuple(row[name] for name in LOG_ROW.fieldNames())


def dead_letter(offset: int, reason: str = "undecodable") -> tuple:
    row = {"reason": reason, "detail": "bad magic byte", "topic": "ringtail.t", "partition": 2, "offset": offset,
           "kafka_time": micros(WRITE_US), "key": b"k", "value": b"\x00v", "keyspace": None, "table": None,
           "write_time_us": None, "change_id": None}
    return tuple(row[name] for name in DEAD_LETTER.fieldNames())


@pytest.fixture
def base(cql, keyspace: str) -> str:
    cql.execute(f"CREATE TYPE {keyspace}.addr (street text, zip int)")
    cql.execute(BASE_TABLE.format(ks=keyspace))
    return keyspace


def select(cql, keyspace: str, table: str, columns: list[str], where: str = "") -> list[dict]:
    quoted = ", ".join('"' + c.replace('"', '""') + '"' for c in columns)
    rows = cql.execute(f'SELECT {quoted} FROM {keyspace}."{table}" {where}')
    return [dict(zip(columns, row)) for row in rows]


def log_columns(cql, keyspace: str, table: str = LOG) -> dict[str, tuple[str, str]]:
    rows = cql.execute("SELECT column_name, kind, type FROM system_schema.columns"
                       " WHERE keyspace_name = %s AND table_name = %s", (keyspace, table))
    return {row.column_name: (row.kind, row.type) for row in rows}


KEY = {"id": 1, "region": "eu", "seq": 10}
EVERYTHING = {
    "note": "static → regular", "name": "O'Brien \"Bob\"\n", "Ascii Col": "plain", "items": {E1: 5, E2: -1},
    "tags": ["b", "a"], "attrs": [["k", 1], ["l", 2]], "home": {"zip": 75001, "street": "rue"},
    "work": {"street": "avenue", "zip": None}, "spots": {E1: {"street": "s1", "zip": 1}},
    "pair": [7, "seven"], "nested": [[2, ["x", "y"]], [1, []]],
    "amount": "-12.340", "big": "-123456789012345678901234567890", "at": 1_699_284_279_123,
    "day": -719_162, "t": 86_399_999_999_999, "d": {"months": -14, "days": -3, "nanoseconds": -3_723_004_005_006},
    "ip": "2001:db8::1", "u": U4, "tu": E1, "data": "0x00ff10", "f": 1.5, "dbl": "NaN", "flag": False,
    "tiny": -128, "small": 32767, "lng": -(2**63), "v": [1.0, -2.5, 0.0],
}


def batch0(keyspace: str) -> list[tuple]:
    return [
        log_row(keyspace, 1, KEY, columns=EVERYTHING, ttl=600),
        log_row(keyspace, 2, KEY, operation=ROW_UPDATE, columns={"name": None, "tags": ["c"]},
                deleted=["name", "home"], elements={"tags": ["a"], "items": [E2], "home": ["zip"],
                                                   "attrs": ["k"], "spots": [E1]}),
        log_row(keyspace, 3, {"id": 2, "region": "us"}, operation=PARTITION_DELETE, stream=STREAM_B),
        log_row(keyspace, 4, {"id": 3, "region": "us", "seq": 1}, operation=RANGE_DELETE_START_INCLUSIVE,
                stream=STREAM_B, end_of_batch=False),
        log_row(keyspace, 4, {"id": 3, "region": "us", "seq": 9}, seq=1, operation=RANGE_DELETE_END_EXCLUSIVE,
                stream=STREAM_B),
        log_row(keyspace, 5, {"id": 4, "region": "us", "seq": 1}, columns={"tiny": "not a number"}),
        # Converts, but Cassandra refuses a duration whose parts differ in sign.
        log_row(keyspace, 6, {"id": 4, "region": "us", "seq": 2}, columns={"d": {"months": 1, "days": -1,
                                                                                  "nanoseconds": 0}}),
    ]


METADATA = ["cdc$stream_id", "cdc$time", "cdc$batch_seq_no", "cdc$operation", "cdc$ttl", "cdc$end_of_batch"]
DATA = ["id", "region", "seq", *EVERYTHING]


def test_log_table_laid_out_as_scylladbs(spark, cql, base: str) -> None:
    sink = CassandraSink(cql, keyspace=base, ttl=3600)
    sink.prepare()
    sink.write(micro_batch(spark, 0, [log_row(base, 1, KEY, columns={"name": "x"})]))
    columns = log_columns(cql, base)
    assert {k: v for k, v in columns.items() if k.startswith("cdc$") and "deleted" not in k} == {
        "cdc$stream_id": ("partition_key", "blob"), "cdc$time": ("clustering", "timeuuid"),
        "cdc$batch_seq_no": ("clustering", "int"), "cdc$operation": ("regular", "tinyint"),
        "cdc$ttl": ("regular", "bigint"), "cdc$end_of_batch": ("regular", "boolean"),
    }
    assert columns["id"] == ("regular", "int") and columns["seq"] == ("regular", "int")
    assert columns["note"] == ("regular", "text")  # static in the base, not in the log
    assert columns["items"] == ("regular", "frozen<map<timeuuid, int>>")
    assert columns["spots"] == ("regular", "frozen<map<timeuuid, frozen<addr>>>")
    assert columns["tags"] == ("regular", "frozen<set<text>>")
    assert columns["attrs"] == ("regular", "frozen<map<text, int>>")
    assert columns["home"] == ("regular", "frozen<addr>") and columns["work"] == ("regular", "frozen<addr>")
    assert columns["pair"] == ("regular", "frozen<tuple<int, text>>")
    assert columns["v"] == ("regular", "vector<float, 3>")
    assert columns["cdc$deleted_work"] == ("regular", "boolean")
    assert {k: v[1] for k, v in columns.items() if k.startswith("cdc$deleted_elements_")} == {
        "cdc$deleted_elements_items": "frozen<set<timeuuid>>", "cdc$deleted_elements_spots": "frozen<set<timeuuid>>",
        "cdc$deleted_elements_tags": "frozen<set<text>>", "cdc$deleted_elements_attrs": "frozen<set<text>>",
        "cdc$deleted_elements_home": "frozen<set<smallint>>", "cdc$deleted_elements_nested": "frozen<set<int>>",
    }
    options = cql.execute("SELECT default_time_to_live, gc_grace_seconds FROM system_schema.tables"
                          " WHERE keyspace_name = %s AND table_name = %s", (base, LOG)).one()
    assert (options.default_time_to_live, options.gc_grace_seconds) == (3600, 0)
    (row,) = cql.execute(f'SELECT writetime(name), ttl(name) FROM {base}.{LOG}')
    assert row[0] == WRITE_US + 1 and 0 < row[1] <= 3600  # the change's write time is the cell timestamp


def test_every_type_written_exactly_and_replays_change_nothing(spark, cql, base: str) -> None:
    sink = CassandraSink(cql, keyspace=base, ttl=0)
    sink.prepare()
    letters = [dead_letter(7), dead_letter(7), dead_letter(8, "no_generation")]
    sink.write(micro_batch(spark, 0, batch0(base), letters))

    rows = select(cql, base, LOG, METADATA + DATA + ["cdc$deleted_name", "cdc$deleted_home", "cdc$deleted_items",
                                                     "cdc$deleted_elements_tags", "cdc$deleted_elements_items",
                                                     "cdc$deleted_elements_home", "cdc$deleted_elements_attrs",
                                                     "cdc$deleted_elements_spots"])
    assert len(rows) == 5  # the unwritable rows went to the dead letters
    by_time = {str(r["cdc$time"]): r for r in rows}
    full = by_time[timeuuid(WRITE_US + 1, 1)]
    assert full["cdc$stream_id"] == STREAM_A and full["cdc$batch_seq_no"] == 0
    assert (full["cdc$operation"], full["cdc$ttl"], full["cdc$end_of_batch"]) == (ROW_INSERT, 600, True)
    assert (full["id"], full["region"], full["seq"]) == (1, "eu", 10)
    assert full["note"] == "static → regular" and full["name"] == "O'Brien \"Bob\"\n" and full["Ascii Col"] == "plain"
    assert dict(full["items"]) == {uuid.UUID(E1): 5, uuid.UUID(E2): -1}
    assert list(full["tags"]) == ["a", "b"]
    assert dict(full["attrs"]) == {"k": 1, "l": 2}
    assert tuple(full["home"]) == ("rue", 75001) and full["home"]._fields == ("street", "zip")
    assert tuple(full["work"]) == ("avenue", None)
    assert {k: tuple(v) for k, v in full["spots"].items()} == {uuid.UUID(E1): ("s1", 1)}
    assert full["pair"] == (7, "seven")
    assert {k: list(v) for k, v in full["nested"].items()} == {1: [], 2: ["x", "y"]}
    assert full["amount"] == decimal.Decimal("-12.340") and str(full["amount"]) == "-12.340"
    assert full["big"] == -123456789012345678901234567890
    assert full["at"] == datetime.datetime(2023, 11, 6, 15, 24, 39, 123000)
    assert full["day"] == util.Date(-719_162) and full["day"].date() == datetime.date(1, 1, 1)
    assert full["t"] == util.Time(86_399_999_999_999)
    assert full["d"] == util.Duration(-14, -3, -3_723_004_005_006)
    assert full["ip"] == "2001:db8::1" and full["u"] == uuid.UUID(U4) and full["tu"] == uuid.UUID(E1)
    assert full["data"] == b"\x00\xff\x10" and full["f"] == 1.5 and math.isnan(full["dbl"])
    assert (full["flag"], full["tiny"], full["small"], full["lng"]) == (False, -128, 32767, -(2**63))
    assert full["v"] == [1.0, -2.5, 0.0]
    assert full["cdc$deleted_name"] is None and full["cdc$deleted_elements_tags"] is None

    update = by_time[timeuuid(WRITE_US + 2, 2)]
    assert update["cdc$operation"] == ROW_UPDATE and update["cdc$ttl"] is None
    assert update["name"] is None and update["cdc$deleted_name"] is True and update["cdc$deleted_home"] is True
    assert update["cdc$deleted_items"] is None and list(update["tags"]) == ["c"]
    assert set(update["cdc$deleted_elements_tags"]) == {"a"}
    assert set(update["cdc$deleted_elements_items"]) == {uuid.UUID(E2)}
    assert set(update["cdc$deleted_elements_home"]) == {1}  # the field index of zip
    assert set(update["cdc$deleted_elements_attrs"]) == {"k"}
    assert set(update["cdc$deleted_elements_spots"]) == {uuid.UUID(E1)}

    partition = by_time[timeuuid(WRITE_US + 3, 3)]
    assert (partition["cdc$stream_id"], partition["cdc$operation"]) == (STREAM_B, PARTITION_DELETE)
    assert (partition["id"], partition["region"], partition["seq"], partition["name"]) == (2, "us", None, None)
    bounds = sorted((r for r in rows if str(r["cdc$time"]) == timeuuid(WRITE_US + 4, 4)),
                    key=lambda r: r["cdc$batch_seq_no"])
    assert [(r["cdc$batch_seq_no"], r["cdc$operation"], r["seq"], r["cdc$end_of_batch"]) for r in bounds] == [
        (0, RANGE_DELETE_START_INCLUSIVE, 1, False), (1, RANGE_DELETE_END_EXCLUSIVE, 9, True)]

    letters_columns = ["topic", "partition", "offset", "reason", "detail", "kafka_time", "key", "value",
                       "keyspace", "table", "write_time_us", "change_id", "batch_id"]
    stored = sorted(select(cql, base, "dead_letters", letters_columns), key=lambda r: (r["topic"], r["offset"]))
    assert [(r["topic"], r["partition"], r["offset"], r["reason"], r["key"], r["value"], r["batch_id"])
            for r in stored] == [
        ("ringtail.t", 2, 7, "undecodable", b"k", b"\x00v", 0),
        ("ringtail.t", 2, 8, "no_generation", b"k", b"\x00v", 0),
        (f"ringtail.{base}.orders", 0, 105, "unwritable", None, None, 0),
        (f"ringtail.{base}.orders", 0, 106, "unwritable", None, None, 0),
    ]
    unwritable = stored[2]
    assert unwritable["detail"].startswith("ValueError") and "not a number" in unwritable["detail"]
    assert (unwritable["keyspace"], unwritable["table"], unwritable["write_time_us"], unwritable["change_id"]) == (
        base, "orders", WRITE_US + 5, "change-5")
    assert "InvalidRequest" in stored[3]["detail"] and "same sign" in stored[3]["detail"]
    assert stored[0]["kafka_time"] == datetime.datetime(2023, 11, 6, 15, 24, 39, 123000)

    # Replays: the same batch id, then the same changes in a new batch: the same cells are rewritten.
    before = select(cql, base, LOG, METADATA + DATA)
    sink.write(micro_batch(spark, 0, batch0(base), letters))
    sink.write(micro_batch(spark, 1, batch0(base)))
    after = select(cql, base, LOG, METADATA + DATA)
    assert len(after) == 5
    assert repr(sorted(map(repr, after))) == repr(sorted(map(repr, before)))  # NaN compares by text
    assert len(select(cql, base, "dead_letters", ["offset"])) == 4


def test_base_table_gains_columns_between_batches(spark, cql, base: str) -> None:
    sink = CassandraSink(cql, keyspace=base, ttl=0)
    sink.prepare()
    sink.write(micro_batch(spark, 0, [log_row(base, 1, KEY, columns={"name": "before"})]))
    assert "extra" not in log_columns(cql, base)

    cql.execute(f"ALTER TABLE {base}.orders ADD (extra text, more list<text>, counts map<int, frozen<addr>>)")
    sink.write(micro_batch(spark, 1, [
        log_row(base, 2, KEY, columns={"name": "after", "extra": "new", "more": {E1: "m"},
                                       "counts": [[3, {"street": "c"}]]}),
        log_row(base, 3, KEY, operation=ROW_UPDATE, deleted=["extra"], elements={"more": [E1], "counts": [3]}),
    ]))
    columns = log_columns(cql, base)
    assert columns["extra"] == ("regular", "text") and columns["cdc$deleted_extra"] == ("regular", "boolean")
    assert columns["more"] == ("regular", "frozen<map<timeuuid, text>>")
    assert columns["cdc$deleted_elements_more"] == ("regular", "frozen<set<timeuuid>>")
    assert columns["cdc$deleted_elements_counts"] == ("regular", "frozen<set<int>>")
    rows = {r["name"] or r["cdc$operation"]: r for r in select(
        cql, base, LOG, ["cdc$operation", "name", "extra", "more", "counts", "cdc$deleted_extra",
                         "cdc$deleted_elements_more", "cdc$deleted_elements_counts"])}
    assert rows["before"]["extra"] is None
    assert rows["after"]["extra"] == "new" and dict(rows["after"]["more"]) == {uuid.UUID(E1): "m"}
    assert {k: tuple(v) for k, v in rows["after"]["counts"].items()} == {3: ("c", None)}
    update = rows[ROW_UPDATE]
    assert update["cdc$deleted_extra"] is True
    assert set(update["cdc$deleted_elements_more"]) == {uuid.UUID(E1)}
    assert set(update["cdc$deleted_elements_counts"]) == {3}


def test_a_batch_is_written_in_one_pass_unless_it_names_what_the_sink_has_not_laid_out(
        spark, cql, base: str, caplog) -> None:
    """The executors check each batch's tables and columns against the layouts the sink knows: a batch of known
    ones is written in one pass; one naming a new table (one with no schema among them) or a column the base
    table gained is written again whole once they are laid out, and every row is written once (the first pass
    wrote what it could, with the same cells)."""
    caplog.set_level("INFO", logger="spark.sinks.cassandra.sink")
    sink = CassandraSink(cql, keyspace=base, ttl=0)
    sink.prepare()

    def passes(batch_id: int, rows: list[tuple]) -> tuple[int, list[str]]:
        """The passes the write took, and what the log said of each second one."""
        caplog.clear()
        sink.write(micro_batch(spark, batch_id, rows))
        again = [r.getMessage() for r in caplog.records if "writing it again" in r.getMessage()]
        return 1 + len(again), again

    count, said = passes(0, [log_row(base, 1, KEY, columns={"name": "a"}),
                             log_row(base, 2, {"x": 1}, table="missing")])
    assert count == 2  # both tables new
    assert f"{base}.missing (a new table); {base}.orders (a new table)" in said[0]
    assert passes(1, [log_row(base, 3, KEY, columns={"name": "b", "note": "c"}),
                      log_row(base, 4, {"x": 2}, table="missing")]) == (1, [])
    cql.execute(f"ALTER TABLE {base}.orders ADD extra text")
    count, said = passes(2, [log_row(base, 5, KEY, columns={"extra": "d"}),
                             log_row(base, 6, {"id": 2, "region": "us", "seq": 1}, columns={"name": "e"})])
    assert count == 2 and f"({base}.orders columns extra)" in said[0]
    assert passes(3, [log_row(base, 7, KEY, columns={"extra": "f"})]) == (1, [])

    logged = select(cql, base, LOG, ["name", "note", "extra"])
    assert sorted((r["name"] or "", r["note"] or "", r["extra"] or "") for r in logged) == [
        ("", "", "d"), ("", "", "f"), ("a", "", ""), ("b", "c", ""), ("e", "", "")]
    letters = select(cql, base, "dead_letters", ["offset", "reason", "table", "detail"])
    assert sorted((r["offset"], r["reason"], r["table"]) for r in letters) == [
        (102, "unwritable", "missing"), (104, "unwritable", "missing")]
    assert all("LookupError" in r["detail"] for r in letters)


def test_driver_side_writes_and_several_tables(spark, cql, base: str) -> None:
    cql.execute(f"CREATE TABLE {base}.hits (page text PRIMARY KEY, n counter)")
    sink = CassandraSink(cql, keyspace=base, ttl=0, on_executors=False)
    sink.prepare()
    sink.write(micro_batch(spark, 0, [
        log_row(base, 1, KEY, columns={"name": "driver"}),
        log_row(base, 2, {"page": "/"}, table="hits", operation=ROW_UPDATE),
        log_row(base, 3, {"x": 1}, table="missing"),  # no such table: a dead letter, not a failed batch
    ]))
    assert select(cql, base, LOG, ["name"]) == [{"name": "driver"}]
    assert set(log_columns(cql, base, "hits_scylla_cdc_log")) == {*METADATA, "page"}  # counters are not logged
    assert select(cql, base, "hits_scylla_cdc_log", ["page", "cdc$operation"]) == [
        {"page": "/", "cdc$operation": ROW_UPDATE}]
    (letter,) = select(cql, base, "dead_letters", ["reason", "table", "detail"])
    assert letter["reason"] == "unwritable" and letter["table"] == "missing" and "LookupError" in letter["detail"]


def test_a_streams_rows_go_in_batches_and_a_row_cassandra_refuses_alone_is_a_dead_letter(spark, cql, base: str) -> None:
    """Rows of one stream (one log partition) are sent in unlogged batches of a few kilobytes; a row larger
    than the node takes in one request (this stack's commit-log segments hold half a MiB) is sent alone,
    refused, and becomes a dead letter while the rows around it are written."""
    sink = CassandraSink(cql, keyspace=base, ttl=0)
    sink.prepare()
    rows = [log_row(base, n, {"id": n, "region": "eu", "seq": 1}, columns={"name": f"row {n} " + "x" * 300})
            for n in range(1, 41)]
    rows.insert(20, log_row(base, 41, {"id": 41, "region": "eu", "seq": 1}, columns={"name": "y" * 600_000}))
    sink.write(micro_batch(spark, 0, rows))
    assert sorted(r["id"] for r in select(cql, base, LOG, ["id"])) == list(range(1, 41))
    (letter,) = select(cql, base, "dead_letters", ["offset", "reason", "detail"])
    assert (letter["offset"], letter["reason"]) == (141, "unwritable")
    assert letter["detail"].startswith("InvalidRequest") and "exceeds" in letter["detail"]


def test_a_batch_cassandra_refuses_is_sent_again_row_by_row_and_only_the_refused_row_is_a_dead_letter(
        spark, cql, base: str) -> None:
    """One request the native core encoded, six rows of one stream, one of which Cassandra refuses (a duration
    whose parts differ in sign, which converts): the batch is refused whole, its rows are sent again one by one
    (bound by the reference), and only that row becomes a dead letter."""
    sink = CassandraSink(cql, keyspace=base, ttl=0)
    sink.prepare()
    changes = [log_row(base, n, {"id": n, "region": "eu", "seq": 1}, columns={"name": f"row {n}"}) for n in range(1, 6)]
    changes.insert(2, log_row(base, 9, {"id": 9, "region": "eu", "seq": 1},
                              columns={"d": {"months": 1, "days": -1, "nanoseconds": 0}}))
    (batch,) = micro_batch(spark, 0, changes).rows.select(*_write_projection()).toArrow().combine_chunks().to_batches()
    layouts = {(base, "orders"): sink.layout(base, "orders", ["name", "d"])}
    writer = sink.writer
    _, insert, native = writer._encoder(layouts[base, "orders"])
    requests, left = encoded_batches(native, batch, insert.query_id, 4_096)
    assert left == [] and [indices for _, _, indices in requests] == [list(range(6))]

    assert writer.write_tables(_tables(batch), layouts, 3) == (5, 1)
    assert sorted(r["id"] for r in select(cql, base, LOG, ["id"])) == [1, 2, 3, 4, 5]
    (letter,) = select(cql, base, "dead_letters", ["offset", "reason", "detail", "change_id", "batch_id"])
    assert (letter["offset"], letter["reason"], letter["change_id"], letter["batch_id"]) == (
        109, "unwritable", "change-9", 3)
    assert letter["detail"].startswith("InvalidRequest") and "same sign" in letter["detail"]


def test_dropped_base_table_keeps_its_log_writable(spark, cql, base: str) -> None:
    sink = CassandraSink(cql, keyspace=base, ttl=0)
    sink.prepare()
    sink.write(micro_batch(spark, 0, [log_row(base, 1, KEY, columns={"home": {"street": "a"}})]))
    cql.execute(f"DROP TABLE {base}.orders")
    fresh = CassandraSink(cql, keyspace=base, ttl=0)  # knows nothing but what the cluster says
    fresh.write(micro_batch(spark, 1, [log_row(base, 2, KEY, columns={"home": {"zip": 2}},
                                               elements={"home": ["street"]}, operation=ROW_UPDATE)]))
    rows = sorted(select(cql, base, LOG, ["cdc$operation", "home", "cdc$deleted_elements_home"]),
                  key=lambda r: r["cdc$operation"])
    assert [(r["cdc$operation"], tuple(r["home"]), r["cdc$deleted_elements_home"]) for r in rows] == [
        (ROW_UPDATE, (None, 2), {0}), (ROW_INSERT, ("a", None), None)]


def test_rows_whose_values_the_native_core_made_read_back_as_the_references_do(spark, cql, base: str) -> None:
    """The same changes written twice, into the logs of two tables alike: once in the requests the native
    core encoded (as on an executor; a row it leaves, by the reference beside them), once through the reference
    encoder and the driver's `bind`. Cassandra holds the same cells in both; a map given as an object out of key order
    included (the native core sends it in key order, the driver in the object's)."""
    cql.execute(BASE_TABLE.format(ks=base).replace(".orders (", ".twin ("))
    sink = CassandraSink(cql, keyspace=base, ttl=0)
    sink.prepare()
    columns = {**{k: v for k, v in EVERYTHING.items() if k != "v"}, "attrs": {"l": 2, "k": 1, "a": 0}}
    left = log_row(base, 7, {"id": 7, "region": "eu", "seq": 1}, columns={"at": "2023-11-06T15:24:39.123Z"})
    changes = [log_row(base, 1, KEY, columns=columns, ttl=600), *batch0(base)[1:5], left]
    rows = micro_batch(spark, 0, changes).rows.select(*_write_projection()).toArrow().combine_chunks()
    (batch,) = rows.to_batches()
    layouts = {(base, t): sink.layout(base, t, EVERYTHING) for t in ("orders", "twin")}
    writer = sink.writer
    _, insert, native = writer._encoder(layouts[base, "orders"])
    _, left = encoded_batches(native, batch, insert.query_id, 4_096)
    assert left == [len(changes) - 1]  # a timestamp as ISO text

    assert writer.write_tables(_tables(batch), layouts, 0) == (len(changes), 0)
    assert writer.write([{**row, "table": "twin"} for row in batch.to_pylist()], layouts, 0) == (len(changes), 0)
    natively = cql.execute(f"SELECT * FROM {base}.{LOG}").all()
    by_reference = cql.execute(f"SELECT * FROM {base}.twin_scylla_cdc_log").all()
    assert len(natively) == len(changes)
    assert sorted(map(repr, natively)) == sorted(map(repr, by_reference))  # NaN compares by text
    (full,) = [r for r in natively if r.attrs is not None]
    assert list(full.attrs.items()) == [("a", 0), ("k", 1), ("l", 2)]
    assert [r.at for r in natively if r.id == 7] == [datetime.datetime(2023, 11, 6, 15, 24, 39, 123000)]


def test_generations_published_and_readable(cql, keyspace: str) -> None:
    sink = CassandraSink(cql, keyspace=keyspace)
    sink.prepare()
    t0 = 1_700_000_000_000_000
    ring = read_ring(cql)
    first = build_topology_description(ring, rand=1)
    second = build_topology_description({**ring, "joining": (0, 42)}, rand=2)
    generations = Generations([Generation(t0, first), Generation(t0 + 65_000_000, second),
                               Generation(t0 + 130_000_000)])
    sink.publish_generations(generations)
    sink.publish_generations(generations)  # idempotent
    loaded = GenerationStore(cql, keyspace).load()
    assert [(g.timestamp, g.description) for g in loaded.generations] == [(t0, first), (t0 + 65_000_000, second)]
    streams = cql.execute(f"SELECT range_end, streams FROM {keyspace}.cdc_streams_descriptions_v2 WHERE time = %s",
                          (t0 // 1000,))
    assert {r.range_end: set(r.streams) for r in streams} == {
        e.token_range_end: {s.value for s in e.streams} for e in first.entries}


def test_resolved_timestamps_keep_each_writers_newest(cql, keyspace: str) -> None:
    """Written at the resolved time itself, so a lower one published later (a restarted writer) loses."""
    sink = CassandraSink(cql, keyspace=keyspace, app_id="a")
    sink.prepare()
    sink.publish_resolved([Resolved("shop", "orders", 1_700_000_000_200_000), Resolved("shop", "items", 5)])
    sink.publish_resolved([Resolved("shop", "orders", 1_700_000_000_100_000)])
    CassandraSink(cql, keyspace=keyspace, app_id="b").publish_resolved([Resolved("shop", "orders", 7)])
    rows = cql.execute(f"SELECT app_id, keyspace_name, table_name, resolved, resolved_us FROM {keyspace}.resolved")
    assert {(r.app_id, r.keyspace_name, r.table_name): (r.resolved_us, r.resolved.strftime("%Y-%m-%dT%H:%M:%S.%f")[:23])
            for r in rows} == {
        ("a", "shop", "orders"): (1_700_000_000_200_000, "2023-11-14T22:13:20.200"),
        ("a", "shop", "items"): (5, "1970-01-01T00:00:00.000"), ("b", "shop", "orders"): (7, "1970-01-01T00:00:00.000")}
