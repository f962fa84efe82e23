"""The MySQL sink's log against the real MariaDB and a local Spark: every value exact whether its part goes
in with objects assembled on the executors (plain rows) or made strict in Python (NaN, the infinities,
text that is not JSON), replica copies and replays absorbed, and a server that takes no local file for
LOAD DATA still given every row; rows loaded by their values (the typed log, a mirror) keep or replace the
row of their key, and a value that does not fit fails naming its row."""
from __future__ import annotations

import datetime as dt
import json
import logging
import threading
import time
import uuid

import pytest

from deploy.local.endpoints import Stack
from spark.rows import LOG_ROW, PARTITION_DELETE, ROW_UPDATE
from spark.sinks.mysql import load as mysql_load
from spark.sinks.mysql import log as mysql_log
from spark.sinks.mysql.connection import connect_dsn
from spark.sinks.mysql.load import Target, load_rows
from spark.sinks.mysql.log import MySqlSink, load_part, staged_part, staged_values
from spark.sinks.staged import csv_chunk
from tests.integration.delivered import drop_mysql_database, mysql_database
from tests.integration.micro_batches import STREAM_A, WRITE_US, log_row, micro_batch
from tests.support import micros

pytestmark = pytest.mark.integration

ELEMENT = "757e5210-7cbb-11ee-9858-c9aa1eb53e69"
# Text that CSV, LOAD DATA and JSON each quote differently, as plain JSON texts.
PLAIN = {
    "name": json.dumps("O'Brien, \"Bob\"\nline two\r\n\t\\ é 😀"),
    "items": json.dumps({ELEMENT: 5}), "attrs": json.dumps([["k", 1], ["l", None]]),
    "amount": json.dumps("-12.345"), "word": json.dumps("NULL"), "empty": '""', "none": "null",
    'we"ird,\\name': json.dumps(1), "commas": json.dumps("a,b,,c"),
}


@pytest.fixture
def sink(stack: Stack):
    dsn = mysql_database(stack, f"rt_{uuid.uuid4().hex[:12]}")
    sink = MySqlSink(dsn, app_id="sink-test")
    sink.prepare()
    yield sink
    drop_mysql_database(stack, dsn)


def query(sink: MySqlSink, sql: str) -> list[tuple]:
    conn = connect_dsn(sink.dsn)
    try:
        with conn.cursor() as cursor:
            cursor.execute(sql)
            return list(cursor.fetchall())
    finally:
        conn.close()


def logged(sink: MySqlSink) -> dict[tuple[int, int], dict]:
    """The log's rows by (key id, batch sequence number), JSON columns parsed, times as aware UTC."""
    names = LOG_ROW.fieldNames()
    out = {}
    for values in query(sink, f"SELECT {', '.join(f'`{n}`' for n in names)} FROM cdc_log"):
        row = dict(zip(names, values))
        for name in ("key", "columns", "deleted_columns", "deleted_elements", "source"):
            row[name] = json.loads(row[name])
        for name in ("write_time", "generation", "kafka_time"):
            row[name] = row[name] and row[name].replace(tzinfo=micros(0).tzinfo)
        out[row["key"]["id"], row["cdc$batch_seq_no"]] = row
    return out


def without(row: tuple, **changes) -> tuple:
    names = LOG_ROW.fieldNames()
    values = dict(zip(names, row)) | changes
    return tuple(values[n] for n in names)


