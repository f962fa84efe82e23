"""ringtail on a ring: three Cassandra nodes at replication factor 3 with a connector beside each, three
Kafka brokers (replication 3, `min.insync.replicas` 2). Every test of this module shares one ring, started
by the stack's own script in a run directory of its own (and stopped at the end); the registry,
PostgreSQL and Spark's jars are the main stack's.

The oracle: each write is made with a timestamp of its own (`USING TIMESTAMP`), so the log row of every
acknowledged write is known; each must be in the log exactly once, whatever node's copy carried it."""
from __future__ import annotations

import dataclasses
import json
import os
import random
import shutil
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import psycopg
import pytest
from cassandra import ConsistencyLevel
from cassandra.query import SimpleStatement
from confluent_kafka.admin import AdminClient, ConfigResource

from deploy.local.endpoints import ROOT, Stack, nodes_of
from deploy.local.processes import ConnectorProcess
from spark.job import rows as R
from spark.job.config import JobSettings
from spark.job.sinks.postgres import PostgresSink
from tests.integration.pipeline import EventConsumer
from tests.integration.test_job import log_rows, run_available

NODES = BROKERS = 3
STACK = ROOT / "deploy" / "local" / "stack.py"


def ring_env(main: Stack) -> dict[str, str]:
    """The ring's stack settings: its own run directory and addresses, the main stack's fetched services."""
    base = main.run_dir or ROOT / ".run"
    return {**os.environ,
            "RINGTAIL_STACK_RUN_DIR": str(base / "ring"),
            "RINGTAIL_STACK_DIST_DIR": str(base / "dist"),
            "RINGTAIL_STACK_HOST": os.environ.get("RINGTAIL_TEST_RING_HOST", "127.0.0.11"),
            "RINGTAIL_STACK_CASSANDRA_NODES": str(NODES), "RINGTAIL_STACK_KAFKA_BROKERS": str(BROKERS),
            "RINGTAIL_STACK_CASSANDRA_HEAP": "768M", "RINGTAIL_STACK_KAFKA_HEAP": "384M",
            "RINGTAIL_STACK_CASSANDRA_JMX_PORT": os.environ.get("RINGTAIL_TEST_RING_JMX_PORT", "7299")}


class Ring:
    def __init__(self, main: Stack) -> None:
        self.env = ring_env(main)
        self.run_dir = Path(self.env["RINGTAIL_STACK_RUN_DIR"])

    def stack(self, command: str, *services: str, check: bool = True) -> None:
        result = subprocess.run([sys.executable, str(STACK), command, *services], env=self.env, cwd=ROOT,
                                capture_output=True, text=True, timeout=600)
        assert result.returncode == 0 or not check, \
            f"stack.py {command} {' '.join(services)}:\n{result.stdout}{result.stderr}"

    def describe(self, main: Stack) -> Stack:
        ring = json.loads((self.run_dir / "stack.json").read_text())
        nodes = nodes_of(ring)
        return dataclasses.replace(main, cassandra_host=nodes[0].host, cdc_raw=nodes[0].cdc_raw, nodes=nodes,
                                   kafka_bootstrap=ring["kafka"]["bootstrap_servers"], run_dir=self.run_dir)


