"""The mirrors' oracle on the real stack: a seeded random workload (tests/integration/workload.py) in
Cassandra → the connector → Kafka, every event then sent again in shuffled order as a second node's
connector would → the Spark job → a mirror in PostgreSQL, Delta and MariaDB, and each change's images on
Kafka as a consumer of them holds the rows; each must equal `SELECT *` of its source table, row for row and
value for value. The connector is killed (-9) in the middle of the
workload, the PostgreSQL job in the middle of its run; both start again from where they committed."""
from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pymysql
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from pyspark.sql.types import StringType, StructField, StructType

from deploy.local.endpoints import ROOT
from schemas.avro.reader import event_readers
from schemas.avro.serializer import table_topics_pattern
from schemas.avro.wire import frame, schema_id_of, unframe
from schemas.runtime.access import CassandraCluster
from spark.job.config import JobSettings
from spark.rows import CELLS, LOG_ROW
from spark.sinks.delta.sink import DeltaSink
from spark.sinks.images import ImagesAt
from spark.sinks.kafka.sink import KafkaSink
from spark.sinks.mirror_parts import BUCKETS, bucketed
from spark.sinks.mysql.connection import connect_dsn
from spark.sinks.mysql.mirror import MySqlMirrorSink
from spark.sinks.mysql.mirror import lock_buckets as lock_mysql_buckets
from spark.sinks.postgres.mirror import PostgresMirrorSink
from spark.sinks.postgres.mirror import lock_buckets as lock_postgres_buckets
from spark.subscriptions.model import Change
from spark.subscriptions.statements import Statement
from tests.integration.decoders import assert_decoders_agree
from tests.integration.delivered import drop_mysql_database, mysql_database, run_available
from tests.integration.micro_batches import WRITE_US, log_row
from tests.integration.mirrors import (delta_rows, diff, imaged_rows, keyed_rows, layout_of, mysql_rows, ordered,
                                       postgres_mirror, postgres_rows, source_rows, without_negative_zero)
from tests.integration.pipeline import EventConsumer, has_marker, write_marker
from tests.integration.workload import TABLES, Workload, ddl, execute
from tests.support import wait_for

pytestmark = pytest.mark.integration

# The workload of `test_every_mirror_equals_select_star`, a prefix of one seeded sequence: set
# RINGTAIL_TEST_MIRROR_STATEMENTS higher (and RINGTAIL_TEST_MIRROR_SEED) for a longer search.
STATEMENTS = int(os.environ.get("RINGTAIL_TEST_MIRROR_STATEMENTS", "10000"))
SEED = int(os.environ.get("RINGTAIL_TEST_MIRROR_SEED", "18"))
SECOND_NODE = "0b5e55ed-0000-4000-8000-00000000000b"


def resend_shuffled(stack, prefix: str, seed: int) -> int:
    """Send every event of the connector's table topics again, in shuffled order, as a second node's
    connector would: the same keys (so the same Kafka partitions), its own node id in `source`."""
    consumer = Consumer({"bootstrap.servers": stack.kafka_bootstrap, "group.id": f"resend-{uuid.uuid4()}",
                         "enable.auto.commit": False})
    tables = re.compile(table_topics_pattern(prefix))
    topics = [t for t in consumer.list_topics(timeout=10).topics if tables.fullmatch(t) and not t.endswith(".marker")]
    partitions = [TopicPartition(t, p) for t in topics
                  for p in consumer.list_topics(t, timeout=10).topics[t].partitions]
    ends = {(tp.topic, tp.partition): consumer.get_watermark_offsets(tp, timeout=10)[1] for tp in partitions}
    consumer.assign([TopicPartition(tp.topic, tp.partition, OFFSET_BEGINNING) for tp in partitions])
    records, remaining = [], {k for k, end in ends.items() if end > 0}
    while remaining:
        message = consumer.poll(5)
        assert message is not None, f"records of {sorted(remaining)} did not arrive"
        records.append(message)
        if message.offset() + 1 >= ends[(message.topic(), message.partition())]:
            remaining.discard((message.topic(), message.partition()))
    consumer.close()
    # Every event the workload made, decoded by the job's native core as by the reference.
    assert_decoders_agree(stack.registry_url, records, cells=True)
    readers = event_readers(stack.registry_url)
    copies = []
    for topic, key, value in ((m.topic(), m.key(), m.value()) for m in records):
        schema_id = schema_id_of(value)
        parsed = readers.get(schema_id).parsed
        event = unframe(value, parsed)
        event["source"]["node"] = SECOND_NODE
        copies.append((topic, key, frame(schema_id, parsed, event)))
    random.Random(seed).shuffle(copies)
    producer = Producer({"bootstrap.servers": stack.kafka_bootstrap, "enable.idempotence": True})
    for topic, key, value in copies:
        producer.produce(topic, key=key, value=value)
        producer.poll(0)
    assert producer.flush(60) == 0
    return len(copies)


