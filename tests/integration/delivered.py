"""What a job or a runner delivered, read back from each sink, and the job run as the tests run it: to the
end of what Kafka holds now."""
from __future__ import annotations

import json
import uuid
from collections import Counter
from pathlib import Path

import psycopg
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

from schemas.runtime.access import KafkaSecurity
from spark.delivery.generations import GenerationKeeper
from spark.delivery.pipeline import BatchWriter, start
from spark.delivery.tally import BatchCounts
from spark.job.config import JobSettings
from spark.sinks.delta.sink import DeltaSink
from spark.sinks.mysql.connection import connect_dsn
from tests.integration.lake import delta_log


def run_available(spark, settings: JobSettings, sink=None, counted: list[BatchCounts] | None = None) -> list[dict]:
    """Run the job over what Kafka holds now, to the end; each micro-batch's counts go to `counted`. The
    query's progress reports."""
    sink = sink or DeltaSink(spark, settings.delta_path, settings.app_id)
    keeper = writer = None
    if counted is not None:
        keeper = GenerationKeeper(settings)
        writer = BatchWriter(settings, sink, keeper, after_write=lambda counts, _: counted.append(counts))
    job = start(spark, settings, sink, available_now=True, writer=writer)
    try:
        job.query.awaitTermination(300)
        assert job.query.exception() is None
        return job.query.recentProgress
    finally:
        job.query.stop()
        job.close()
        if keeper is not None:
            keeper.close()


def log_rows(spark, settings: JobSettings, keyspace: str, table: str) -> list[dict]:
    frame = spark.read.format("delta").load(f"{settings.delta_path}/cdc_log").where(
        f"keyspace = '{keyspace}' AND `table` = '{table}'")
    return [r.asDict(recursive=True) for r in frame.orderBy("write_time_us", "cdc$batch_seq_no").collect()]


def dead_letters(spark, settings: JobSettings) -> list[dict]:
    path = settings.delta_path / "dead_letters"
    return [r.asDict() for r in spark.read.format("delta").load(str(path)).collect()] if path.exists() else []


def mysql_database(stack, name: str) -> str:
    """The DSN of a new database `name` on the stack's MariaDB (its user may create databases)."""
    conn = connect_dsn(stack.mysql_dsn)
    with conn.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE IF NOT EXISTS `{name}`")
    conn.close()
    return stack.mysql_dsn.rsplit("/", 1)[0] + f"/{name}"


def drop_mysql_database(stack, dsn: str) -> None:
    conn = connect_dsn(stack.mysql_dsn)
    with conn.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS `{dsn.rsplit('/', 1)[1]}`")
    conn.close()


def kafka_messages(bootstrap: str, topic: str, security: KafkaSecurity = KafkaSecurity()) -> list:
    """Every committed record of `topic`'s partitions, as a `read_committed` reader sees them."""
    consumer = Consumer({**security.librdkafka(bootstrap), "group.id": f"t-{uuid.uuid4()}",
                         "isolation.level": "read_committed", "enable.partition.eof": True})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        values, ended = [], set()
        while len(ended) < len(partitions):
            message = consumer.poll(10)
            assert message is not None, f"{topic}: no end of partition within 10 s"
            if message.error():
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                ended.add(message.partition())
            else:
                values.append(message)
        return values
    finally:
        consumer.close()


def delta_ids(path: Path, operation: int | None = None) -> Counter:
    """How many times each `orders` id was delivered to the Delta sink at `path` (none before its first
    batch); with `operation`, only the log rows of that operation."""
    log = delta_log(path / "cdc_log", ["key", "cdc$operation"]).to_pylist()
    return Counter(json.loads(r["key"])["id"] for r in log if operation in (None, r["cdc$operation"]))


def pg_ids(dsn: str, schema: str) -> Counter:
    with psycopg.connect(dsn) as conn:
        exists = conn.execute("SELECT to_regclass(%s)", (f"{schema}.cdc_log",)).fetchone()[0]
        if exists is None:
            return Counter()
        rows = conn.execute(f"SELECT (key->>'id')::int FROM {schema}.cdc_log WHERE \"table\" = 'orders'").fetchall()
    return Counter(r[0] for r in rows)