def test_every_value_lands_exact_and_once_in_plain_parts_and_in_others(spark, sink: MySqlSink) -> None:
    deleted = ["a,b", 'q"uote', "back\\slash", "NULL", ""]
    rich = log_row(1, operation=ROW_UPDATE, columns=PLAIN, deleted=deleted,
                   elements={'t"ags': '["x"]', "items": json.dumps([ELEMENT])}, ttl=3600)
    bare = without(log_row(6), token=None, generation=None, **{"cdc$end_of_batch": False})
    rows = [rich, bare, log_row(2), log_row(2, node="n2"), log_row(3, operation=PARTITION_DELETE, columns={})]
    sink.write(micro_batch(spark, 0, rows))

    got = logged(sink)
    assert sorted(got) == [(1, 0), (2, 0), (3, 0), (6, 0)]  # the copy from node n2 is not
    expected = dict(zip(LOG_ROW.fieldNames(), rich))
    one = got[1, 0]
    assert (one["keyspace"], one["table"], one["cdc$stream_id"], one["cdc$time"]) == (
        "shop", "orders", STREAM_A, expected["cdc$time"])
    assert (one["cdc$operation"], one["cdc$ttl"], one["cdc$end_of_batch"]) == (ROW_UPDATE, 3600, 1)
    assert one["key"] == {"id": 1, "region": "eu"}
    assert one["columns"] == {name: json.loads(text) for name, text in PLAIN.items()}
    assert one["deleted_columns"] == deleted
    assert one["deleted_elements"] == {'t"ags': ["x"], "items": [ELEMENT]}
    assert (one["write_time"], one["write_time_us"]) == (expected["write_time"], WRITE_US + 1)
    assert (one["partition_key"], one["token"], one["generation"]) == (
        b"\x00\x00\x00\x01", expected["token"], expected["generation"])
    assert (one["change_id"], one["kafka_time"], one["source"]) == ("change-1", expected["kafka_time"],
                                                                    expected["source"])
    two = got[6, 0]
    assert (two["cdc$ttl"], two["token"], two["generation"], two["cdc$end_of_batch"]) == (None, None, None, 0)
    assert got[3, 0]["columns"] == {} and got[3, 0]["deleted_elements"] == {}
    assert query(sink, "SELECT batch_id, `rows`, done FROM batches") == [(0, 4, 1)]

    # A replay of batch 0 is a no-op; batch 1 holds values JSON cannot hold and text that is not JSON,
    # beside plain rows and copies of batch 0's changes.
    sink.write(micro_batch(spark, 0, rows + [log_row(9)]))
    odd = log_row(4, columns={"score": "NaN", "ratios": "[1.5, NaN, -Infinity]", "broken": "{not json",
                              "fine": "[1]"}, elements={"m": "{\"k\": Infinity}"})
    sink.write(micro_batch(spark, 1, rows + [odd, log_row(5)]))
    got = logged(sink)
    assert sorted(got) == [(1, 0), (2, 0), (3, 0), (4, 0), (5, 0), (6, 0)]
    assert got[4, 0]["columns"] == {"score": "NaN", "ratios": [1.5, "NaN", "-Infinity"], "broken": "{not json",
                                    "fine": [1]}
    assert got[4, 0]["deleted_elements"] == {"m": {"k": "Infinity"}}
    assert got[5, 0]["columns"] == {"name": "order 5"}
    assert query(sink, "SELECT batch_id, `rows` FROM batches ORDER BY 1") == [(0, 4), (1, 2)]


def test_a_server_that_takes_no_local_file_gets_the_rows_by_inserts(spark, sink: MySqlSink, caplog) -> None:
    """A connection without local files is refused LOAD DATA LOCAL by the server, as a server with
    `local_infile=OFF` refuses every one: the part goes in by multi-row inserts, said once."""
    rows = [log_row(1, columns=PLAIN), log_row(2, columns={"score": "NaN"}), log_row(3, node="n2"), log_row(3)]
    part = staged_part(staged_values(micro_batch(spark, 0, rows).rows).coalesce(1).toArrow().to_batches())
    csv = b"".join(csv_chunk(batch) for batch in part.to_batches())
    conn = connect_dsn(sink.dsn)  # local files off
    server = f"{conn.host}:{conn.port}"
    try:
        with caplog.at_level(logging.WARNING, logger=mysql_load.__name__), conn.cursor() as cursor:
            assert load_part(conn, cursor, part, csv) == 3
            assert server in mysql_load._refused
            assert load_part(conn, cursor, part, csv) == 0  # again: straight to inserts, every row there
        conn.commit()
    finally:
        mysql_load._refused.discard(server)
        conn.close()
    assert [r.message for r in caplog.records].count(next(r.message for r in caplog.records)) == 1
    assert "takes no local file" in caplog.records[0].message
    got = logged(sink)
    assert got[1, 0]["columns"] == {name: json.loads(text) for name, text in PLAIN.items()}
    assert got[2, 0]["columns"] == {"score": "NaN"} and sorted(got) == [(1, 0), (2, 0), (3, 0)]