def run_job_killed_once(stack, settings: JobSettings, folder: Path) -> None:
    """`python -m spark.job --available-now` as users run it, killed -9 once its first micro-batch is
    written (the next one running), then run again to the end."""
    config = folder / "postgres-job.yaml"
    config.write_text(json.dumps(settings.model_dump(mode="json")))
    log = folder / "postgres-job.log"

    def run() -> subprocess.Popen:
        with open(log, "a") as out:
            return subprocess.Popen([sys.executable, "-m", "spark.job", "--config", str(config), "--available-now"],
                                    cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)

    process = run()
    try:
        wait_for(lambda: "written: " in log.read_text() or process.poll() is not None, 300, "a first micro-batch")
        assert process.poll() is None, log.read_text()[-3000:]
        process.send_signal(signal.SIGKILL)
        process.wait(30)
        process = run()
        assert process.wait(600) == 0, log.read_text()[-3000:]
    finally:
        if process.poll() is None:
            process.kill()
    text = log.read_text()
    assert text.count("written: ") >= 2 and "Traceback" not in text, text[-3000:]


def test_every_mirror_equals_select_star(stack, cql, keyspace, tmp_path, pipeline, spark):
    connector, consumer = pipeline()
    connector.start_from_now()
    connector.start()
    for statement in ddl(keyspace):
        cql.execute(statement)
    statements = Workload(keyspace, SEED).statements(STATEMENTS)
    quarter = len(statements) // 4
    started = time.monotonic()
    execute(cql, statements[:2 * quarter])
    connector.kill()
    execute(cql, statements[2 * quarter:3 * quarter])  # while the connector is down
    connector.start()
    execute(cql, statements[3 * quarter:])
    consumer.until(has_marker(write_marker(cql, keyspace)), 300)
    copies = resend_shuffled(stack, connector.prefix, SEED)
    print(f"\n{len(statements)} statements, {copies} events, each sent twice: {time.monotonic() - started:.0f} s")

    cluster = CassandraCluster((stack.cassandra_host,), stack.cassandra_port)
    schema = f"rt_{uuid.uuid4().hex[:10]}"
    settings = JobSettings(
        kafka_bootstrap_servers=stack.kafka_bootstrap, registry_url=stack.registry_url, topic_prefix=connector.prefix,
        cassandra_hosts=cluster[0], cassandra_port=cluster[1], generations_keyspace=f"{keyspace}_gen",
        # Every copy reaches the mirrors: none is removed on the way, so the merge alone must absorb them.
        dedup=False, log_format="text", app_id=schema)
    dsn = mysql_database(stack, schema)
    try:
        started = time.monotonic()
        run_job_killed_once(stack, settings.model_copy(update={
            "sink": "postgres", "postgres_dsn": stack.postgres_dsn, "postgres_schema": schema,
            "postgres_layout": "mirror", "checkpoint_dir": tmp_path / "postgres", "max_offsets_per_trigger": 10_000,
            "spark_jars": stack.spark_jars, "spark_conf": {"spark.ui.enabled": "false"}}), tmp_path)
        print(f"PostgreSQL (killed once): {time.monotonic() - started:.0f} s")
        for name, sink in (("delta", DeltaSink(spark, tmp_path / "delta", layout="mirror", cluster=cluster)),
                           ("mysql", MySqlMirrorSink(dsn, cluster=cluster))):
            started = time.monotonic()
            run_available(spark, settings.model_copy(update={"checkpoint_dir": tmp_path / name}), sink)
            print(f"{name}: {time.monotonic() - started:.0f} s")
        started = time.monotonic()
        images = f"{schema}.images"
        run_available(spark, settings.model_copy(update={"checkpoint_dir": tmp_path / "images"}), KafkaSink(
            stack.kafka_bootstrap, images, app_id=schema, format="avro", registry_url=stack.registry_url,
            images=ImagesAt(spark, str(tmp_path / "images-state"), cluster)))
        print(f"images: {time.monotonic() - started:.0f} s")

        differences = []
        with psycopg.connect(stack.postgres_dsn) as pg:
            mysql = connect_dsn(dsn)
            for table in TABLES:
                layout = layout_of(cql, keyspace, table)
                source = source_rows(cql.cluster, layout)
                print(f"{table}: {len(source)} rows")
                for name, expected, mirror in (
                        ("postgres", source, postgres_rows(pg, layout)),
                        ("delta", source, delta_rows(spark, tmp_path / "delta", layout)),
                        ("mysql", without_negative_zero(source, layout), mysql_rows(mysql, layout)),
                        ("image", keyed_rows(source, layout),
                         imaged_rows(stack, f"{images}.{keyspace}.{table}", layout))):
                    found = diff(expected, mirror)
                    if found:
                        differences.append(f"{name} mirror of {table}: {found}")
            mysql.close()
        assert not differences, "\n".join(differences)
    finally:
        drop_mysql_database(stack, dsn)
        drop_mysql_database(stack, f"/{keyspace}")  # the mirrors' database
        drop_postgres_schemas(stack, schema, keyspace)
        cql.execute(f"DROP KEYSPACE IF EXISTS {keyspace}_gen")


