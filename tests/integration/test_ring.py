"""ringtail on a ring: three Cassandra nodes at replication factor 3 with a connector beside each, three
Kafka brokers (replication 3, `min.insync.replicas` 2). Every test of this module shares one ring, started
by the stack's own script in a run directory of its own (and stopped at the end); the registry,
PostgreSQL and Spark's jars are the main stack's.

The oracle: each write is made with a timestamp of its own (`USING TIMESTAMP`), so the log row of every
acknowledged write is known; each must be in the log exactly once, whatever node's copy carried it."""
from __future__ import annotations

import dataclasses
import json
import random
import shutil
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import psycopg
import pytest
from cassandra import ConsistencyLevel, Unavailable
from cassandra.query import SimpleStatement
from confluent_kafka.admin import AdminClient, ConfigResource

from deploy.local.endpoints import Stack
from deploy.local.processes import ConnectorProcess
from schemas.runtime.access import CassandraCluster
from spark import rows as R
from spark.delivery.pipeline import records_per_batch, start
from spark.job.config import JobSettings
from spark.sinks.delta.sink import DeltaSink
from spark.sinks.postgres.log import PostgresSink
from spark.sinks.postgres.mirror import PostgresMirrorSink
from spark.sinks.registry import open_sink
from spark.streams import read_ring
from spark.streams.ring import copies_per_change
from spark.streams.storage import GenerationStore
from tests.integration.delivered import kafka_messages, log_rows, run_available
from tests.integration.mirrors import diff, layout_of, postgres_rows, source_rows
from tests.integration.pipeline import EventConsumer
from tests.integration.side_stacks import BROKERS, NODES, RING, forget, started
from tests.support import new_keyspace


class Ring:
    """The ring's stack (`side_stacks.RING`), of the main stack `main`."""

    def __init__(self, main: Stack) -> None:
        self.main_run_dir = main.run_dir
        self.run_dir = RING.run_dir(main.run_dir)

    def stack(self, command: str, *services: str, check: bool = True, nodes: int = NODES) -> None:
        """`stack.py command services` on the ring (of `nodes` nodes: more to add one)."""
        RING.command(self.main_run_dir, command, *services, check=check, RINGTAIL_STACK_CASSANDRA_NODES=str(nodes))


