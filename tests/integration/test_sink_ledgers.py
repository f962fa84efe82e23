"""Every sink ledger against its real store: a batch id written again with the offsets it was written
with is a replay (skipped), with other offsets it is refused and nothing of it is written — also by a
sink opened afresh, as another runner or a restarted job opens it; a batch the SQL sinks or the Kafka
sink were cut in the middle of is finished by its replay. Delta has the state its next idempotent append reads
ready between batches. And each writer's resolved timestamps only move forward."""
from __future__ import annotations

import dataclasses
import json
import time
import uuid
from collections.abc import Callable, Iterator

import psycopg
import pytest

from schemas.runtime.access import CassandraCluster
from spark.sinks.contract import Resolved
from spark.sinks.kafka.slots import slot_of, transactional_id
from spark.sinks.ledger import BatchMismatch
from spark.sinks.mysql.connection import connect_dsn
from spark.sinks.registry import open_sink
from spark.sinks.settings import SinkContext
from tests.integration.delivered import drop_mysql_database, kafka_messages, mysql_database
from tests.integration.micro_batches import log_row, micro_batch

pytestmark = pytest.mark.integration


def kafka_values(bootstrap: str, topic: str) -> list[bytes]:
    """Every committed record's value of `topic`'s partitions, as a `read_committed` reader sees them."""
    return [message.value() for message in kafka_messages(bootstrap, topic)]


def context(stack, app_id: str) -> SinkContext:
    return SinkContext(app_id=app_id, cluster=CassandraCluster((stack.cassandra_host,), stack.cassandra_port),
                       keyspace="unused", kafka=stack.kafka_bootstrap, registry=stack.registry_url)


@pytest.fixture(params=["postgres", "mysql", "kafka", "delta"])
def store(request, stack, tmp_path) -> Iterator[tuple[str, dict, Callable[[], list[int]]]]:
    """(sink kind, its settings, the ids of the log rows it holds)."""
    run = f"ledger_{uuid.uuid4().hex[:10]}"
    kind = request.param
    if kind == "postgres":
        def ids():
            with psycopg.connect(stack.postgres_dsn) as conn:
                return [r[0] for r in conn.execute(f"SELECT (key->>'id')::int FROM {run}.cdc_log ORDER BY 1")]
        yield kind, {"dsn": stack.postgres_dsn, "schema": run}, ids
        with psycopg.connect(stack.postgres_dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {run} CASCADE")
    elif kind == "mysql":
        dsn = mysql_database(stack, run)

        def ids():
            conn = connect_dsn(dsn)
            with conn.cursor() as cursor:
                cursor.execute("SELECT JSON_VALUE(`key`, '$.id') FROM cdc_log ORDER BY 1")
                rows = [int(r[0]) for r in cursor.fetchall()]
            conn.close()
            return rows
        yield kind, {"dsn": dsn}, ids
        drop_mysql_database(stack, dsn)
    elif kind == "kafka":
        yield kind, {"topic": run}, lambda: sorted(
            json.loads(v)["key"]["id"] for v in kafka_values(stack.kafka_bootstrap, run))
    else:
        path = tmp_path / run

        def ids():
            from pyspark.sql import SparkSession

            frame = SparkSession.getActiveSession().read.format("delta").load(str(path / "cdc_log"))
            return sorted(json.loads(r.key)["id"] for r in frame.select("key").collect())
        yield kind, {"path": str(path)}, ids


def test_a_batch_id_is_a_replay_only_with_its_own_offsets(spark, stack, store):
    kind, config, ids = store

    def opened():
        sink = open_sink(spark, kind, config, context(stack, "audit.1"))
        sink.prepare()
        return sink

    sink = opened()
    sink.write(micro_batch(spark, 0, [log_row(1)], offsets="first-0"))
    sink.write(micro_batch(spark, 1, [log_row(2)], offsets="first-1"))
    sink.write(micro_batch(spark, 1, [log_row(2)], offsets="first-1"))  # a replay: skipped
    assert ids() == [1, 2]
    sink.close()

    # Opened afresh, as a runner with another checkpoint opens it: its batches 0 and 1 cover other offsets.
    again = opened()
    for batch_id, row in ((1, 3), (0, 4)):
        with pytest.raises(BatchMismatch) as refused:
            again.write(micro_batch(spark, batch_id, [log_row(row)], offsets=f"second-{batch_id}"))
        assert refused.value.batch_id == batch_id and "audit.1" in str(refused.value)
    again.write(micro_batch(spark, 1, [log_row(2)], offsets="first-1"))  # the real replay still is one
    again.write(micro_batch(spark, 2, [log_row(5)], offsets="first-2"))  # and the next batch goes in
    assert ids() == [1, 2, 5]
    again.close()


def test_a_late_copy_of_a_change_the_sink_holds_is_held_once_or_marked(spark, stack, store):
    """A row read late (a replica's copy, past the replica-copy state) is looked up by its key where the
    sink can (PostgreSQL, MySQL, Delta) and kept once; Kafka, which cannot, sends it marked."""
    kind, config, ids = store
    sink = open_sink(spark, kind, config, context(stack, "late.1"))
    sink.prepare()
    try:
        sink.write(micro_batch(spark, 0, [log_row(1), log_row(2)]))
        sink.write(micro_batch(spark, 1, [log_row(2), log_row(3)], late=True))
        sink.write(micro_batch(spark, 1, [log_row(2), log_row(3)], late=True))  # a replay: skipped
    finally:
        sink.close()
    if kind != "kafka":
        assert ids() == [1, 2, 3]
        return
    sent = [(json.loads(m.value())["key"]["id"], dict(m.headers()).get("ringtail-late"))
            for m in kafka_messages(stack.kafka_bootstrap, config["topic"])]
    assert sorted(sent, key=lambda s: (s[0], s[1] or b"")) == [(1, None), (2, None), (2, b"true"), (3, b"true")]


def test_delta_has_the_state_its_next_idempotent_append_reads_rebuilt_between_batches(spark, stack, tmp_path):
    """Delta 4.0 reads the batch versions of idempotent writes from the whole state of a table's snapshot,
    rebuilt by Spark jobs for each snapshot a commit leaves. The sink rebuilds it in the background after
    its append, so the next append finds it done, holding the batch just written."""
    lake = tmp_path / "lake"
    sink = open_sink(spark, "delta", {"path": str(lake)}, context(stack, "primed.1"))
    sink.prepare()
    try:
        sink.write(micro_batch(spark, 0, [log_row(1)], offsets="primed-0"))
        log = spark._jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, str(lake / "cdc_log"))
        snapshot = log.unsafeVolatileSnapshot()  # the one the commit left, which the next append starts from
        deadline = time.monotonic() + 60
        while not snapshot._computedStateTriggered():
            assert time.monotonic() < deadline, "the table's state was not rebuilt after the append"
            time.sleep(0.1)
        assert snapshot.transactions().apply("primed.1:cdc_log") == 0
        sink.write(micro_batch(spark, 1, [log_row(2)], offsets="primed-1"))
        assert log.unsafeVolatileSnapshot().version() == snapshot.version() + 1
    finally:
        sink.close()