# Changes whose outcome a snapshot cannot foresee (README, "Mirrors" and "Starting from a snapshot"): a
# row's cells all removed or expired (did an INSERT make it, which keeps it, or an UPDATE?), list elements
# removed (by their timeuuids), and writes dated before a deletion the table holds (a snapshot reads no
# tombstones: Cassandra shadows such a write, a mirror from a snapshot applies it).
UNFORESEEABLE = re.compile(r"= null|^DELETE (?!FROM)|\w+ = \w+ - |TTL |^(INSERT|UPDATE) .*USING .*TIMESTAMP")


def test_a_mirror_subscription_starts_from_a_snapshot_then_follows_the_log(stack, cql, keyspace, served, tmp_path):
    control, registry, run_runner, base = served
    for statement in ddl(keyspace):
        cql.execute(statement)
    workload = Workload(keyspace, SEED + 1)
    execute(cql, [s for s in workload.statements(1500) if ".wide" in s])  # the table as the snapshot finds it
    # ...and as the log holds it before the snapshot's version: a change of this part still on its way to
    # Kafka would come after the version's offsets, and be applied over the snapshot, with the outcomes a
    # snapshot cannot foresee that the second part leaves out (UNFORESEEABLE).
    consumer = EventConsumer(stack, base["topic_prefix"])
    try:
        consumer.until(has_marker(write_marker(cql, keyspace)), timeout=120)
    finally:
        consumer.close()
    schema = f"rt_{uuid.uuid4().hex[:10]}"
    control.create("copy", Change(table=f"{keyspace}.wide", sink="postgres", start="snapshot", sink_config={
        "dsn": stack.postgres_dsn, "schema": schema, "layout": "mirror"}))
    runner = run_runner(runner_id="mirror", mirror_purge_interval=1.0)
    wait_for(lambda: runner.held.get("copy") and runner.held["copy"].delivery, 90, "the subscription running")
    execute(cql, [s for s in workload.statements(1500) if ".wide" in s and not UNFORESEEABLE.search(s)])
    layout = layout_of(cql, keyspace, "wide")
    found, source = "nothing compared", []
    try:
        with psycopg.connect(stack.postgres_dsn, autocommit=True) as pg:
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline:
                source = source_rows(cql.cluster, layout)
                try:
                    found = diff(source, postgres_rows(pg, layout))
                except psycopg.errors.UndefinedTable:
                    found = "no mirror table yet"
                if not found:
                    break
                time.sleep(3)
            assert not found, found
            assert len(source) > 100, len(source)  # rows of every kind, read by the snapshot and changed after it
    finally:
        # The subscription stopped first: its purges (every second) lock the mirror's tables, and a DROP
        # beside one deadlocks.
        control.run(Statement("cancel", "copy"))
        wait_for(lambda: "copy" not in runner.held, 60, "the cancelled subscription let go")
        drop_postgres_schemas(stack, schema, keyspace)


def drop_postgres_schemas(stack, *schemas: str) -> None:
    """Drop a test's PostgreSQL schemas; a DROP that PostgreSQL chose as a deadlock's victim is made
    again (a job killed -9 leaves its session for PostgreSQL to end, locks and all)."""
    for attempt in range(5):
        try:
            with psycopg.connect(stack.postgres_dsn, autocommit=True) as pg:
                pg.execute("DROP SCHEMA IF EXISTS " + ", ".join(f'"{name}"' for name in schemas) + " CASCADE")
            return
        except psycopg.errors.DeadlockDetected:
            if attempt == 4:
                raise
            time.sleep(1)


def cell_rows(keyspace: str, column: str, count: int, write_us: int) -> list[tuple]:
    """Log rows (with their cells, as the job decodes them for a mirror) of updates setting `column` of
    rows 0…count-1 of `keyspace.kv` to ±k, at `write_us`."""
    rows = []
    for k in range(count):
        row = dict(zip(LOG_ROW.fieldNames(), log_row(k)))
        value = k if column == "a" else -k
        row.update(keyspace=keyspace, table="kv", key=json.dumps({"k": k}), partition_key=k.to_bytes(4, "big"),
                   columns={column: json.dumps(value)}, change_id=f"{column}-{k}", write_time_us=write_us)
        cells = {"k": [], "s": False, "l": None, "d": None, "c": {column: [write_us, 0, None, 0, value]}}
        rows.append((*row.values(), json.dumps(cells)))
    return rows