def test_loaded_rows_keep_or_replace_their_keys_rows_and_a_value_that_does_not_fit_names_its_row(sink: MySqlSink):
    conn = connect_dsn(sink.dsn, local_infile=True)
    table = "loaded"
    try:
        with conn.cursor() as cursor:
            cursor.execute(f"CREATE TABLE {table} (k VARBINARY(16) PRIMARY KEY, small TINYINT, word LONGTEXT,"
                           " at DATETIME(3), data LONGBLOB) DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin")
            columns, binary = ("k", "small", "word", "at", "data"), frozenset(("k", "data"))
            kept, replaced = Target(table, columns, binary), Target(table, columns, binary, replace=True)
            at = dt.datetime(2024, 2, 29, 23, 59, 59, 999000)
            rows = [(bytes([i]), i - 50, f"w{i}\t\\N\n😀", at, bytes(range(i))) for i in range(100)]
            assert load_rows(conn, cursor, kept, rows, str, ValueError) == 100
            # 100 rows already there stay as they are (more than the warnings MariaDB shows), one is new.
            again = [(k, 0, "other", None, None) for k, *_ in rows] + [(b"\xff", None, "", None, b"")]
            assert load_rows(conn, cursor, kept, again, str, ValueError) == 1
            assert load_rows(conn, cursor, replaced, [(b"\x05", -128, None, None, b"\x00")], str, ValueError) == 2
            cursor.execute(f"SELECT k, small, word, at, data FROM {table} ORDER BY k")
            assert cursor.fetchall() == (*rows[:5], (b"\x05", -128, None, None, b"\x00"), *rows[6:],
                                         (b"\xff", None, "", None, b""))
            with pytest.raises(ValueError, match=r"^row #101 does not fit loaded: Out of range value for column"
                                                 r" 'small' at row 102$"):
                load_rows(conn, cursor, kept, again + [(b"\xfe", 300, None, None, None)], lambda i: f"row #{i}",
                          ValueError)
            with pytest.raises(ValueError, match=r"^row #1 does not fit loaded: Out of range value for column"
                                                 r" 'small' at row 2$"):
                load_rows(conn, cursor, replaced, [(b"\xfd", 1, None, None, None), (b"\xfc", -129, None, None, None)],
                          lambda i: f"row #{i}", ValueError)
    finally:
        conn.rollback()
        conn.close()


def test_a_part_chosen_as_a_deadlocks_victim_is_written_again_whole(sink: MySqlSink, caplog) -> None:
    """A part's transaction meets another in a real InnoDB deadlock; the other has written more, so InnoDB
    rolls the part's back (its claim too) and the part is written again, once."""
    setup = connect_dsn(sink.dsn)
    with setup.cursor() as cursor:
        cursor.execute("CREATE TABLE lockers (id INT PRIMARY KEY)")
        cursor.execute("INSERT INTO lockers VALUES (1), (2)")
        cursor.execute("CREATE TABLE ballast (id INT PRIMARY KEY)")
        cursor.execute("CREATE TABLE written (id INT PRIMARY KEY, attempt INT NOT NULL)")
    setup.commit()
    setup.close()
    other = connect_dsn(sink.dsn)
    other_cursor = other.cursor()
    # The other transaction holds locker 2 and has written more rows than the part will: InnoDB's victim is
    # the transaction that wrote fewer.
    other_cursor.executemany("INSERT INTO ballast VALUES (%s)", [(i,) for i in range(200)])
    other_cursor.execute("SELECT id FROM lockers WHERE id = 2 FOR UPDATE")
    attempts: list[int] = []
    waiting = threading.Thread(target=lambda: (other_cursor.execute("SELECT id FROM lockers WHERE id = 1 FOR UPDATE"),
                                               other.commit()))

    def write(conn, cursor) -> int:
        attempts.append(len(attempts) + 1)
        cursor.executemany("INSERT INTO written VALUES (%s, %s)", [(i, len(attempts)) for i in range(3)])
        if len(attempts) == 1:
            cursor.execute("SELECT id FROM lockers WHERE id = 1 FOR UPDATE")
            waiting.start()
            deadline = time.monotonic() + 10
            while not _waits_for_a_lock(sink.dsn) and time.monotonic() < deadline:
                time.sleep(0.05)
            cursor.execute("SELECT id FROM lockers WHERE id = 2 FOR UPDATE")  # the cycle: InnoDB ends one
        return 3

    try:
        with caplog.at_level(logging.WARNING, logger="spark.sinks.mysql.log"):
            written = mysql_log.write_part(sink.dsn, "sink-test", 7, "part-a", write)
        waiting.join(10)
    finally:
        other.close()
    assert attempts == [1, 2]
    assert written == 3
    assert query(sink, "SELECT id, attempt FROM written ORDER BY id") == [(0, 2), (1, 2), (2, 2)]
    assert query(sink, "SELECT batch_id, part, `rows` FROM batch_parts") == [(7, "part-a", 3)]
    assert "chosen as a deadlock's victim and rolled back; written again (attempt 2 of 5)" in caplog.text
    # The other transaction went on once the part's was rolled back: it holds its ballast.
    assert query(sink, "SELECT COUNT(*) FROM ballast") == [(200,)]


def _waits_for_a_lock(dsn: str) -> bool:
    """Whether a transaction of the server waits for a row lock now."""
    conn = connect_dsn(dsn)
    try:
        with conn.cursor() as cursor:
            cursor.execute("SELECT COUNT(*) FROM information_schema.innodb_trx WHERE trx_state = 'LOCK WAIT'")
            return cursor.fetchone()[0] > 0
    finally:
        conn.close()
