"""The PostgreSQL sink against the real database and a local Spark: values, replays, replica copies,
dead letters, concurrent writers of one batch, generations."""
from __future__ import annotations

import datetime
import json
import threading
import time
import uuid

import psycopg
import pytest

from deploy.local.endpoints import Stack
from spark.rows import DEAD_LETTER, LOG_ROW, PARTITION_DELETE, ROW_UPDATE
from spark.sinks.postgres.log import PostgresSink
from spark.streams import Generation, Generations, build_topology_description
from tests.integration.micro_batches import STREAM_A, WRITE_US, log_row, micro_batch
from tests.support import micros

pytestmark = pytest.mark.integration

UTC = datetime.timezone.utc
STREAM_B = bytes.fromhex("8000000000000000ffffffff00000021")
ELEMENT = "757e5210-7cbb-11ee-9858-c9aa1eb53e69"


def dead_letter(offset: int, reason: str = "undecodable", detail: str = "bad magic byte") -> tuple:
    row = {
        "reason": reason, "detail": detail, "topic": "ringtail.shop.orders", "partition": 1, "offset": offset,
        "kafka_time": micros(WRITE_US + offset), "key": b"\x00\x01", "value": b"\xff\x00'\"\\",
        "keyspace": None, "table": None, "write_time_us": None, "change_id": None,
    }
    return tuple(row[name] for name in DEAD_LETTER.fieldNames())