@pytest.mark.parametrize("kind", ["postgres", "mysql"])
def test_two_writers_of_one_mirror_take_turns_and_lose_neither_ones_cells(kind, stack, cql, keyspace, spark):
    """Two writers (two subscriptions, or a runner that lost its claim without knowing it) merge changes to
    the same rows at once, each its own column: each task takes its buckets' turn before reading the
    states, so neither writes over the other's merge."""
    cql.execute(f"CREATE TABLE {keyspace}.kv (k int PRIMARY KEY, a int, b int)")
    count = 3_000
    dsn = mysql_database(stack, f"{keyspace}_turns") if kind == "mysql" else stack.postgres_dsn
    cluster = CassandraCluster((stack.cassandra_host,), stack.cassandra_port)

    def sink(app_id: str):
        opened = (MySqlMirrorSink(dsn, app_id, cluster) if kind == "mysql" else
                  PostgresMirrorSink(dsn, f"{keyspace}_turns", app_id, cluster))
        opened.prepare()
        return opened

    schema = StructType([*LOG_ROW.fields, StructField(CELLS, StringType())])
    writers = []
    for app_id, column, written in (("a", "a", WRITE_US), ("b", "b", WRITE_US + 1)):
        writer = sink(app_id)
        frame = spark.createDataFrame(cell_rows(keyspace, column, count, written), schema)
        parts = writer.parts_of(1, {(keyspace, "kv"): count})
        writers.append((writer, parts, bucketed(frame).toArrow().to_batches()))
    try:
        with ThreadPoolExecutor(2) as pool:
            merged = list(pool.map(lambda w: w[1](iter(w[2])), writers))
        assert merged == [count, count]
        layout = layout_of(cql, keyspace, "kv")
        if kind == "mysql":
            conn = connect_dsn(dsn)
            try:
                mirror = mysql_rows(conn, layout)
            finally:
                conn.close()
        else:
            mirror = postgres_mirror(dsn, layout)
        expected = ordered({"k": k, "a": k, "b": -k} for k in range(count))
        assert mirror == expected, diff(expected, mirror)
    finally:
        for writer, _, _ in writers:
            writer.close()
        if kind == "mysql":
            drop_mysql_database(stack, dsn)


@pytest.mark.parametrize("kind", ["postgres", "mysql"])
def test_a_batchs_tasks_in_buckets_of_their_own_do_not_wait_on_each_other(kind, stack, cql, keyspace):
    """A task's turn covers its own buckets of the table, not the table: two tasks of one batch merge at once,
    and a bucket two writers share is still taken in turn."""
    cql.execute(f"CREATE TABLE {keyspace}.kv (k int PRIMARY KEY, a int, b int)")
    schema = f"{keyspace}_buckets"
    dsn = mysql_database(stack, schema) if kind == "mysql" else stack.postgres_dsn
    cluster = CassandraCluster((stack.cassandra_host,), stack.cassandra_port)
    writer = MySqlMirrorSink(dsn, "a", cluster) if kind == "mysql" else PostgresMirrorSink(dsn, schema, "a", cluster)
    writer.prepare()
    writer.parts_of(1, {(keyspace, "kv"): 1})  # the mirror's tables and its buckets
    layout = layout_of(cql, keyspace, "kv")
    if kind == "mysql":
        first, second = connect_dsn(dsn), connect_dsn(dsn)
        waited = pymysql.err.OperationalError

        def turn(conn, buckets):
            with conn.cursor() as cursor:
                lock_mysql_buckets(cursor, layout, buckets)
        with second.cursor() as cursor:
            cursor.execute("SET innodb_lock_wait_timeout = 2")
    else:
        first, second = psycopg.connect(dsn), psycopg.connect(dsn)
        waited = psycopg.errors.LockNotAvailable

        def turn(conn, buckets):
            lock_postgres_buckets(conn, schema, layout, buckets)
        second.execute("SET lock_timeout = '2s'")
    try:
        turn(first, range(0, BUCKETS, 2))
        started = time.monotonic()
        turn(second, range(1, BUCKETS, 2))
        assert time.monotonic() - started < 1, "a task waited for another's buckets"
        with pytest.raises(waited):
            turn(second, [0])
    finally:
        first.rollback()
        second.rollback()
        first.close()
        second.close()
        writer.close()
        if kind == "mysql":
            drop_mysql_database(stack, dsn)
