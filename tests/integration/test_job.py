"""The Spark job end to end on the real stack: CQL writes → connector process → Kafka → Spark
(decoding through the real registry, stream ids, replica copies removed) → Delta tables."""
from __future__ import annotations

import datetime as dt
import json
import re
import signal
import subprocess
import sys
import time
import uuid

import psycopg
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient

from deploy.local.endpoints import ROOT
from schemas.avro.registry import SchemaRegistry
from schemas.runtime.access import CassandraCluster
from pyspark.sql import functions as F
from deploy.local.receiver import Receiver
from schemas.cql import parse_type
from schemas.tables.loader import read_table
from spark import rows as R
from spark.delivery.generations import GenerationKeeper
from spark.delivery.pipeline import BatchWriter, start
from spark.delivery.tally import BatchCounts
from spark.sinks.contract import utc_time
from spark.sinks.delta.sink import DeltaSink
from spark.sinks.http.sink import HttpSink
from spark.sinks.kafka.sink import KafkaSink
from spark.sinks.log_table import LogLayout
from spark.sinks.mysql.connection import connect_dsn
from spark.sinks.mysql.log import MySqlSink
from spark.sinks.mysql.typed import MySqlTypedSink
from spark.sinks.postgres.log import PostgresSink
from spark.sinks.postgres.typed import PostgresTypedSink
from spark.streams.generations import MICROS_PER_SECOND, Generation, Generations
from spark.streams.storage import GenerationStore
from spark.streams.topology import build_topology_description
from tests.integration.decoders import assert_decoders_agree
from tests.integration.delivered import dead_letters, drop_mysql_database, log_rows, mysql_database, run_available
from tests.integration.mirrors import log_json, mysql_values, postgres_values
from tests.integration.pipeline import has_marker, write_marker
from tests.integration.serving import CUT_BATCH
from tests.integration.suites.job import JobIntoDelta
from tests.support import wait_for


class TestJobIntoDelta(JobIntoDelta):
    """On the main node (`suites/job.py`)."""


def records_of(stack, topic: str) -> list:
    """Every committed record `topic` holds now, in offset order per partition."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": stack.kafka_bootstrap, "group.id": f"copy-{uuid.uuid4()}",
                         "enable.auto.commit": False, "isolation.level": "read_committed",
                         "enable.partition.eof": True})
    partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
    records, done = [], set()
    while len(done) < len(partitions):
        message = consumer.poll(1)
        if message is None:
            continue
        if message.error():
            if message.error().code() == KafkaError._PARTITION_EOF:
                done.add(message.partition())
            continue
        records.append(message)
    consumer.close()
    return records


def copy_as_another_replica(stack, topic: str, node: str) -> int:
    """Produce every event of `topic` again as the connector beside another replica would send it:
    the same change, read from another node's commit log (a single-node stack has one log)."""
    from confluent_kafka import Producer
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from fastavro import parse_schema

    from schemas.avro.wire import frame, schema_id_of, unframe

    registry = SchemaRegistryClient({"url": stack.registry_url})
    producer = Producer({"bootstrap.servers": stack.kafka_bootstrap})
    records = records_of(stack, topic)
    for message in records:
        schema_id = schema_id_of(message.value())
        schema = parse_schema(json.loads(registry.get_schema(schema_id).schema_str))
        event = unframe(message.value(), schema)
        event["source"]["node"] = node
        producer.produce(topic, key=message.key(), value=frame(schema_id, schema, event))
    assert producer.flush(30) == 0
    return len(records)


def test_python_workers_start_from_ringtails_daemon(spark):
    """Each Python worker was forked from `spark.python_daemon`: with its collector's policy, and with the
    modules tasks import loaded before the fork and frozen out of the collector's reach."""
    from spark.python_daemon import FULL_COLLECTION_EVERY, PRELOADED

    def worker(_):
        import gc
        import sys
        return gc.get_threshold()[2], gc.get_freeze_count(), [name for name in PRELOADED if name not in sys.modules]

    workers = spark.sparkContext.parallelize(range(4), 4).map(worker).collect()
    assert [threshold for threshold, _, _ in workers] == [FULL_COLLECTION_EVERY] * 4
    assert [missing for _, _, missing in workers] == [[]] * 4
    assert min(frozen for _, frozen, _ in workers) > 50_000  # the preloaded modules' objects, and pyspark's