@pytest.fixture
def sink(stack: Stack):
    schema = f"rt_{uuid.uuid4().hex[:12]}"
    sink = PostgresSink(stack.postgres_dsn, schema=schema, app_id="sink-test")
    sink.prepare()
    sink.prepare()  # again: nothing changes, nothing fails
    yield sink
    with psycopg.connect(stack.postgres_dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def query(sink: PostgresSink, sql: str, params: tuple = ()) -> list[tuple]:
    with psycopg.connect(sink.dsn, autocommit=True) as conn:
        return conn.execute(sql.replace("{s}", f'"{sink.schema}"'), params).fetchall()


# Values with every JSON shape of rows.py, and text that CSV, COPY and jsonb must carry unchanged.
RICH_COLUMNS = {
    "name": json.dumps("O'Brien, \"Bob\"\nline two\t\\ é 😀"),
    "items": json.dumps({ELEMENT: 5}),
    "tags": json.dumps(["a", "b"]),
    "attrs": json.dumps([["k", 1], ["l", None]]),
    "home": json.dumps({"street": "rue", "zip": 75001}),
    "at": json.dumps(1_699_284_279_123),
    "d": json.dumps({"months": 1, "days": 2, "nanoseconds": 3}),
    "amount": json.dumps("-12.345"),
    "data": json.dumps("0x00ff"),
    "score": "NaN",
    "ratios": "[1.5, NaN, -Infinity]",
    "nul": json.dumps("a\x00b"),
    "empty": '""',
}


def test_rows_and_dead_letters_land_once_with_exact_values(spark, sink: PostgresSink) -> None:
    rich = log_row(1, operation=ROW_UPDATE, columns=RICH_COLUMNS, deleted=["note"],
                   elements={"tags": '["x"]', "items": json.dumps([ELEMENT])}, ttl=3600)
    rows = [
        rich,
        log_row(1, seq=1, operation=ROW_UPDATE, stream=STREAM_A),
        log_row(2, stream=STREAM_B),
        log_row(2, stream=STREAM_B, node="n2"),  # the same change read from another replica
        log_row(3, operation=PARTITION_DELETE, columns={}),
    ]
    sink.write(micro_batch(spark, 0, rows, [dead_letter(7), dead_letter(7), dead_letter(8, "no_generation", "")]))

    assert query(sink, "SELECT app_id, batch_id, rows, dead_letters FROM {s}.batches") == [("sink-test", 0, 4, 2)]
    (got,) = query(sink, 'SELECT * FROM {s}.cdc_log WHERE "cdc$batch_seq_no" = 0 AND key->>\'id\' = \'1\'')
    names = LOG_ROW.fieldNames()
    expected = dict(zip(names, rich))
    row = dict(zip(names, got))
    assert row["keyspace"] == "shop" and row["table"] == "orders"
    assert row["cdc$stream_id"] == STREAM_A and row["cdc$time"] == uuid.UUID(expected["cdc$time"])
    assert (row["cdc$batch_seq_no"], row["cdc$operation"], row["cdc$ttl"], row["cdc$end_of_batch"]) \
        == (0, 1, 3600, True)
    assert row["key"] == {"id": 1, "region": "eu"}
    assert row["columns"] == {
        "name": "O'Brien, \"Bob\"\nline two\t\\ é 😀", "items": {ELEMENT: 5}, "tags": ["a", "b"],
        "attrs": [["k", 1], ["l", None]], "home": {"street": "rue", "zip": 75001}, "at": 1_699_284_279_123,
        "d": {"months": 1, "days": 2, "nanoseconds": 3}, "amount": "-12.345", "data": "0x00ff",
        "score": "NaN", "ratios": [1.5, "NaN", "-Infinity"],
        "nul": '"a\\u0000b"',  # jsonb cannot hold \u0000: the JSON text is kept as a string
        "empty": "",
    }
    assert row["deleted_columns"] == ["note"]
    assert row["deleted_elements"] == {"tags": ["x"], "items": [ELEMENT]}
    assert row["write_time"] == expected["write_time"] and row["write_time_us"] == WRITE_US + 1
    assert row["partition_key"] == b"\x00\x00\x00\x01" and row["token"] == expected["token"]
    assert row["generation"] == expected["generation"] and row["kafka_time"] == expected["kafka_time"]
    assert row["change_id"] == "change-1"
    assert row["source"] == expected["source"]

    assert query(sink, 'SELECT key->>\'id\', "cdc$batch_seq_no", "cdc$operation", columns, deleted_columns'
                       ' FROM {s}.cdc_log ORDER BY 1, 2') == [
        ("1", 0, 1, row["columns"], ["note"]),
        ("1", 1, 1, {"name": "order 1"}, []),
        ("2", 0, 2, {"name": "order 2"}, []),
        ("3", 0, 4, {}, []),
    ]
    letters = query(sink, 'SELECT topic, partition, "offset", reason, detail, kafka_time, key, value, keyspace,'
                          ' "table", write_time_us, change_id, app_id, batch_id FROM {s}.dead_letters ORDER BY 3')
    assert letters == [
        ("ringtail.shop.orders", 1, 7, "undecodable", "bad magic byte", micros(WRITE_US + 7), b"\x00\x01",
         b"\xff\x00'\"\\", None, None, None, None, "sink-test", 0),
        ("ringtail.shop.orders", 1, 8, "no_generation", "", micros(WRITE_US + 8), b"\x00\x01",
         b"\xff\x00'\"\\", None, None, None, None, "sink-test", 0),
    ]

    # Spark replays batch 0 after a crash: the ledger makes it a no-op.
    before = query(sink, "SELECT written_at FROM {s}.batches")
    sink.write(micro_batch(spark, 0, rows + [log_row(9)], [dead_letter(9)]))
    assert query(sink, "SELECT count(*) FROM {s}.cdc_log") == [(4,)]
    assert query(sink, "SELECT count(*) FROM {s}.dead_letters") == [(2,)]
    assert query(sink, "SELECT written_at FROM {s}.batches") == before

    # A later batch holding the same changes again (a connector replay): only the new one is inserted.
    # Its text that is not JSON is kept as a string rather than failing the batch on every replay.
    broken = log_row(4, columns={"broken": "{not json", "fine": "[1]"})
    sink.write(micro_batch(spark, 1, rows + [broken], [dead_letter(7)]))
    assert query(sink, "SELECT count(*) FROM {s}.cdc_log") == [(5,)]
    assert query(sink, "SELECT columns FROM {s}.cdc_log WHERE key->>'id' = '4'") == [
        ({"broken": "{not json", "fine": [1]},)]
    assert query(sink, "SELECT batch_id, rows, dead_letters FROM {s}.batches ORDER BY 1") == [(0, 4, 2), (1, 1, 0)]

    sink.write(micro_batch(spark, 2, []))  # an empty batch is recorded too
    assert query(sink, "SELECT rows, dead_letters FROM {s}.batches WHERE batch_id = 2") == [(0, 0)]


def test_a_batch_of_plain_rows_goes_in_by_casts_with_every_text_exact(spark, sink: PostgresSink) -> None:
    """Rows without NaN, Infinity or \\u0000 go in by casts, their objects and arrays made on the executors:
    names and texts that JSON, CSV and PostgreSQL's array input each quote differently arrive exact, and
    a part holding text that is not JSON still goes in, that text kept as a string."""
    plain = {**{k: v for k, v in RICH_COLUMNS.items() if k not in ("score", "ratios", "nul")},
             'we"ird\\name': json.dumps(1), "none": "null"}
    deleted = ["a,b", 'q"uote', "back\\slash", "{brace}", "NULL", " spaced "]
    rows = [log_row(1, operation=ROW_UPDATE, columns=plain, deleted=deleted,
                    elements={'t"ags': '["x"]', "items": json.dumps([ELEMENT])}),
            log_row(2, stream=STREAM_B)]
    sink.write(micro_batch(spark, 0, rows))
    got = query(sink, 'SELECT columns, deleted_columns, deleted_elements FROM {s}.cdc_log ORDER BY key->>\'id\'')
    assert got[0] == ({**{k: json.loads(v) for k, v in plain.items()}}, deleted,
                      {'t"ags': ["x"], "items": [ELEMENT]})
    assert got[1] == ({"name": "order 2"}, [], {})

    broken = log_row(3, columns={"broken": "{not json", "fine": "[1]"})
    sink.write(micro_batch(spark, 1, [broken, log_row(4)]))
    assert query(sink, "SELECT columns FROM {s}.cdc_log WHERE key->>'id' = '3'") == [
        ({"broken": "{not json", "fine": [1]},)]
    assert query(sink, "SELECT rows FROM {s}.batches ORDER BY batch_id") == [(2,), (2,)]


def test_two_writers_of_one_batch_write_it_once(spark, sink: PostgresSink) -> None:
    for committed, batch_id in ((True, 5), (False, 6)):
        holder = psycopg.connect(sink.dsn)  # another writer, mid-transaction on the same batch
        holder.execute(f'INSERT INTO "{sink.schema}".batches (app_id, batch_id, rows, dead_letters)'
                       " VALUES (%s, %s, 7, 0)", (sink.app_id, batch_id))
        errors: list[BaseException] = []

        def write() -> None:
            try:
                sink.write(micro_batch(spark, batch_id, [log_row(50 + batch_id)]))
            except BaseException as exc:  # surfaced below
                errors.append(exc)

        writer = threading.Thread(target=write)
        writer.start()
        time.sleep(1.5)
        assert writer.is_alive()  # waiting on the other writer's claim
        holder.commit() if committed else holder.rollback()
        holder.close()
        writer.join(120)
        assert not writer.is_alive() and not errors
        count = query(sink, "SELECT count(*) FROM {s}.cdc_log WHERE key->>'id' = %s", (str(50 + batch_id),))
        ledger = query(sink, "SELECT rows FROM {s}.batches WHERE batch_id = %s", (batch_id,))
        # Committed: the other writer owns the batch and this one wrote nothing. Rolled back: this one did.
        assert (count, ledger) == (([(0,)], [(7,)]) if committed else ([(1,)], [(1,)]))


def test_app_ids_keep_separate_ledgers(spark, sink: PostgresSink) -> None:
    other = PostgresSink(sink.dsn, schema=sink.schema, app_id="other-app")
    sink.write(micro_batch(spark, 0, [log_row(1)]))
    other.write(micro_batch(spark, 0, [log_row(1), log_row(2)]))
    assert query(sink, "SELECT app_id, rows FROM {s}.batches ORDER BY 1") == [("other-app", 1), ("sink-test", 1)]


def test_generations_published_and_readable(sink: PostgresSink) -> None:
    t0 = 1_700_000_000_000_000
    first = build_topology_description({"n1": (-100, 100), "n2": (0,)}, shards=3, rand=1)
    second = build_topology_description({"n1": (-100, 100), "n2": (0, 50)}, shards=2, rand=2)
    generations = Generations([Generation(t0, first), Generation(t0 + 65_000_000, second),
                               Generation(t0 + 130_000_000)])
    sink.publish_generations(generations)
    sink.publish_generations(generations)  # idempotent

    assert query(sink, "SELECT time, expired FROM {s}.cdc_generation_timestamps ORDER BY time") == [
        (micros(t0), None), (micros(t0 + 65_000_000), None)]
    for timestamp, description in ((t0, first), (t0 + 65_000_000, second)):
        rows = query(sink, "SELECT range_end, streams FROM {s}.cdc_streams_descriptions_v2 WHERE time = %s"
                           " ORDER BY range_end", (micros(timestamp),))
        assert rows == [(e.token_range_end, [s.value for s in e.streams]) for e in description.entries]

    day = 86_400 * 1_000_000
    generations.expire(t0 + 100_000_000 + day, 86_400)  # the first generation's rows are all dead
    sink.publish_generations(generations)
    assert query(sink, "SELECT expired FROM {s}.cdc_generation_timestamps ORDER BY time") == [
        (micros(t0 + 65_000_000 + day),), (None,)]