@pytest.fixture(scope="module")
def ring(stack):
    """The ring (a Stack whose Cassandra and Kafka are the ring's), started fresh and stopped at the end."""
    ring = Ring(stack)
    try:
        started(RING, stack.run_dir)
        yield ring, RING.describe(stack)
    finally:  # its data is thrown away: no need to stop it gently (a node a test added included)
        ring.stack("kill", *[f"cassandra@{i}" for i in range(1, NODES + 2)],
                   *[f"kafka@{i}" for i in range(1, BROKERS + 1)], check=False, nodes=NODES + 1)
        forget(RING)
        shutil.rmtree(ring.run_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def ring_cql(ring):
    from schemas.runtime.session import connect

    _, described = ring
    cluster, session = connect([n.host for n in described.nodes], described.cassandra_port)
    yield session
    cluster.shutdown()


@pytest.fixture
def ring_keyspace(ring_cql):
    with new_keyspace(ring_cql, "r", f"'class': 'NetworkTopologyStrategy', 'datacenter1': {NODES}") as name:
        yield name


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
    """Seeded random writes at QUORUM (or `consistency`) to `kv (k int PRIMARY KEY, a int, b text)`: inserts,
    updates of one column, deletions (of a partition: the key is the partition key); each with a timestamp of its
    own. A write that fails is retried with the same timestamp (the same change), so every write of the list was
    acknowledged once."""

    def __init__(self, cql, keyspace: str, seed: int, consistency: int = ConsistencyLevel.QUORUM) -> None:
        self.cql, self.keyspace, self.consistency = cql, keyspace, consistency
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
        statement = SimpleStatement(cql, consistency_level=self.consistency)
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


class CopiesArrived:
    """Until every write's event came from `nodes` nodes (each replica's connector sent its copy)."""

    def __init__(self, workload: Workload, nodes: int) -> None:
        self.wanted = {w.timestamp: w for w in workload.written}
        self.nodes = nodes

    def __call__(self, events: list[dict]) -> bool:
        seen = Counter(e["source"]["ts_us"] for e in events if e["source"]["table"] == "kv")
        return all(seen[ts] >= self.nodes for ts in self.wanted)

    def shortfall(self, events: list[dict]) -> str:
        """The writes short of copies: their place in the workload, key and timestamp, and the nodes whose
        copies came."""
        sent: dict[int, list[str]] = {}
        for e in events:
            if e["source"]["table"] == "kv":
                sent.setdefault(e["source"]["ts_us"], []).append(e["source"]["node"])
        order = {ts: i for i, ts in enumerate(self.wanted)}
        short = [f"write {order[ts]} (k={w.k}, ts={ts}) from {sorted(sent.get(ts, []))}"
                 for ts, w in self.wanted.items() if len(sent.get(ts, [])) < self.nodes]
        return f"{len(short)} writes short of {self.nodes} copies: " + "; ".join(short[:20])


def job_settings(described: Stack, prefix: str, keyspace: str, tmp_path: Path, name: str, **extra) -> JobSettings:
    return JobSettings(
        kafka_bootstrap_servers=described.kafka_bootstrap, registry_url=described.registry_url, topic_prefix=prefix,
        cassandra_hosts=tuple(n.host for n in described.nodes), cassandra_port=described.cassandra_port,
        generations_keyspace=f"{keyspace}_gen",
        delta_path=tmp_path / name / "delta", checkpoint_dir=tmp_path / name / "checkpoint",
        trigger_interval="500 milliseconds", generation_check_interval=0.5, generation_delay=8.0,
        log_format="text", **extra)


def logged(rows: list[dict]) -> Counter:
    return Counter((json.loads(r["key"])["k"], r["cdc$operation"], r["write_time_us"]) for r in rows)


class LogSinks:
    """The job's log of one scenario in Delta, PostgreSQL and Kafka, and a mirror of the table in PostgreSQL:
    each sink with a checkpoint of its own, kept across `run`s (a later run goes on where the last stopped,
    its replica-copy state with it)."""

    def __init__(self, spark, described: Stack, prefix: str, keyspace: str, tmp_path: Path, name: str,
                 **settings) -> None:
        self.spark, self.described, self.keyspace = spark, described, keyspace
        self.settings = job_settings(described, prefix, keyspace, tmp_path, name, **settings)
        self.schema, self.topic = f"{keyspace}_{name}", f"{prefix}-{name}-log"
        self.mirror_state = f"{keyspace}_{name}_mirror"
        self.tmp_path, self.name = tmp_path, name
        self.late = 0  # rows the runs read late, in the three sinks

    def _run(self, sink, kind: str) -> None:
        counted: list = []
        settings = self.settings.model_copy(update={"checkpoint_dir": self.tmp_path / self.name / f"{kind}-checkpoint"})
        run_available(self.spark, settings, sink, counted=counted)
        self.late += sum(c.late for c in counted)

    def run(self) -> None:
        """Each sink reads what Kafka holds now."""
        self._run(DeltaSink(self.spark, self.settings.delta_path, self.settings.app_id), "delta")
        self._run(PostgresSink(self.described.postgres_dsn, schema=self.schema, app_id=self.settings.app_id), "pg")
        self._run(open_sink(self.spark, "kafka", {"topic": self.topic, "replication_factor": str(BROKERS)},
                            self.settings.sink_context(self.settings.app_id)), "kafka")
        cluster = CassandraCluster(tuple(n.host for n in self.described.nodes), self.described.cassandra_port)
        self._run(PostgresMirrorSink(self.described.postgres_dsn, schema=self.mirror_state,
                                     app_id=self.settings.app_id, cluster=cluster), "mirror")

    def assert_mirror_equals_the_table(self, cql) -> None:
        """The mirror is what `SELECT *` at consistency ALL returns."""
        layout = layout_of(cql, self.keyspace, "kv")
        source = source_rows(cql.cluster, layout, ConsistencyLevel.ALL)
        with psycopg.connect(self.described.postgres_dsn) as conn:
            mirror = postgres_rows(conn, layout)
            conn.execute(f'DROP SCHEMA {self.mirror_state} CASCADE; DROP SCHEMA "{self.keyspace}" CASCADE')
        assert source == mirror, diff(source, mirror)

    def assert_exactly_once(self, workload: Workload, restated: bool = False) -> Counter:
        """Every write of `workload` is in Delta and PostgreSQL once; in Kafka, never twice unmarked: once
        when no row was read late, else at most once unmarked and any other time marked `ringtail-late`
        (a late row, which Kafka cannot look up, is marked however many copies it holds). Rows logged as
        read (operation 10: a read repair that merged several writes of a row) are set apart, the same in
        every sink, and there are none unless `restated`; they are returned."""
        expected = workload.expected()
        changes, reads = apart(logged(log_rows(self.spark, self.settings, self.keyspace, "kv")))
        assert changes == expected
        with psycopg.connect(self.described.postgres_dsn) as conn:
            rows = conn.execute(f"SELECT (key::jsonb->>'k')::int, \"cdc$operation\", write_time_us"
                                f" FROM {self.schema}.cdc_log WHERE \"table\" = 'kv'").fetchall()
            conn.execute(f"DROP SCHEMA {self.schema} CASCADE")
        assert apart(Counter(rows)) == (expected, reads)
        plain, marked = Counter(), Counter()
        for message in kafka_messages(self.described.kafka_bootstrap, self.topic):
            row = json.loads(message.value())
            if row["table"] != "kv":
                continue
            change = (row["key"]["k"], row["cdc$operation"], row["write_time_us"])
            (marked if dict(message.headers() or ()).get("ringtail-late") == b"true" else plain)[change] += 1
        (plain, plain_reads), (marked, _) = apart(plain), apart(marked)
        assert set(plain) | set(marked) == set(expected), "every write, none other"
        assert max(plain.values(), default=1) == 1, "no write twice unmarked"
        if not self.late:
            assert plain == expected and plain_reads == reads
        assert restated or not reads, f"rows logged as read: {sorted(reads)}"
        return reads


def apart(logged_rows: Counter) -> tuple[Counter, Counter]:
    """(the changes, the rows logged as read) of (key, operation, write time) counts."""
    return (Counter({c: n for c, n in logged_rows.items() if c[1] != R.ROW_READ}),
            Counter({c: n for c, n in logged_rows.items() if c[1] == R.ROW_READ}))


def assert_exactly_once(spark, cql, described: Stack, prefix: str, keyspace: str, workload: Workload,
                        tmp_path: Path, name: str) -> None:
    """The job logs every write of `workload` exactly once, into Delta, PostgreSQL and Kafka, and its mirror
    equals the table read at ALL."""
    sinks = LogSinks(spark, described, prefix, keyspace, tmp_path, name)
    sinks.run()
    sinks.assert_exactly_once(workload)
    sinks.assert_mirror_equals_the_table(cql)


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
    events = consumer.until(CopiesArrived(workload, NODES), timeout=180)
    copies = Counter(e["source"]["ts_us"] for e in events if e["source"]["table"] == "kv")
    assert set(copies.values()) == {NODES}, "one copy per replica, no more"
    assert {e["source"]["node"] for e in events} == {n.name for n in described.nodes}

    assert_exactly_once(spark, ring_cql, described, made[0].prefix, ring_keyspace, workload, tmp_path, "normal")
    # ringtail's keyspace (here one per test), created by the job with the cluster's default replication.
    replication = ring_cql.execute("SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = %s",
                                   (f"{ring_keyspace}_gen",)).one().replication
    assert replication == {"class": "org.apache.cassandra.locator.NetworkTopologyStrategy", "datacenter1": "3"}
    # A micro-batch reads three records for each change it holds: the copies are skipped before decoding.
    assert copies_per_change(ring_cql) == NODES
    assert records_per_batch(job_settings(described, made[0].prefix, ring_keyspace, tmp_path, "x"), None) == \
        NODES * JobSettings().max_changes_per_trigger


def test_nodes_killed_under_load_get_their_hints_and_a_write_at_one_on_a_single_replica_is_delivered(
        spark, ring, ring_cql, ring_keyspace, connectors, tmp_path):
    """`kill -9` of node 3 while writes go on at QUORUM; then of node 2 too, while writes at consistency ONE
    reach node 1 alone, whose connector delivers them. Started again, nodes 2 and 3 receive the hints of
    the writes they missed (the same mutations, so the same changes) and their connectors send them too;
    the log holds each write once."""
    handle, described = ring
    made, consumer = connectors()
    workload = Workload(ring_cql, ring_keyspace, seed=11)
    workload.run(100, rate=100)
    # Every node holds the writes so far before node 3 dies: a write node 3 coordinated just before is
    # acknowledged by nodes 1 and 2 and may never reach its own commit log, and no node has a hint of it.
    consumer.until(CopiesArrived(workload, NODES), timeout=120)
    handle.stack("kill", "cassandra@3")
    before = len(workload.written)
    try:
        workload.run(200, rate=100)
        # Node 2 keeps hints for node 3 of the writes it coordinated: on disk (written when the write to node 3
        # times out, 2 s, and flushed every second on this stack) before its own kill, or they would die with
        # it and node 3 would miss those writes for good.
        time.sleep(10)
        handle.stack("kill", "cassandra@2")
        workload.consistency = ConsistencyLevel.ONE
        alone = len(workload.written)
        workload.run(100, rate=100)
        events = consumer.until(CopiesArrived(workload, 1), timeout=120)
        only = {w.timestamp for w in workload.written[alone:]}
        assert {e["source"]["node"] for e in events if e["source"]["ts_us"] in only} == {"cassandra@1"}
    finally:
        handle.stack("start", "cassandra@2", "cassandra@3")
    missed = {w.timestamp for w in workload.written[before:]}
    # Hints are replayed once nodes 2 and 3 are seen up again: their connectors then send the writes they missed.
    events = consumer.until(CopiesArrived(workload, NODES), timeout=240)
    from_three = Counter(e["source"]["ts_us"] for e in events if e["source"]["node"] == "cassandra@3"
                         and e["source"]["table"] == "kv")
    assert all(from_three[ts] >= 1 for ts in missed), "node 3 sent the writes it missed, from its hints"
    workload.consistency = ConsistencyLevel.QUORUM
    workload.run(20)  # and writes after their return

    consumer.until(CopiesArrived(workload, NODES), timeout=120)
    assert_exactly_once(spark, ring_cql, described, made[0].prefix, ring_keyspace, workload, tmp_path, "killed")


def test_a_broker_killed_under_load_loses_no_acknowledged_write(spark, ring, ring_cql, ring_keyspace, connectors,
                                                                tmp_path):
    """`kill -9` of broker 2 while the connectors produce (replication 3, min.insync.replicas 2): they keep
    producing, the job keeps reading, a table created meanwhile gets its topic; the broker's return is
    uneventful."""
    handle, described = ring
    made, consumer = connectors()
    workload = Workload(ring_cql, ring_keyspace, seed=13)
    workload.run(100, rate=100)
    handle.stack("kill", "kafka@2")
    try:
        workload.run(200, rate=100)
        # A topic is created through the controller, which may be the broker just killed.
        ring_cql.execute(f"CREATE TABLE {ring_keyspace}.born_while_down (k int PRIMARY KEY, v int) WITH cdc = true")
        for k in range(5):
            ring_cql.execute(SimpleStatement(f"INSERT INTO {ring_keyspace}.born_while_down (k, v) VALUES ({k}, {k})",
                                             consistency_level=ConsistencyLevel.ALL))
        # Every copy reaches the two brokers left, with no broker's help needed.
        consumer.until(CopiesArrived(workload, NODES), timeout=180)
        consumer.until(lambda events: sum(e["source"]["table"] == "born_while_down" for e in events) >= 5 * NODES,
                       timeout=180)
    finally:
        handle.stack("start", "kafka@2")
    workload.run(50, rate=100)
    consumer.until(CopiesArrived(workload, NODES), timeout=180)
    assert_exactly_once(spark, ring_cql, described, made[0].prefix, ring_keyspace, workload, tmp_path, "broker")


def test_a_connector_stopped_longer_than_the_replica_window_catches_up_without_repeats(
        spark, ring, ring_cql, ring_keyspace, connectors, tmp_path):
    """Node 3's connector is stopped while the job logs what nodes 1 and 2 send, for longer than the job's
    replica-copy window (5 s here, 10 minutes by default) and while a later run of the job moves that window
    on; restarted, it sends its copies of every write. They are read late (with a window no longer than
    the `leeway`, every row is): Delta and PostgreSQL find them by key and hold each write once; Kafka
    marks them."""
    _, described = ring
    made, consumer = connectors()
    made[2].stop()
    workload = Workload(ring_cql, ring_keyspace, seed=17)
    sinks = LogSinks(spark, described, made[0].prefix, ring_keyspace, tmp_path, "stopped", dedup_watermark="5 seconds")
    workload.run(150, rate=100)
    consumer.until(CopiesArrived(workload, NODES - 1), timeout=120)
    sinks.run()
    # Later writes, read by the job more than the window after the first: the first writes' keys are let go.
    time.sleep(12)
    workload.run(20)
    consumer.until(CopiesArrived(workload, NODES - 1), timeout=120)
    sinks.run()

    made[2].start()
    consumer.until(CopiesArrived(workload, NODES), timeout=180)
    sinks.run()
    assert sinks.late > 0, "node 3's copies were read past the window"
    sinks.assert_exactly_once(workload)
    sinks.assert_mirror_equals_the_table(ring_cql)


def test_a_node_whose_commit_log_is_lost_leaves_every_write_delivered_by_the_others(
        spark, ring, ring_cql, ring_keyspace, connectors, tmp_path):
    """Node 3 and its connector are killed under load; its commit log and `cdc_raw` (and the connector's
    state, on the same disk) are wiped while writes go on at QUORUM; both start again. Whatever node 3 had
    not sent is lost with its disk: every acknowledged write still reaches the log once, through nodes 1
    and 2."""
    handle, described = ring
    made, consumer = connectors()
    workload = Workload(ring_cql, ring_keyspace, seed=19)
    workload.run(100, rate=100)
    handle.stack("kill", "cassandra@3")
    made[2].kill()
    lost = described.nodes[2]
    for directory in (lost.commitlog, lost.cdc_raw, made[2].state_dir):
        shutil.rmtree(directory, ignore_errors=True)
    try:
        workload.run(150, rate=100)
    finally:
        handle.stack("start", "cassandra@3")
    made[2].state_dir.mkdir()
    made[2].start()  # a fresh connector: it reads what its node writes from now on, and its hints
    workload.run(20)
    consumer.until(CopiesArrived(workload, NODES - 1), timeout=180)
    assert_exactly_once(spark, ring_cql, described, made[0].prefix, ring_keyspace, workload, tmp_path, "disk")


def test_a_read_repair_is_a_copy_of_the_write_it_repairs_or_the_row_as_read(
        spark, ring, ring_cql, ring_keyspace, connectors, tmp_path):
    """Node 3 misses writes (stopped, hinted handoff off on every node), comes back, and every key is read at
    ALL: the read repairs node 3, and its connector sends what the repair wrote. A repair of one missed
    write of a row is that write again and logged once; one merging several writes of a row is no write
    anyone made, and is logged as the row as read (operation 10). The mirror equals the table."""
    handle, described = ring
    made, consumer = connectors()
    workload = Workload(ring_cql, ring_keyspace, seed=19)
    sinks = LogSinks(spark, described, made[0].prefix, ring_keyspace, tmp_path, "repair")
    workload.run(60)
    consumer.until(CopiesArrived(workload, NODES), timeout=120)
    for node in range(1, NODES + 1):
        handle.stack("nodetool", f"cassandra@{node}", "disablehandoff")
    try:
        handle.stack("stop", "cassandra@3")
        before = len(workload.written)
        workload.run(150)
        handle.stack("start", "cassandra@3")
    finally:
        for node in range(1, NODES + 1):
            handle.stack("nodetool", f"cassandra@{node}", "enablehandoff", check=False)
    missed = Counter(w.k for w in workload.written[before:])
    at_all = SimpleStatement(f"SELECT * FROM {ring_keyspace}.kv WHERE k = %s", consistency_level=ConsistencyLevel.ALL)
    for k in range(200):
        for attempt in range(20):  # until every coordinator sees node 3 up again
            try:
                ring_cql.execute(at_all, (k,), timeout=30)
                break
            except Unavailable:
                if attempt == 19:
                    raise
                time.sleep(0.5)
    # A write on every node after the repairs: once node 3's copy of it is sent, the repairs are too.
    workload.consistency = ConsistencyLevel.ALL
    workload.run(1)
    marker = workload.written[-1].timestamp
    consumer.until(lambda events: sum(e["source"]["ts_us"] == marker for e in events) >= NODES, timeout=180)
    sinks.run()
    reads = sinks.assert_exactly_once(workload, restated=True)
    assert reads, "some key was written more than once while node 3 was down, and repaired as one row"
    assert {k for k, _, _ in reads} <= {k for k, n in missed.items() if n > 1}
    sinks.assert_mirror_equals_the_table(ring_cql)


def test_the_resolved_timestamp_waits_for_every_nodes_connector(spark, ring, ring_cql, ring_keyspace, connectors,
                                                                tmp_path):
    """T is the least of the three nodes' frontiers: it passes the writes while every connector runs,
    stays before the moment node 3's stopped while it is stopped (a write node 3 acknowledged alone would
    be nowhere else), and passes every write once it is started again, every write then in the sink."""
    _, described = ring
    made, _ = connectors()
    workload = Workload(ring_cql, ring_keyspace, seed=39)
    settings = job_settings(described, made[0].prefix, ring_keyspace, tmp_path, "resolved", resolved_interval=0.5)
    schema = f"{ring_keyspace}_resolved"
    running = start(spark, settings, PostgresSink(described.postgres_dsn, schema=schema, app_id=settings.app_id))
    stop = threading.Event()
    thread = threading.Thread(target=running.run, args=(stop,), daemon=True)
    thread.start()

    def resolved() -> int:
        with psycopg.connect(described.postgres_dsn) as conn:
            exists = conn.execute("SELECT to_regclass(%s)", (f"{schema}.resolved",)).fetchone()[0]
            row = exists and conn.execute(
                f"SELECT resolved_us FROM {schema}.resolved WHERE table_name = 'kv'").fetchone()
        return row[0] if row else 0

    def passes(us: int, timeout: float, what: str) -> int:
        deadline = time.monotonic() + timeout
        while (t := resolved()) <= us:
            assert time.monotonic() < deadline, f"T ({t}) not past {what} within {timeout:.0f} s"
            time.sleep(0.5)
        return t

    try:
        workload.run(30, rate=50)
        passes(time.time_ns() // 1000, 120, "the first writes")
        made[2].stop()
        stopped = time.time_ns() // 1000
        workload.run(30, rate=50)
        time.sleep(8)  # several frontiers of nodes 1 and 2 later
        held_back = resolved()
        made[2].start()
        passes(time.time_ns() // 1000, 120, "every write, node 3's connector started again")
        with psycopg.connect(described.postgres_dsn) as conn:
            rows = conn.execute(f"SELECT (key::jsonb->>'k')::int, \"cdc$operation\", write_time_us"
                                f" FROM {schema}.cdc_log WHERE \"table\" = 'kv'").fetchall()
    finally:
        stop.set()
        thread.join(120)
        running.close()
        with psycopg.connect(described.postgres_dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS {schema} CASCADE; DROP SCHEMA IF EXISTS "{ring_keyspace}" CASCADE')
    assert held_back < stopped
    assert Counter(rows) == workload.expected()


def test_a_fourth_node_joining_starts_a_generation_whose_streams_cover_its_tokens(
        spark, stack, ring, ring_cql, ring_keyspace, connectors, tmp_path):
    """Node 4 joins the ring (with a connector beside it): the job sees the ring change and publishes a new
    generation starting `generation_delay` later, whose token ranges end at every token of the four nodes;
    changes written before it keep the first generation's streams, changes after get the new one's. Last
    in the module: node 4 stays in the ring until the module's end."""
    handle, described = ring
    made, consumer = connectors()
    workload = Workload(ring_cql, ring_keyspace, seed=29)
    workload.run(30)
    consumer.until(CopiesArrived(workload, NODES), timeout=120)
    settings = job_settings(described, made[0].prefix, ring_keyspace, tmp_path, "joined")
    run_available(spark, settings)  # the first generation: the ring of three
    handle.stack("start", "cassandra@4", nodes=NODES + 1)
    fourth = None
    try:
        node = RING.describe(stack).nodes[NODES]
        fourth = ConnectorProcess(described, tmp_path / node.name, made[0].prefix, cdc_raw=node.cdc_raw,
                                  cassandra_hosts=node.host, node_name=node.name)
        fourth.start()
        run_available(spark, settings)  # sees four nodes: a new generation, `generation_delay` from now
        old, new = GenerationStore(ring_cql, settings.generations_keyspace).load().generations
        ring_tokens = read_ring(ring_cql)
        assert len(ring_tokens) == NODES + 1
        every = sorted(t for tokens in ring_tokens.values() for t in tokens)
        assert [e.token_range_end for e in new.description.entries] == every
        joined = set(every) - {e.token_range_end for e in old.description.entries}
        assert len(joined) == len(every) // (NODES + 1), "the old generation's ranges end at the three nodes' tokens"
        while time.time() * 1_000_000 < new.timestamp + 2_000_000:  # writes on both sides of the switch
            workload.step()
            time.sleep(0.1)
        workload.run(20)
        consumer.until(CopiesArrived(workload, NODES - 1), timeout=180)
        run_available(spark, settings)
    finally:
        if fourth is not None:
            fourth.stop()

    rows = log_rows(spark, settings, ring_keyspace, "kv")
    assert logged(rows) == workload.expected()
    before = [r for r in rows if r["write_time_us"] < new.timestamp]
    after = [r for r in rows if r["write_time_us"] >= new.timestamp]
    assert before and after
    for generation, side in ((old, before), (new, after)):
        topology = generation.topology()
        for r in side:
            assert r["generation"].timestamp() * 1_000_000 == pytest.approx(generation.timestamp)
            assert r["cdc$stream_id"] == topology.get_stream(r["token"]).value
    # Some changes after the switch fall in node 4's ranges, and get its streams.
    assert any(new.topology().entry_for(r["token"]).token_range_end in joined for r in after)