def test_the_delta_sink_holds_the_generations_it_was_last_given(spark, tmp_path):
    """Created by the first publication, rewritten whole by the next: the same content again, then a new
    generation with the old one expired. A generation known by its timestamp only is left out."""
    ring = {"a": (-2**62, 0, 2**62), "b": (-2**61, 2**61)}
    first, second = build_topology_description(ring, rand=1), build_topology_description(ring, rand=2)
    t0 = 1_700_000_000_000_000
    sink = DeltaSink(spark, tmp_path / "delta")

    def held() -> tuple[list, list]:
        def utc(time):
            return None if time is None else time.replace(tzinfo=dt.timezone.utc)

        timestamps = spark.read.format("delta").load(sink.table("cdc_generation_timestamps")).collect()
        streams = spark.read.format("delta").load(sink.table("cdc_streams_descriptions_v2")).collect()
        return (sorted((utc(r.time), utc(r.expired)) for r in timestamps),
                sorted((utc(r.time), r.range_end, tuple(r.streams)) for r in streams))

    def streams_of(description, time: int) -> list:  # in the order `held` sorts them
        return sorted((utc_time(time), e.token_range_end, tuple(s.value for s in e.streams))
                      for e in description.entries)

    one = Generations([Generation(t0, first)])
    sink.publish_generations(one)
    assert held() == ([(utc_time(t0), None)], streams_of(first, t0))
    sink.publish_generations(one)
    assert held() == ([(utc_time(t0), None)], streams_of(first, t0))

    t1, expired = t0 + 65_000_000, t0 + 90_000_000
    sink.publish_generations(Generations([Generation(t0, first, expired=expired), Generation(t1, second),
                                          Generation(t1 + 65_000_000)]))
    assert held() == ([(utc_time(t0), utc_time(expired)), (utc_time(t1), None)],
                      sorted(streams_of(first, t0) + streams_of(second, t1)))


def test_replica_copies_are_logged_once(spark, cql, keyspace, job, stack):
    connector, consumer, settings = job
    cql.execute(f"CREATE TABLE {keyspace}.kv (k int PRIMARY KEY, v text) WITH cdc = true")
    for k in range(30):
        cql.execute(f"INSERT INTO {keyspace}.kv (k, v) VALUES (%s, 'v')", (k,))
    consumer.until(has_marker(write_marker(cql, keyspace)))
    assert copy_as_another_replica(stack, f"{connector.prefix}.{keyspace}.kv", "replica-2") == 30

    progress = run_available(spark, settings)

    rows = log_rows(spark, settings, keyspace, "kv")
    assert sorted(json.loads(r["key"])["k"] for r in rows) == list(range(30))
    assert {r["source"]["node"] for r in rows} == {rows[0]["source"]["node"]} != {"replica-2"}
    # Each copy shares its first copy's partition and micro-batch, so its task skipped it before decoding:
    # the replica-copy state had none to drop.
    assert sum(op["customMetrics"].get("numDroppedDuplicateRows", 0)
               for p in progress for op in p["stateOperators"]) == 0

    # With removal switched off, both copies are logged.
    undeduplicated = settings.model_copy(update={"dedup": False, "delta_path": settings.delta_path.parent / "all",
                                                 "checkpoint_dir": settings.checkpoint_dir.parent / "all-checkpoint"})
    run_available(spark, undeduplicated)
    assert len(log_rows(spark, undeduplicated, keyspace, "kv")) == 60


