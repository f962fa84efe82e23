"""Smoke tests: the services of the stack are real and do what ringtail relies on."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path


from connector.commitlog.cdc_index import indexed_segments

from deploy.local.endpoints import Stack
from tests.support import wait_for


def _idx_offsets(cdc_raw: Path) -> dict[Path, int]:
    return {segment: index.offset for segment, index in indexed_segments(cdc_raw).items()}


def test_cdc_table_writes_reach_cdc_raw_with_growing_idx(stack: Stack, cql, keyspace: str) -> None:
    cql.execute(f"CREATE TABLE {keyspace}.events (id int PRIMARY KEY, body text) WITH cdc = true")
    table_id = cql.execute(
        "SELECT id FROM system_schema.tables WHERE keyspace_name = %s AND table_name = 'events'", (keyspace,)
    ).one().id
    assert table_id is not None
    before = _idx_offsets(stack.cdc_raw)

    insert = cql.prepare(f"INSERT INTO {keyspace}.events (id, body) VALUES (?, ?)")
    for i in range(50):
        cql.execute(insert, (i, "x" * 100))

    def grown() -> dict[Path, int]:
        now = _idx_offsets(stack.cdc_raw)
        return {seg: off for seg, off in now.items() if off > before.get(seg, 0)}

    first = wait_for(grown, what="a _cdc.idx offset to grow after CDC writes")
    for segment in first:
        assert segment.is_file() and segment.parent == stack.cdc_raw
        assert segment.name.startswith("CommitLog-") and segment.suffix == ".log"

    for i in range(50, 100):
        cql.execute(insert, (i, "y" * 100))
    after_first = {**before, **first}

    def grown_again() -> dict[Path, int]:
        now = _idx_offsets(stack.cdc_raw)
        return {seg: off for seg, off in now.items() if off > after_first.get(seg, 0)}

    second = wait_for(grown_again, what="the durable offset to grow with more writes")
    # The offset only ever moves forward, within a segment or into a newer one.
    assert max(second) >= max(first)
    assert all(second[s] > first.get(s, 0) for s in second)
    # The durable offset never points past the bytes on disk.
    for segment, offset in _idx_offsets(stack.cdc_raw).items():
        if segment.exists():
            assert offset <= segment.stat().st_size


def test_kafka_produce_and_consume(stack: Stack) -> None:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"smoke-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(30)

    producer = Producer({"bootstrap.servers": stack.kafka_bootstrap, "enable.idempotence": True, "acks": "all"})
    delivered = []
    producer.produce(topic, key=b"k", value=b"hello ringtail", on_delivery=lambda err, msg: delivered.append(err))
    assert producer.flush(30) == 0
    assert delivered == [None]

    consumer = Consumer({
        "bootstrap.servers": stack.kafka_bootstrap,
        "group.id": f"smoke-{uuid.uuid4().hex[:8]}",
        "auto.offset.reset": "earliest",
    })
    consumer.subscribe([topic])
    try:
        message = wait_for(lambda: _poll_value(consumer), timeout=30, what="the produced message")
    finally:
        consumer.close()
    assert message.key() == b"k"
    assert message.value() == b"hello ringtail"
    admin.delete_topics([topic])


def _poll_value(consumer):
    message = consumer.poll(1.0)
    if message is None or message.error():
        return None
    return message


def test_registry_registers_and_returns_avro_schema(stack: Stack) -> None:
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    client = SchemaRegistryClient({"url": stack.registry_url})
    subject = f"smoke-{uuid.uuid4().hex[:8]}-value"
    text = (
        '{"type": "record", "name": "Smoke", "namespace": "ringtail.test",'
        ' "fields": [{"name": "id", "type": "int"}, {"name": "body", "type": ["null", "string"], "default": null}]}'
    )
    schema_id = client.register_schema(subject, Schema(text, "AVRO"))
    assert schema_id > 0
    fetched = client.get_schema(schema_id)
    assert fetched.schema_type == "AVRO"
    assert '"Smoke"' in fetched.schema_str and '"body"' in fetched.schema_str
    latest = client.get_latest_version(subject)
    assert latest.schema_id == schema_id
    assert latest.version == 1
    assert subject in client.get_subjects()


def test_spark_reads_kafka_with_the_fetched_jars(stack: Stack) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    topic = f"spark-smoke-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": stack.kafka_bootstrap})
    for i in range(3):
        producer.produce(topic, key=str(i).encode(), value=f"change {i}".encode())
    assert producer.flush(30) == 0

    # getOrCreate returns the tests' shared session when one runs already: stopping it here would stop it
    # for every later test.
    shared = SparkContext._active_spark_context is not None
    spark = (
        SparkSession.builder.master("local[1]")
        .appName("ringtail-smoke")
        .config("spark.jars", ",".join(stack.spark_jars))
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .getOrCreate()
    )
    try:
        rows = (
            spark.read.format("kafka")
            .option("kafka.bootstrap.servers", stack.kafka_bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .option("endingOffsets", "latest")
            .load()
            .selectExpr("CAST(key AS STRING) AS k", "CAST(value AS STRING) AS v", "offset")
            .orderBy("offset")
            .collect()
        )
    finally:
        if not shared:
            spark.stop()
    assert [(r.k, r.v) for r in rows] == [("0", "change 0"), ("1", "change 1"), ("2", "change 2")]
    admin.delete_topics([topic])


def test_ports_another_stack_holds_are_refused_before_anything_starts(stack: Stack, tmp_path: Path) -> None:
    """A second checkout's stack (its own run directory) on the ports of the running one: its services would
    "answer" at once, so its tests would talk to the other stack; the start refuses, naming each port."""
    script = Path(__file__).resolve().parents[2] / "deploy" / "local" / "stack.py"
    run = subprocess.run([sys.executable, str(script), "start", "registry", "postgres"], capture_output=True,
                         text=True, timeout=120, env={**os.environ, "RINGTAIL_STACK_RUN_DIR": str(tmp_path)})
    assert run.returncode == 1, run.stderr
    assert "(RINGTAIL_STACK_REGISTRY_PORT) for registry" in run.stderr, run.stderr
    assert "(RINGTAIL_STACK_POSTGRES_PORT) for postgres" in run.stderr, run.stderr
    assert "deploy/local/stop there" in run.stderr
    assert not (tmp_path / "registry").exists() and not (tmp_path / "postgres").exists(), "something was started"