def ledger_of(stack, kind: str, config: dict, app_id: str) -> list[tuple]:
    """(batch id, rows, finished) of each batch an SQL sink's ledger holds for `app_id`."""
    sql = "SELECT batch_id, `rows`, done FROM batches WHERE app_id = %s ORDER BY 1"
    if kind == "postgres":
        with psycopg.connect(stack.postgres_dsn) as conn:
            return conn.execute(sql.replace("`rows`", "rows").replace("batches", f"{config['schema']}.batches"),
                                (app_id,)).fetchall()
    conn = connect_dsn(config["dsn"])
    try:
        with conn.cursor() as cursor:
            cursor.execute(sql, (app_id,))
            return [(b, r, bool(d)) for b, r, d in cursor.fetchall()]
    finally:
        conn.close()


@pytest.mark.parametrize("store", ["postgres", "mysql"], indirect=True)
def test_a_batch_cut_between_its_parts_is_finished_by_its_replay_each_row_once(spark, stack, store):
    """The SQL sinks write a batch from the executors, a transaction per partition (`spark.sinks.parts`):
    a writer that dies after some parts leaves the batch unfinished; Spark's replay writes what is missing,
    even split otherwise, and each row is in the log once."""
    kind, config, ids = store
    whole = micro_batch(spark, 0, [log_row(n) for n in range(1, 9)], offsets="parts-0")
    assert whole.rows.rdd.getNumPartitions() == 2
    first_part = spark.createDataFrame(
        whole.rows.rdd.mapPartitionsWithIndex(lambda index, rows: rows if index == 0 else iter(())), whole.rows.schema)
    cut = dataclasses.replace(whole, rows=first_part)

    sink = open_sink(spark, kind, config, context(stack, "parts.1"))
    sink.prepare()
    assert sink.claim(cut)
    sink.write_parts(cut)  # the first partition's part is committed; then the writer dies
    sink.close()
    held = ids()
    assert 0 < len(held) < 8 and ledger_of(stack, kind, config, "parts.1") == [(0, 0, False)]

    again = open_sink(spark, kind, config, context(stack, "parts.1"))
    again.prepare()
    replay = dataclasses.replace(whole, rows=whole.rows.repartition(3))  # the same rows, split otherwise
    again.write(replay)
    assert ids() == list(range(1, 9))
    assert ledger_of(stack, kind, config, "parts.1") == [(0, 8, True)]
    again.write(whole)  # finished: a replay is skipped
    again.write(micro_batch(spark, 1, [log_row(9)], offsets="parts-1"))
    assert ids() == list(range(1, 10))
    assert ledger_of(stack, kind, config, "parts.1") == [(0, 8, True), (1, 1, True)]
    again.close()