@pytest.fixture(scope="module")
def ring(stack):
    """The ring (a Stack whose Cassandra and Kafka are the ring's), started fresh and stopped at the end."""
    ring = Ring(stack)
    shutil.rmtree(ring.run_dir, ignore_errors=True)
    began = time.monotonic()
    try:
        ring.stack("start", "cassandra", "kafka")
        print(f"ring of {NODES} nodes and {BROKERS} brokers up in {time.monotonic() - began:.0f} s")
        yield ring, ring.describe(stack)
    finally:  # its data is thrown away: no need to stop it gently
        for service in [f"cassandra@{i}" for i in range(1, NODES + 1)] + [f"kafka@{i}" for i in range(1, BROKERS + 1)]:
            ring.stack("kill", service, check=False)
        shutil.rmtree(ring.run_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def ring_cql(ring):
    from connector.schema.session import connect

    _, described = ring
    cluster, session = connect([n.host for n in described.nodes], described.cassandra_port)
    yield session
    cluster.shutdown()


@pytest.fixture
def ring_keyspace(ring_cql):
    name = f"r_{uuid.uuid4().hex[:10]}"
    ring_cql.execute(f"CREATE KEYSPACE {name} WITH replication = "
                     f"{{'class': 'NetworkTopologyStrategy', 'datacenter1': {NODES}}}")
    yield name
    ring_cql.execute(f"DROP KEYSPACE IF EXISTS {name}")


@pytest.fixture
def connectors(ring, tmp_path):
    """`connectors()`: one connector per node (each reading its node's cdc_raw, named after it), sharing a
    topic prefix, started at the end of what each node holds now; and a consumer of their topics."""
    _, described = ring
    made: list[ConnectorProcess] = []
    consumers: list[EventConsumer] = []

    def start() -> tuple[list[ConnectorProcess], EventConsumer]:
        prefix = f"ring{uuid.uuid4().hex[:8]}"
        for node in described.nodes:
            connector = ConnectorProcess(described, tmp_path / node.name, prefix, cdc_raw=node.cdc_raw,
                                         cassandra_hosts=node.host, node_name=node.name)
            connector.start_from_now()
            connector.start()
            made.append(connector)
        consumers.append(EventConsumer(described, prefix))
        return made, consumers[-1]

    yield start
    for connector in made:
        connector.stop()
    for consumer in consumers:
        consumer.close()


@dataclasses.dataclass(frozen=True)
class Write:
    """One acknowledged write of the workload: its key, what it did, and its timestamp (µs)."""

    k: int
    operation: int
    timestamp: int


class Workload:
    """Seeded random writes at QUORUM to `kv (k int PRIMARY KEY, a int, b text)`: inserts, updates of one
    column, deletions (of a partition: the key is the partition key); each with a timestamp of its own. A write that fails is retried with the same
    timestamp (the same change), so every write of the list was acknowledged once."""

    def __init__(self, cql, keyspace: str, seed: int) -> None:
        self.cql, self.keyspace = cql, keyspace
        self.random = random.Random(seed)
        self.written: list[Write] = []
        self.clock = int(time.time() * 1_000_000)
        cql.execute(f"CREATE TABLE {keyspace}.kv (k int PRIMARY KEY, a int, b text) WITH cdc = true")

    def step(self) -> None:
        k = self.random.randrange(200)
        self.clock = max(self.clock + 1, int(time.time() * 1_000_000))
        kind = self.random.choices(["insert", "update", "delete"], weights=[5, 3, 1])[0]
        ts = self.clock
        if kind == "insert":
            cql = f"INSERT INTO {self.keyspace}.kv (k, a, b) VALUES ({k}, {self.random.randrange(1000)}, " \
                  f"'{uuid.uuid4().hex[:8]}') USING TIMESTAMP {ts}"
            operation = R.ROW_INSERT
        elif kind == "update":
            cql = f"UPDATE {self.keyspace}.kv USING TIMESTAMP {ts} SET a = {self.random.randrange(1000)} " \
                  f"WHERE k = {k}"
            operation = R.ROW_UPDATE
        else:
            cql = f"DELETE FROM {self.keyspace}.kv USING TIMESTAMP {ts} WHERE k = {k}"
            operation = R.PARTITION_DELETE  # the whole primary key is the partition key
        statement = SimpleStatement(cql, consistency_level=ConsistencyLevel.QUORUM)
        for attempt in range(20):
            try:
                self.cql.execute(statement, timeout=10)
                break
            except Exception:  # a coordinator lost mid-write: the same change again, until acknowledged
                if attempt == 19:
                    raise
                time.sleep(0.5)
        self.written.append(Write(k, operation, ts))

    def run(self, count: int, rate: float = 0) -> None:
        for _ in range(count):
            self.step()
            if rate:
                time.sleep(1 / rate)

    def expected(self) -> Counter:
        return Counter((w.k, w.operation, w.timestamp) for w in self.written)


def copies_arrived(workload: Workload, nodes: int):
    """Until every write's event came from `nodes` nodes (each replica's connector sent its copy)."""
    wanted = {w.timestamp for w in workload.written}

    def check(events: list[dict]) -> bool:
        seen = Counter(e["source"]["ts_us"] for e in events if e["source"]["table"] == "kv")
        return all(seen[ts] >= nodes for ts in wanted)
    return check


def job_settings(described: Stack, prefix: str, keyspace: str, tmp_path: Path, name: str, **extra) -> JobSettings:
    return JobSettings(
        kafka_bootstrap_servers=described.kafka_bootstrap, registry_url=described.registry_url, topic_prefix=prefix,
        cassandra_hosts=tuple(n.host for n in described.nodes), cassandra_port=described.cassandra_port,
        generations_keyspace=f"{keyspace}_gen",
        generations_replication={"class": "NetworkTopologyStrategy", "datacenter1": NODES},
        delta_path=tmp_path / name / "delta", checkpoint_dir=tmp_path / name / "checkpoint",
        trigger_interval="500 milliseconds", generation_check_interval=0.5, generation_delay=8.0,
        log_format="text", **extra)


def logged(rows: list[dict]) -> Counter:
    return Counter((json.loads(r["key"])["k"], r["cdc$operation"], r["write_time_us"]) for r in rows)


def assert_exactly_once(spark, described: Stack, prefix: str, keyspace: str, workload: Workload, tmp_path: Path,
                        name: str) -> None:
    """The job logs every write of `workload` exactly once, into Delta and into PostgreSQL."""
    settings = job_settings(described, prefix, keyspace, tmp_path, name)
    run_available(spark, settings)
    assert logged(log_rows(spark, settings, keyspace, "kv")) == workload.expected()

    schema = f"{keyspace}_{name}"
    pg = settings.model_copy(update={"checkpoint_dir": tmp_path / name / "pg-checkpoint"})
    run_available(spark, pg, PostgresSink(described.postgres_dsn, schema=schema, app_id=settings.app_id))
    with psycopg.connect(described.postgres_dsn) as conn:
        rows = conn.execute(f"SELECT (key::jsonb->>'k')::int, \"cdc$operation\", write_time_us FROM {schema}.cdc_log "
                            f"WHERE \"table\" = 'kv'").fetchall()
        conn.execute(f"DROP SCHEMA {schema} CASCADE")
    assert Counter(rows) == workload.expected()


def test_topics_on_three_brokers_have_three_copies_two_in_sync(ring, ring_cql, ring_keyspace, connectors):
    _, described = ring
    (connector, *_), consumer = connectors()
    Workload(ring_cql, ring_keyspace, seed=1).run(1)
    consumer.until(lambda events: events, timeout=90)
    topic = f"{connector.prefix}.{ring_keyspace}.kv"
    admin = AdminClient({"bootstrap.servers": described.kafka_bootstrap})
    partitions = admin.list_topics(topic, timeout=10).topics[topic].partitions.values()
    assert {len(p.replicas) for p in partitions} == {3}
    config = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)])
    described_config = next(iter(config.values())).result()
    assert described_config["min.insync.replicas"].value == "2"