def read_rows(query, at_least: int, timeout: float = 180) -> list[dict]:
    """The progress of `query`'s micro-batches once they have read `at_least` rows in all."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert query.exception() is None
        progress = query.recentProgress
        if sum(p["numInputRows"] for p in progress) >= at_least and not query.status["isTriggerActive"]:
            return progress
        time.sleep(0.5)
    raise AssertionError(f"{query.name} read fewer than {at_least} rows in {timeout} s")


def test_a_partition_read_late_is_delivered(spark, cql, keyspace, job, stack):
    """Writes two hours old reach the job (one partition with Kafka times an hour older than what it
    already read, as after an outage): past the replica-copy watermark, they are logged all the same,
    each counted late; the first half sent again later (a replica's copy, long after the first) is
    found in the Delta log by its key and not appended twice."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    connector, consumer, settings = job
    cql.execute(f"CREATE TABLE {keyspace}.kv (k int PRIMARY KEY, v text) WITH cdc = true")
    written = int((time.time() - 2 * 3600) * MICROS_PER_SECOND)  # before the late partition's Kafka time
    for k in range(40):
        cql.execute(f"INSERT INTO {keyspace}.kv (k, v) VALUES (%s, 'v') USING TIMESTAMP %s", (k, written + k))
    consumer.until(has_marker(write_marker(cql, keyspace)))
    records = records_of(stack, f"{connector.prefix}.{keyspace}.kv")
    assert len(records) == 40

    # The job reads a topic of its own: partition 0 now, partition 1 an hour late.
    settings = settings.model_copy(update={"topic_prefix": f"late{uuid.uuid4().hex[:8]}"})
    topic = f"{settings.topic_prefix}.{keyspace}.kv"
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": stack.kafka_bootstrap})

    def produce(messages, partition: int, timestamp_ms: int) -> None:
        for message in messages:
            producer.produce(topic, key=message.key(), value=message.value(), partition=partition,
                             timestamp=timestamp_ms)
        assert producer.flush(30) == 0

    sink, keeper, counted = DeltaSink(spark, settings.delta_path, settings.app_id), GenerationKeeper(settings), []
    writer = BatchWriter(settings, sink, keeper, after_write=lambda counts, _: counted.append(counts))
    job = start(spark, settings, sink, writer=writer)
    try:
        produce(records[:20], 0, int(time.time() * 1000))
        read_rows(job.query, 20)
        produce(records[20:], 1, int((time.time() - 3600) * 1000))
        read_rows(job.query, 40)
        produce(records[:20], 1, int(time.time() * 1000))
        progress = read_rows(job.query, 60)
    finally:
        job.query.stop()
        job.close()
        keeper.close()

    rows = log_rows(spark, settings, keyspace, "kv")
    assert sorted(json.loads(r["key"])["k"] for r in rows) == list(range(40))
    assert not dead_letters(spark, settings)
    # The copies sent again were read within the window of the first: the replica-copy state removed them.
    assert [c.late for c in counted if c.rows] == [20, 20] and sum(c.rows for c in counted) == 40
    assert sum(op.get("numRowsDroppedByWatermark", 0) for p in progress for op in p["stateOperators"]) == 0


def test_generation_switch_mid_stream(spark, cql, keyspace, job):
    """A new generation at T (here: the job restarted with more shards per node, which ScyllaDB
    treats like a topology change): writes before T keep the old streams, writes after use the new."""
    connector, consumer, settings = job
    cql.execute(f"CREATE TABLE {keyspace}.kv (k int PRIMARY KEY, v int) WITH cdc = true")
    insert = cql.prepare(f"INSERT INTO {keyspace}.kv (k, v) VALUES (?, ?)")
    for k in range(20):
        cql.execute(insert, (k, 0))
    consumer.until(has_marker(write_marker(cql, keyspace)))
    run_available(spark, settings)

    more_shards = settings.model_copy(update={"shards": 4})
    run_available(spark, more_shards)  # notices the change and publishes a generation at now + delay
    generations = GenerationStore(cql, settings.generations_keyspace).load()
    assert len(generations.generations) == 2
    switch = generations.generations[1].timestamp
    # Writes on both sides of T, and for two seconds at least: on a loaded machine the job's run above may
    # end after T, and writes must still land after it.
    until = max(switch + 1_000_000, time.time() * MICROS_PER_SECOND + 2_000_000)
    while time.time() * MICROS_PER_SECOND < until:
        cql.execute(insert, (int(time.time() * 10) % 20, 1))
        time.sleep(0.2)
    consumer.until(has_marker(write_marker(cql, keyspace)))
    run_available(spark, more_shards)

    rows = log_rows(spark, more_shards, keyspace, "kv")
    before = [r for r in rows if r["write_time_us"] < switch]
    after = [r for r in rows if r["write_time_us"] >= switch]
    assert before and after
    old, new = generations.generations
    for r in before:
        assert r["generation"].timestamp() * MICROS_PER_SECOND == pytest.approx(old.timestamp)
        assert r["cdc$stream_id"] == old.topology().get_stream(r["token"]).value
    for r in after:
        assert r["generation"].timestamp() * MICROS_PER_SECOND == pytest.approx(new.timestamp)
        assert r["cdc$stream_id"] == new.topology().get_stream(r["token"]).value
    assert {new.topology().get_stream(r["token"]).value for r in after} <= {s.value for s in new.topology().streams}


class CrashAfterWrite:
    """A real sink, with the process 'dying' right after batch `at` reached it and before Spark could
    record the batch as done."""

    def __init__(self, sink, at: int) -> None:
        self.sink, self.at = sink, at
        self.merges_cells, self.reads_batch_whole = sink.merges_cells, sink.reads_batch_whole
        self.resolved_every = sink.resolved_every

    def prepare(self) -> None:
        self.sink.prepare()

    def publish_generations(self, generations) -> None:
        self.sink.publish_generations(generations)

    def publish_resolved(self, resolved) -> None:
        self.sink.publish_resolved(resolved)

    def close(self) -> None:
        self.sink.close()

    def write(self, batch) -> None:
        self.sink.write(batch)
        if batch.id == self.at:
            raise RuntimeError(f"crash after writing batch {batch.id}")


def test_a_batch_replayed_after_a_crash_is_written_once(spark, cql, keyspace, job, stack, tmp_path):
    connector, consumer, settings = job
    settings = settings.model_copy(update={"max_offsets_per_trigger": 30})  # several batches
    cql.execute(f"CREATE TABLE {keyspace}.kv (k int PRIMARY KEY, v text) WITH cdc = true")
    for k in range(100):
        cql.execute(f"INSERT INTO {keyspace}.kv (k, v) VALUES (%s, 'v')", (k,))
    consumer.until(has_marker(write_marker(cql, keyspace)))

    sink = DeltaSink(spark, settings.delta_path, settings.app_id)
    job = start(spark, settings, CrashAfterWrite(sink, at=2), available_now=True)
    with pytest.raises(Exception, match="crash after writing batch 2"):
        job.query.awaitTermination(300)
    job.close()
    written_before_restart = len(log_rows(spark, settings, keyspace, "kv"))
    assert 0 < written_before_restart < 100

    run_available(spark, settings)  # Spark replays batch 2; Delta skips what it already holds

    rows = log_rows(spark, settings, keyspace, "kv")
    assert sorted(json.loads(r["key"])["k"] for r in rows) == list(range(100))

    def crash_then_replay(open_sink, name: str) -> None:
        """A job whose process dies after batch 2 reached the sink, then a new one (a new sink) replaying it."""
        copy = settings.model_copy(update={"checkpoint_dir": settings.checkpoint_dir.parent / f"checkpoint-{name}"})
        job = start(spark, copy, CrashAfterWrite(open_sink(), at=2), available_now=True)
        with pytest.raises(Exception, match="crash after writing batch 2"):
            job.query.awaitTermination(300)
        job.close()
        run_available(spark, copy, open_sink())

    # MySQL (MariaDB): batch 2 is in the ledger already and is skipped; the rows are there once.
    database = mysql_database(stack, f"{keyspace}_sink")
    try:
        crash_then_replay(lambda: MySqlSink(database, app_id=settings.app_id), "mysql")
        conn = connect_dsn(database)
        with conn.cursor() as cursor:
            cursor.execute("SELECT JSON_VALUE(`key`, '$.k') FROM cdc_log WHERE `table` = 'kv'")
            assert sorted(int(k) for (k,) in cursor.fetchall()) == list(range(100))
        conn.close()
    finally:
        drop_mysql_database(stack, database)

    # Kafka: batch 2 is in the ledger already, so a read_committed consumer sees every change once.
    topic = f"{connector.prefix}-sink"
    crash_then_replay(lambda: KafkaSink(stack.kafka_bootstrap, topic, app_id=settings.app_id), "kafka")
    records = [json.loads(r.value()) for r in records_of(stack, topic)]
    assert sorted(r["key"]["k"] for r in records if r["table"] == "kv") == list(range(100))

    # HTTP: the replayed batch comes again with the same keys and bodies.
    receiver = Receiver()
    try:
        crash_then_replay(lambda: HttpSink(receiver.url, app_id=settings.app_id, batch_size=10), "http")
    finally:
        receiver.close()
    posted = [r for r in receiver.requests if r["headers"]["ringtail-content"] == "log-rows"]
    first: dict[str, list] = {}
    for request in posted:
        assert first.setdefault(request["headers"]["idempotency-key"], request["body"]) == request["body"]
    repeated = {key for key in first if sum(r["headers"]["idempotency-key"] == key for r in posted) > 1}
    assert repeated and {key.split(":")[1] for key in repeated} == {"2"}
    delivered = [row["key"]["k"] for body in receiver.accepted().values() for row in body if row["table"] == "kv"]
    assert sorted(delivered) == list(range(100))

    # Delta's typed log: batch 2's commit holds its txnVersion already, so the replay writes nothing again.
    cluster = CassandraCluster((stack.cassandra_host,), stack.cassandra_port)
    crash_then_replay(lambda: DeltaSink(spark, tmp_path / "typed", settings.app_id, layout="typed", cluster=cluster),
                      "typed")
    typed_keys = spark.read.format("delta").load(str(tmp_path / "typed" / "typed" / keyspace / "kv")).select("k")
    assert sorted(r["k"] for r in typed_keys.collect()) == list(range(100))


def test_schema_change_mid_stream(spark, cql, keyspace, job, stack, tmp_path):
    """Columns added and dropped between writes: the JSON log holds each row's own columns; Delta's
    typed log gains the added column and keeps the dropped one's values in its typed column."""
    connector, consumer, settings = job
    typed = settings.model_copy(update={"checkpoint_dir": tmp_path / "checkpoint-typed"})

    def run_typed() -> None:
        run_available(spark, typed, DeltaSink(spark, tmp_path / "typed", settings.app_id, layout="typed",
                                              cluster=CassandraCluster((stack.cassandra_host,), stack.cassandra_port)))

    cql.execute(f"CREATE TABLE {keyspace}.kv (k int PRIMARY KEY, v text) WITH cdc = true")
    cql.execute(f"INSERT INTO {keyspace}.kv (k, v) VALUES (1, 'before')")
    # Read before the ADD, so row 1 is written with the schema version before it (else the race decides).
    consumer.until(has_marker(write_marker(cql, keyspace)))
    run_typed()  # the typed log is made with the columns of now: k, v
    cql.execute(f"ALTER TABLE {keyspace}.kv ADD extra map<text, int>")
    cql.execute(f"INSERT INTO {keyspace}.kv (k, v, extra) VALUES (2, 'after', {{'a': 1}})")
    # Read before the DROP: a change read after it has its dropped column's cells dead (schemas/README.md).
    consumer.until(has_marker(write_marker(cql, keyspace)))
    cql.execute(f"ALTER TABLE {keyspace}.kv DROP v")
    cql.execute(f"INSERT INTO {keyspace}.kv (k, extra) VALUES (3, {{'b': 2}})")
    consumer.until(has_marker(write_marker(cql, keyspace)))

    run_available(spark, settings)
    run_typed()

    rows = {json.loads(r["key"])["k"]: r for r in log_rows(spark, settings, keyspace, "kv")}
    assert {k: {c: json.loads(v) for c, v in r["columns"].items()} for k, r in rows.items()} == {
        1: {"v": "before"}, 2: {"v": "after", "extra": [["a", 1]]}, 3: {"extra": [["b", 2]]}}
    assert len({r["source"]["schema_id"] for r in rows.values()}) >= 2  # versions changed mid-stream
    in_typed = spark.read.format("delta").load(str(tmp_path / "typed" / "typed" / keyspace / "kv"))
    assert dict(in_typed.dtypes)["extra"] == "map<string,int>"
    assert {r["k"]: (r["v"], r["extra"], r["cdc$other_columns"]) for r in in_typed.toArrow().to_pylist()} == {
        1: ("before", None, None), 2: ("after", [("a", 1)], None), 3: (None, [("b", 2)], None)}


def test_undecodable_records_and_changes_before_any_generation_are_dead_letters(spark, cql, keyspace, job,
                                                                               stack):
    from confluent_kafka import Producer

    connector, consumer, settings = job
    cql.execute(f"CREATE TABLE {keyspace}.kv (k int PRIMARY KEY, v text) WITH cdc = true")
    cql.execute(f"INSERT INTO {keyspace}.kv (k, v) VALUES (1, 'old') USING TIMESTAMP 1000000")  # 1970
    cql.execute(f"INSERT INTO {keyspace}.kv (k, v) VALUES (2, 'now')")
    consumer.until(has_marker(write_marker(cql, keyspace)))
    producer = Producer({"bootstrap.servers": stack.kafka_bootstrap})
    topic = f"{connector.prefix}.{keyspace}.kv"
    producer.produce(topic, key=b"junk", value=b"\x00\x7f\xff\xff\xf0not avro")  # an id no registry has
    assert producer.flush(30) == 0

    counted: list[BatchCounts] = []
    run_available(spark, settings, counted=counted)

    assert sorted(json.loads(r["key"])["k"] for r in log_rows(spark, settings, keyspace, "kv")) == [2]
    dead = {d["reason"]: d for d in dead_letters(spark, settings) if d["topic"] == topic}
    assert set(dead) == {R.NO_GENERATION, R.UNDECODABLE}
    assert dead[R.UNDECODABLE]["value"] == b"\x00\x7f\xff\xff\xf0not avro"
    assert "UnknownSchema" in dead[R.UNDECODABLE]["detail"]
    assert dead[R.NO_GENERATION]["write_time_us"] == 1000000

    # Each micro-batch's counts are taken in the pass that reads it (Delta's append) and are what the
    # sink holds; a sink taking rows on the driver (PostgreSQL) gets them from the read before its write.
    logged = spark.read.format("delta").load(f"{settings.delta_path}/cdc_log")
    newest = logged.agg(F.max("kafka_time")).first()[0].replace(tzinfo=dt.timezone.utc)
    expected = (logged.count(), len(dead_letters(spark, settings)), newest)
    schema = f"rt_{uuid.uuid4().hex[:12]}"
    by_postgres: list[BatchCounts] = []
    run_available(spark, settings.model_copy(update={"checkpoint_dir": settings.checkpoint_dir.parent / "pg"}),
                  PostgresSink(stack.postgres_dsn, schema=schema, app_id=settings.app_id), counted=by_postgres)
    with psycopg.connect(stack.postgres_dsn) as conn:
        held = conn.execute(f"SELECT (SELECT count(*) FROM {schema}.cdc_log),"
                            f" (SELECT count(*) FROM {schema}.dead_letters)").fetchone()
        conn.execute(f"DROP SCHEMA {schema} CASCADE")
    assert held == expected[:2]
    for counts in (counted, by_postgres):
        assert (sum(c.rows for c in counts), sum(c.dead_letters for c in counts),
                max(c.newest_kafka_time for c in counts if c.newest_kafka_time)) == expected
        assert all(c.delivered == c.rows and c.late == 0 for c in counts)


def test_sigterm_stops_the_job_between_micro_batches_and_exits_0(spark, cql, keyspace, job, stack, tmp_path):
    """`python -m spark.job` as users run it: SIGTERM lets the running micro-batch finish, stops the
    query and exits 0, without tracebacks; what it read is in the sink."""
    connector, consumer, settings = job
    settings = settings.model_copy(update={
        "spark_jars": stack.spark_jars, "spark_master": "local[1]",
        "spark_conf": {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1"}})
    config = tmp_path / "job.yaml"
    config.write_text(json.dumps(settings.model_dump(mode="json")))  # YAML is a superset of JSON
    cql.execute(f"CREATE TABLE {keyspace}.kv (k int PRIMARY KEY, v text) WITH cdc = true")
    for k in range(20):
        cql.execute(f"INSERT INTO {keyspace}.kv (k, v) VALUES (%s, 'v')", (k,))
    consumer.until(has_marker(write_marker(cql, keyspace)))

    output = tmp_path / "job.log"
    with open(output, "w") as out:
        process = subprocess.Popen([sys.executable, "-m", "spark.job", "--config", str(config)], cwd=ROOT,
                                   stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: "written: " in output.read_text(), timeout=240, what="the job's first micro-batch")
        process.send_signal(signal.SIGTERM)
        assert process.wait(90) == 0, output.read_text()[-3000:]
    finally:
        if process.poll() is None:
            process.kill()
    text = output.read_text()
    assert "SIGTERM: stopping after the running micro-batch" in text and "stopped after micro-batch" in text
    assert "Traceback" not in text, text[-3000:]
    assert not [cut for cut in CUT_BATCH if cut in text], text[-3000:]
    rows = log_rows(spark, settings, keyspace, "kv")
    assert sorted(json.loads(r["key"])["k"] for r in rows) == list(range(20))


def test_the_job_on_another_checkpoint_is_refused_by_the_sink_and_exits_1(spark, cql, keyspace, job, stack,
                                                                           tmp_path):
    """`python -m spark.job` started on a checkpoint other than the one that wrote its sink: its batch 0
    is not the sink's batch 0, so the ledger refuses it (nothing skipped, nothing written twice) and
    the job exits 1 saying why."""
    connector, consumer, settings = job
    # Several batches: the sink's newest is past batch 0, which the other checkpoint starts with. (Had
    # the first run read everything in batch 0, the other's batch 0 would be the same batch: a replay.)
    settings = settings.model_copy(update={
        "spark_jars": stack.spark_jars, "spark_master": "local[1]", "max_offsets_per_trigger": 8,
        "spark_conf": {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1"}})
    cql.execute(f"CREATE TABLE {keyspace}.kv (k int PRIMARY KEY, v text) WITH cdc = true")
    for k in range(20):
        cql.execute(f"INSERT INTO {keyspace}.kv (k, v) VALUES (%s, 'v')", (k,))
    consumer.until(has_marker(write_marker(cql, keyspace)))

    run_available(spark, settings)  # the sink's writer, in this process
    config, output = tmp_path / "stray.yaml", tmp_path / "stray.log"
    config.write_text(json.dumps({**settings.model_dump(mode="json"),
                                  "checkpoint_dir": str(tmp_path / "another-checkpoint")}))
    with open(output, "w") as out:
        code = subprocess.run([sys.executable, "-m", "spark.job", "--config", str(config), "--available-now"],
                              cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, timeout=300).returncode
    text = output.read_text()
    assert code == 1, text[-3000:]
    refused = [line for line in text.splitlines() if "the query failed: batch 0: BatchMismatch" in line]
    assert refused and f"{settings.app_id}:cdc_log" in refused[0] and "checkpoint_dir" in refused[0]
    assert sorted(json.loads(r["key"])["k"] for r in log_rows(spark, settings, keyspace, "kv")) == list(range(20))


def example_ddl(keyspace: str) -> list[str]:
    """schemas/example.cql's types and `everything` table in `keyspace` (no table id, no dropped
    column, `place.opened` frozen), plus columns whose names are not Avro names."""
    text = (ROOT / "schemas" / "example.cql").read_text()
    text = "\n".join(line for line in text.splitlines() if not line.startswith("--"))
    statements = [s.strip() for s in text.split(";") if s.strip()]
    ddl = [s.replace("ringtail_decoder_check.", f"{keyspace}.") for s in statements
           if s.startswith(("CREATE TYPE", "CREATE TABLE ringtail_decoder_check.everything"))]
    ddl = [re.sub(r"WITH ID = [0-9a-f-]+ AND ", "WITH ", s.replace("dropme int,", "")) for s in ddl]
    # Cassandra 5.0 refuses a non-frozen UDT (`n_place`) holding a non-frozen collection.
    ddl = [s.replace("opened map<text, frozen<list<time>>>", "opened frozen<map<text, frozen<list<time>>>>")
           for s in ddl]
    return [*ddl, f'CREATE TYPE {keyspace}."Odd Type" ("first-name" text, plain int)',
            f'ALTER TABLE {keyspace}.everything ADD ("Odd Name-1" text, "Odd UDT" frozen<"Odd Type">)']


TIMEUUID = "657e5210-7cbb-11ee-9858-c9aa1eb53e69"
UUID4 = "3d4f0a6c-58c3-4c5e-9e0b-4b8f9e2a7f11"
HOME = {"street": "Main", "zip": 1}
PLACE = {"name": "Home", "at": [1.5, -2.0], "tags": ["x"], "home": HOME, "opened": {"mon": ["10:00:00"]}}
# One row of every column, in Cassandra's JSON (map keys that are not text are JSON texts themselves).
EVERY_COLUMN = {
    "p1": 1, "p2": "a", "c1": 2, "c2": "b", "s": "static",
    "v_ascii": "abc", "v_bigint": -5, "v_blob": "0x00ff", "v_boolean": True, "v_date": "2024-01-02",
    "v_decimal": "-12.345", "v_double": 1.5, "v_duration": "1y2mo3d4h5m6s7ms8us9ns", "v_float": 0.25,
    "v_inet": "10.0.0.1", "v_int": -7, "v_smallint": -2, "v_text": "héllo \"q\"", "v_time": "13:30:54.234000000",
    "v_timestamp": "2023-11-06 15:44:39.123Z", "v_timeuuid": TIMEUUID, "v_tinyint": -1, "v_uuid": UUID4,
    "v_varint": "1180591620717411303424", "v_vector": [1.0, 2.0, 3.0], "v_vtext": ["a", "bc"],
    "f_list": [1, 2], "f_set": ["a", "b"], "f_map": {"k": 1}, "f_tuple": [1, "t"], "f_udt": HOME,
    "l": ["x", "y"], "st": [3, 4], "m": {"a": 1}, "u": {"street": "U", "zip": 2}, "n_varchar": "v",
    "n_int_keys": {"5": ["a", "b"]}, "n_tuple_keys": {'[1, "t"]': {"k": [UUID4]}},
    "n_udt_list": [{"street": "L", "zip": 3}], "n_tuple_set": [[1, "2023-11-06 15:44:39.123Z"]],
    "n_udt_values": {TIMEUUID: PLACE}, "n_place": {**PLACE, "home": None},
    "n_nested": [PLACE, {"2024-01-02": "1d"}, 123, [[1.5, 2.5], [0]]], "n_vectors": [["10.0.0.1"], ["::1"]],
    "n_udt_keys": {json.dumps({"street": "K", "zip": 4}): 5}, "n_list_keys": {"[7]": "0xbeef"},
    "Odd Name-1": "odd", "Odd UDT": {"first-name": "Ann", "plain": 7},
}
KEY_COLUMNS = ("p1", "p2", "c1", "c2")


def test_every_column_type_reaches_every_sink_as_cql_returns_it(spark, cql, keyspace, job, stack, tmp_path):
    """One row of every type of schemas/example.cql (nested ones, quoted names) written with CQL: the
    Cassandra sink's log row holds what SELECT returns of the base row (a non-frozen list as the
    ScyllaDB log holds it, its elements by timeuuid), and Delta, PostgreSQL, MariaDB, the HTTP receiver
    and the Kafka sink's topic hold the same values under the same CQL names; Delta's typed layout holds
    them in their own Spark types, which read back as the same values."""
    from spark.sinks.cassandra.sink import CassandraSink

    connector, consumer, settings = job
    for statement in example_ddl(keyspace):
        cql.execute(statement)
    # INSERT … JSON wants case-sensitive names quoted inside the JSON keys.
    document = {c if re.fullmatch(r"[a-z_][a-z0-9_]*", c) else f'"{c}"': v for c, v in EVERY_COLUMN.items()}
    cql.execute(f"INSERT INTO {keyspace}.everything JSON %s", (json.dumps(document),))
    consumer.until(has_marker(write_marker(cql, keyspace)))
    schema = f"rt_{uuid.uuid4().hex[:12]}"
    receiver = Receiver()
    sink_topic = f"{connector.prefix}-sink"
    cluster = CassandraCluster((stack.cassandra_host,), stack.cassandra_port)
    sinks = {
        "http": HttpSink(receiver.url, app_id=settings.app_id),
        "kafka": KafkaSink(stack.kafka_bootstrap, sink_topic, app_id=settings.app_id),
        "kafka-avro": KafkaSink(stack.kafka_bootstrap, f"{sink_topic}-avro", app_id=settings.app_id, format="avro",
                                registry_url=stack.registry_url),
        "kafka-plain": KafkaSink(stack.kafka_bootstrap, f"{sink_topic}-plain", app_id=settings.app_id,
                                 transactions=False),
        "mysql": MySqlSink(mysql_database(stack, f"{keyspace}_every"), app_id=settings.app_id),
        "delta": DeltaSink(spark, settings.delta_path, settings.app_id),
        "delta-typed": DeltaSink(spark, tmp_path / "typed", settings.app_id, layout="typed",
                                 cluster=CassandraCluster((stack.cassandra_host,), stack.cassandra_port)),
        "postgres": PostgresSink(stack.postgres_dsn, schema=schema, app_id=settings.app_id),
        "postgres-typed": PostgresTypedSink(stack.postgres_dsn, schema=f"{schema}_typed", app_id=settings.app_id,
                                            cluster=cluster),
        "mysql-typed": MySqlTypedSink(mysql_database(stack, f"{keyspace}_typed"), app_id=settings.app_id,
                                      cluster=cluster),
        "cassandra": CassandraSink(hosts=[stack.cassandra_host], port=stack.cassandra_port,
                                   keyspace=settings.generations_keyspace),
    }
    try:
        for name, sink in sinks.items():
            run_available(spark, settings.model_copy(update={"checkpoint_dir": tmp_path / f"checkpoint-{name}"}),
                          sink)
    finally:
        receiver.close()

    # The INSERT is two changes, each a log row: the static row (`s`) and the clustered row.
    columns = [c for c in EVERY_COLUMN if c not in KEY_COLUMNS]
    quoted = ", ".join('"' + c.replace('"', '""') + '"' for c in columns)
    base = cql.execute(f"SELECT {quoted} FROM {keyspace}.everything").one()
    logged = merged([dict(zip(columns, row)) for row in
                     cql.execute(f"SELECT {quoted} FROM {keyspace}.everything_scylla_cdc_log")])
    assert base is not None and set(logged) == set(columns)
    for name, in_base in zip(columns, base):
        in_log = logged[name]
        if name in ("l", "n_udt_list"):  # a non-frozen list: elements by their timeuuid
            in_log = [v for _, v in sorted(in_log.items())]
        assert in_log == in_base, f"{name}: logged {in_log!r}, SELECT returns {in_base!r}"

    in_delta = merged([{name: json.loads(value) for name, value in row["columns"].items()}
                       for row in log_rows(spark, settings, keyspace, "everything")])
    # The job decoded with the native core; the reference decodes the same records alike.
    records = records_of(stack, f"{connector.prefix}.{keyspace}.everything")
    assert assert_decoders_agree(stack.registry_url, records) == 2
    with psycopg.connect(stack.postgres_dsn, autocommit=True) as conn:
        in_postgres = merged([row for (row,) in conn.execute(
            f'SELECT columns FROM "{schema}".cdc_log WHERE "table" = %s', ("everything",))])
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
    in_http = merged([row["columns"] for body in receiver.accepted().values() for row in body
                      if row["table"] == "everything"])
    assert set(in_delta) == set(columns)
    assert in_postgres == in_delta
    assert in_http == in_delta
    as_json = [json.loads(r.value()) for r in records_of(stack, sink_topic)]
    in_kafka = merged([r["columns"] for r in as_json if r["table"] == "everything"])
    assert in_kafka == in_delta
    # Without transactions (for a cluster that has none): the same records, each with its change id.
    plain = records_of(stack, f"{sink_topic}-plain")
    assert sorted(r.value() for r in plain) == sorted(r.value() for r in records_of(stack, sink_topic))
    assert all(dict(r.headers())["ringtail-change-id"].decode() == json.loads(r.value())["change_id"] for r in plain)
    # Avro values, read as any Confluent consumer would: the writer schema by the id in the payload.
    registry = SchemaRegistry(SchemaRegistryClient({"url": stack.registry_url}))
    as_avro = [registry.deserialize(r.value()) for r in records_of(stack, f"{sink_topic}-avro")]
    assert merged([{name: json.loads(value) for name, value in r["columns"].items()} for r in as_avro
                   if r["table"] == "everything"]) == in_delta
    assert sorted((r["change_id"], r["cdc_batch_seq_no"], r["cdc_operation"], r["cdc_time"], json.loads(r["key"]),
                   r["write_time_us"], "0x" + r["partition_key"].hex()) for r in as_avro) == sorted(
        (r["change_id"], r["cdc$batch_seq_no"], r["cdc$operation"], r["cdc$time"], r["key"], r["write_time_us"],
         r["partition_key"]) for r in as_json)
    conn = connect_dsn(sinks["mysql"].dsn)
    with conn.cursor() as cursor:
        cursor.execute("SELECT columns FROM cdc_log WHERE `table` = 'everything'")
        in_mysql = merged([json.loads(text) for (text,) in cursor.fetchall()])
    conn.close()
    drop_mysql_database(stack, sinks["mysql"].dsn)
    assert in_mysql == in_delta
    # The typed log, read as Arrow values, in the JSON log's forms (a non-frozen list by element timeuuid).
    typed = spark.read.format("delta").load(str(tmp_path / "typed" / "typed" / keyspace / "everything"))
    assert dict(typed.dtypes)["v_timestamp"] == "timestamp" and dict(typed.dtypes)["v_date"] == "date"
    in_typed = merged([{name: json_form(row[name]) for name in columns}
                       for row in typed.toArrow().to_pylist()])
    for name in ("l", "n_udt_list"):
        in_typed[name] = dict(in_typed[name])
    assert in_typed == without_nulls(in_delta)
    # PostgreSQL's and MySQL's typed logs, their columns in the log's CQL types.
    base, user_types = read_table(cql, keyspace, "everything")
    layout = LogLayout.of_table(base, user_types, counters=True)
    types = {n: parse_type(t, {u.name: u for u in layout.user_types}, keyspace) for n, t in layout.columns().items()}
    log_table = f"{keyspace}.everything_scylla_cdc_log"
    with psycopg.connect(stack.postgres_dsn, autocommit=True) as conn:
        in_pg = postgres_values(conn, '"{}"."{}"'.format(*log_table.split(".")), types)
        conn.execute(f'DROP SCHEMA "{schema}_typed", "{keyspace}" CASCADE')
    conn = connect_dsn(sinks["mysql-typed"].dsn)
    in_my = mysql_values(conn, "`{}`.`{}`".format(*log_table.split(".")), types)
    conn.close()
    drop_mysql_database(stack, sinks["mysql-typed"].dsn)
    drop_mysql_database(stack, f"/{keyspace}")
    for name, rows in (("postgres", in_pg), ("mysql", in_my)):
        got = merged([{n: log_json(types[n], row[n]) for n in columns} for row in rows])
        for list_column in ("l", "n_udt_list"):  # by element timeuuid, as the JSON log has it
            got[list_column] = dict(got[list_column])
        assert without_nulls(got) == without_nulls(in_delta), name


def json_form(value):
    """A value of Delta's typed log (as Arrow reads it) in the JSON log's conventions: times as ms, dates
    as days, blobs as 0x…, maps as [key, value] pairs, tuples as arrays; null UDT fields left out."""
    if isinstance(value, dt.datetime):
        return (value - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(milliseconds=1)
    if isinstance(value, dt.date):
        return (value - dt.date(1970, 1, 1)).days
    if isinstance(value, bytes):
        return "0x" + value.hex()
    if isinstance(value, dict):
        if list(value) == [f"_{i}" for i in range(1, len(value) + 1)]:
            return [json_form(v) for v in value.values()]
        return {k: json_form(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [[json_form(e[0]), json_form(e[1])] if isinstance(e, tuple) else json_form(e) for e in value]
    return value


def without_nulls(value):
    """JSON with the null fields of objects left out (the typed log reads a missing UDT field as null)."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


def merged(rows: list[dict]) -> dict:
    """The non-null columns of several log rows of one write, together."""
    out = {}
    for row in rows:
        for name, value in row.items():
            if value is not None:
                assert name not in out, f"{name} logged twice"
                out[name] = value
    return out