def test_a_kafka_batch_cut_between_its_slots_is_finished_by_its_replay_each_row_once(spark, stack):
    """The Kafka sink writes a batch's rows from the executors, a transaction per slot (`kafka.slots`): a
    writer that dies after one slot leaves the batch claimed and unfinished, and a producer of another slot
    left its transaction open (an executor lost mid-slot). The replay, by a sink opened afresh, fences that
    producer and aborts its records, writes the slots not committed and skips the one committed, so a
    `read_committed` reader sees each row once."""
    from confluent_kafka import KafkaException, Producer

    topic = f"slots_{uuid.uuid4().hex[:10]}"
    whole = micro_batch(spark, 0, [log_row(n) for n in range(1, 13)], offsets="slots-0")
    slots = spark.sparkContext.defaultParallelism  # a slot per task Spark runs at once
    cut = dataclasses.replace(whole, rows=whole.rows.where(slot_of(slots) == 0))  # slot 0's share only
    other = max(r[0] for r in whole.rows.select(slot_of(slots)).distinct().collect())
    assert other != 0

    def ids() -> list[int]:
        return sorted(json.loads(v)["key"]["id"] for v in kafka_values(stack.kafka_bootstrap, topic))

    sink = open_sink(spark, "kafka", {"topic": topic}, context(stack, "slots.1"))
    sink.prepare()
    assert sink.claim(cut)
    sink.write_parts(cut)  # slot 0 is committed; then the writer dies
    sink.close()
    held = ids()
    assert 0 < len(held) < 12
    lost = Producer({"bootstrap.servers": stack.kafka_bootstrap,
                     "transactional.id": transactional_id("slots.1", other)})
    lost.init_transactions(30)
    lost.begin_transaction()
    lost.produce(topic, key=b"lost", value=json.dumps({"key": {"id": 100}}).encode())
    lost.flush(30)

    again = open_sink(spark, "kafka", {"topic": topic}, context(stack, "slots.1"))
    again.prepare()
    again.write(dataclasses.replace(whole, rows=whole.rows.repartition(4)))  # the same rows, split otherwise
    assert ids() == list(range(1, 13))
    with pytest.raises(KafkaException, match="(?i)fenced"):
        lost.commit_transaction(30)
    again.write(whole)  # finished: a replay is skipped
    again.write(micro_batch(spark, 1, [log_row(13)], offsets="slots-1"))
    assert ids() == list(range(1, 14))
    with pytest.raises(BatchMismatch):  # a batch older than the newest is no replay
        again.write(micro_batch(spark, 0, [log_row(14)], offsets="other-0"))
    again.close()


def resolved_held(stack, kind: str, config: dict) -> dict[tuple[str, str, str], int]:
    """(app id, keyspace, table) → resolved µs, as each sink holds them (Kafka: its newest marker of each)."""
    if kind == "postgres":
        with psycopg.connect(stack.postgres_dsn) as conn:
            rows = conn.execute(
                f"SELECT app_id, keyspace_name, table_name, resolved_us FROM {config['schema']}.resolved")
            return {tuple(r[:3]): r[3] for r in rows}
    if kind == "mysql":
        conn = connect_dsn(config["dsn"])
        try:
            with conn.cursor() as cursor:
                cursor.execute("SELECT app_id, keyspace_name, table_name, resolved_us FROM resolved")
                return {tuple(r[:3]): r[3] for r in cursor.fetchall()}
        finally:
            conn.close()
    if kind == "kafka":
        markers = [json.loads(v) for v in kafka_values(stack.kafka_bootstrap, f"{config['topic']}.resolved")]
        return {(m["app_id"], m["keyspace"], m["table"]): m["resolved_us"] for m in markers}
    from pyspark.sql import SparkSession

    frame = SparkSession.getActiveSession().read.format("delta").load(f"{config['path']}/resolved")
    return {(r.app_id, r.keyspace_name, r.table_name): r.resolved_us for r in frame.collect()}


def test_each_writers_resolved_timestamps_only_move_forward(spark, stack, store):
    """A resolved timestamp published again lower (a restarted writer that knows fewer frontiers yet) leaves
    the newest in the sink, a sink opened afresh included; another writer's are its own."""
    kind, config, _ = store
    first = open_sink(spark, kind, config, context(stack, "resolved.1"))
    first.prepare()
    first.publish_resolved([Resolved("shop", "orders", 200), Resolved("shop", "items", 100)])
    first.publish_resolved([Resolved("shop", "orders", 150), Resolved("shop", "items", 300)])
    first.close()
    again = open_sink(spark, kind, config, context(stack, "resolved.1"))
    again.prepare()
    again.publish_resolved([Resolved("shop", "orders", 120)])
    again.close()
    other = open_sink(spark, kind, config, context(stack, "resolved.2"))
    other.prepare()
    other.publish_resolved([Resolved("shop", "orders", 50)])
    other.close()
    assert resolved_held(stack, kind, config) == {("resolved.1", "shop", "orders"): 200,
                                                  ("resolved.1", "shop", "items"): 300,
                                                  ("resolved.2", "shop", "orders"): 50}