def test_each_write_reaches_the_log_once_though_every_replica_sends_it(spark, ring, ring_cql, ring_keyspace,
                                                                       connectors, tmp_path):
    """Normal operation at QUORUM: three copies of every write reach Kafka, one from each node, and the
    job logs each write once."""
    _, described = ring
    made, consumer = connectors()
    workload = Workload(ring_cql, ring_keyspace, seed=7)
    workload.run(300)
    events = consumer.until(copies_arrived(workload, NODES), timeout=180)
    copies = Counter(e["source"]["ts_us"] for e in events if e["source"]["table"] == "kv")
    assert set(copies.values()) == {NODES}, "one copy per replica, no more"
    assert {e["source"]["node"] for e in events} == {n.name for n in described.nodes}

    assert_exactly_once(spark, described, made[0].prefix, ring_keyspace, workload, tmp_path, "normal")


def test_a_node_killed_under_load_gets_its_hints_and_each_write_is_logged_once(spark, ring, ring_cql, ring_keyspace,
                                                                               connectors, tmp_path):
    """`kill -9` of node 3 while writes go on at QUORUM; started again, it receives the hints of the writes
    it missed (the same mutations, so the same change), and its connector sends them too."""
    handle, described = ring
    made, consumer = connectors()
    workload = Workload(ring_cql, ring_keyspace, seed=11)
    workload.run(100, rate=100)
    handle.stack("kill", "cassandra@3")
    before = len(workload.written)
    try:
        workload.run(200, rate=100)
    finally:
        handle.stack("start", "cassandra@3")
    missed = {w.timestamp for w in workload.written[before:]}
    # Hints are replayed once node 3 is seen up again: its connector then sends the writes it missed.
    events = consumer.until(copies_arrived(workload, NODES), timeout=240)
    from_three = Counter(e["source"]["ts_us"] for e in events if e["source"]["node"] == "cassandra@3"
                         and e["source"]["table"] == "kv")
    assert all(from_three[ts] >= 1 for ts in missed), "node 3 sent the writes it missed, from its hints"
    workload.run(20)  # and writes after its return

    consumer.until(copies_arrived(workload, NODES), timeout=120)
    assert_exactly_once(spark, described, made[0].prefix, ring_keyspace, workload, tmp_path, "killed")


def test_a_broker_killed_under_load_loses_no_acknowledged_write(spark, ring, ring_cql, ring_keyspace, connectors,
                                                                tmp_path):
    """`kill -9` of broker 2 while the connectors produce (replication 3, min.insync.replicas 2): they keep
    producing, the job keeps reading; the broker's return is uneventful."""
    handle, described = ring
    made, consumer = connectors()
    workload = Workload(ring_cql, ring_keyspace, seed=13)
    workload.run(100, rate=100)
    handle.stack("kill", "kafka@2")
    try:
        workload.run(200, rate=100)
        # Every copy reaches the two brokers left, with no broker's help needed.
        consumer.until(copies_arrived(workload, NODES), timeout=180)
    finally:
        handle.stack("start", "kafka@2")
    workload.run(50, rate=100)
    consumer.until(copies_arrived(workload, NODES), timeout=180)
    assert_exactly_once(spark, described, made[0].prefix, ring_keyspace, workload, tmp_path, "broker")
