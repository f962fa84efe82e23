"""The demo: CQL writes on the local stack become change events on Kafka, read back through the registry.

A `cdc = true` table, the connector started as users run it (`python -m connector run`), a small
workload (insert, update, collection changes, TTL, deletes) whose change events are printed one per
line, then a bulk load (--rows) and how soon all of it was on Kafka; the connector is stopped at the end.
Run through `deploy/local/demo`, which installs what is missing and starts the stack first.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
import warnings
from pathlib import Path

# authlib, under the registry client, warns about httpx when imported: noise in a demo. Its own
# "always" filter is installed when it is first imported, so that comes before ours.
with contextlib.suppress(ImportError):
    import authlib.deprecate  # noqa: F401
warnings.filterwarnings("ignore", message="The httpx module is deprecated")

from cassandra.concurrent import execute_concurrent_with_args  # noqa: E402
from confluent_kafka import Consumer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402
from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroDeserializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

from connector.checkpoint import PositionStore  # noqa: E402
from connector.commitlog.cdc_index import read_cdc_index  # noqa: E402
from connector.source import list_segments  # noqa: E402
from schemas.runtime.session import connect  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
KEYSPACE = "ringtail_demo"
PREFIX = "demo"
TOPIC = f"{PREFIX}.{KEYSPACE}.orders"

WORKLOAD = [
    ("insert a row", "INSERT INTO {t} (customer, order_id, item, quantity, tags) "
                     "VALUES ('alice', 1, 'green tea', 2, {{'loose'}})"),
    ("update a column", "UPDATE {t} SET quantity = 3 WHERE customer = 'alice' AND order_id = 1"),
    ("change collections", "UPDATE {t} SET tags = tags + {{'gift'}}, notes['wrap'] = 'red paper' "
                           "WHERE customer = 'alice' AND order_id = 1"),
    ("remove a set element", "UPDATE {t} SET tags = tags - {{'loose'}} WHERE customer = 'alice' AND order_id = 1"),
    ("insert with a TTL", "INSERT INTO {t} (customer, order_id, item, quantity) VALUES ('bob', 7, 'coffee', 1) "
                          "USING TTL 3600"),
    ("delete a column", "DELETE notes FROM {t} WHERE customer = 'alice' AND order_id = 1"),
    ("delete a row", "DELETE FROM {t} WHERE customer = 'bob' AND order_id = 7"),
    ("delete a partition", "DELETE FROM {t} WHERE customer = 'alice'"),
    ("insert another row", "INSERT INTO {t} (customer, order_id, item, quantity, tags, notes) "
                           "VALUES ('carol', 3, 'oolong', 1, {{'loose'}}, {{'wrap': 'blue paper'}})"),
    ("update it", "UPDATE {t} SET quantity = 4, tags = tags + {{'gift'}} WHERE customer = 'carol' AND order_id = 3"),
]


def say(message: str) -> None:
    print(f"[demo] {message}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=2000, help="rows of the bulk load (default 2000; 0: none)")
    args = parser.parse_args(argv)

    run_dir = Path(os.environ.get("RINGTAIL_STACK_RUN_DIR") or ROOT / ".run")
    stack = json.loads((run_dir / "stack.json").read_text())
    cdc_raw = Path(stack["cassandra"]["cdc_raw"])
    cluster, session = connect([stack["cassandra"]["host"]], stack["cassandra"]["port"])
    connector = None
    started_us = time.time_ns() // 1000
    try:
        say(f"table {KEYSPACE}.orders with cdc = true (dropped and created again)")
        session.execute(f"DROP KEYSPACE IF EXISTS {KEYSPACE}")
        session.execute(f"CREATE KEYSPACE {KEYSPACE} "
                        "WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        session.execute(f"CREATE TABLE {KEYSPACE}.orders (customer text, order_id int, item text, quantity int,"
                        " tags set<text>, notes map<text, text>, PRIMARY KEY ((customer), order_id)) WITH cdc = true")

        demo_dir = run_dir / "demo"
        events = Events(stack)  # this run's events: from the topic's offsets now
        connector = Connector(stack, demo_dir)
        say(f"starting the connector: python -m connector run --config {connector.config} (log: {connector.log})")
        took = connector.start()
        say(f"connector ready in {took:.1f}s, reading {cdc_raw}")

        say(f"workload on {KEYSPACE}.orders:")
        for what, statement in WORKLOAD:
            cql = statement.format(t=f"{KEYSPACE}.orders")
            session.execute(cql)
            print(f"  {what:<21} cql> {cql}", flush=True)
        say(f"waiting for {len(WORKLOAD)} change events on topic {TOPIC} (Cassandra makes the commit log "
            "durable every commitlog_sync_period)")
        got = events.read(len(WORKLOAD), timeout=30)
        if len(got) < len(WORKLOAD):
            return failed(connector, f"{len(got)} of {len(WORKLOAD)} events arrived within 30 s")
        say(f"{len(got)} events, decoded through the registry: op, kind, table, key, what changed, and the "
            "time from the write to the connector producing it")
        for message_time, event in sorted(got, key=lambda m: tuple(m[1]["source"]["position"].values())):
            print("  " + describe(event, message_time), flush=True)

        if args.rows:
            bulk(session, events, args.rows)
        show_cdc_raw(cdc_raw)
    finally:
        if connector is not None:
            connector.stop()
            say(f"connector stopped; events stay on topic {TOPIC}")
        cluster.shutdown()
    status = run_spark_job(stack, run_dir / "demo" / "spark", since_us=started_us)
    return status or run_mirror(stack, run_dir / "demo" / "mirror", events.start)


# -- the connector ---------------------------------------------------------------------------------


class Connector:
    """The connector as a process, its settings in a YAML file, its state under .run/demo/."""

    def __init__(self, stack: dict, directory: Path) -> None:
        """Started after what cdc_raw holds now: older segments are other runs'."""
        shutil.rmtree(directory / "state", ignore_errors=True)
        (directory / "state").mkdir(parents=True)
        PositionStore(directory / "state" / "position.json").start_now(stack["cassandra"]["cdc_raw"])
        self.port = free_port()
        self.config, self.log = directory / "connector.yaml", directory / "connector.log"
        self.config.write_text(
            f"cdc_raw: {stack['cassandra']['cdc_raw']}\nstate_dir: {directory / 'state'}\n"
            f"cassandra_hosts: {stack['cassandra']['host']}\ncassandra_port: {stack['cassandra']['port']}\n"
            f"kafka_bootstrap_servers: {stack['kafka']['bootstrap_servers']}\n"
            f"registry_url: {stack['registry']['url']}\ntopic_prefix: {PREFIX}\ntopic_partitions: 3\n"
            f"metrics_host: 127.0.0.1\nmetrics_port: {self.port}\npoll_interval: 0.1\ncommit_interval: 0.2\n"
            "log_format: text\n")
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 60) -> float:
        started = time.monotonic()
        with open(self.log, "w") as log:
            self.process = subprocess.Popen([sys.executable, "-m", "connector", "run", "--config", str(self.config)],
                                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        while time.monotonic() - started < timeout:
            if self.process.poll() is not None:
                raise SystemExit(f"the connector exited ({self.process.returncode}):\n{self.tail()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/ready", timeout=2):
                    return time.monotonic() - started
            except OSError:
                time.sleep(0.1)
        raise SystemExit(f"the connector was not ready within {timeout:.0f} s:\n{self.tail()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()

    def tail(self, lines: int = 15) -> str:
        return "\n".join(self.log.read_text().splitlines()[-lines:])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def failed(connector: Connector, message: str) -> int:
    print(f"[demo] {message}; the connector's log ends with:\n{connector.tail()}", file=sys.stderr)
    return 1


# -- the Spark job -----------------------------------------------------------------------------------


def run_spark_job(stack: dict, directory: Path, since_us: int) -> int:
    """Kafka → Spark (stream ids) → Delta over what the demo topics hold, then a summary of this run's rows.
    The checkpoint and the Delta tables persist across demo runs: each run processes only new events."""
    from pyspark.sql import functions as F

    from spark.job.config import JobSettings
    from spark.delivery.pipeline import spark_session, start
    from spark.sinks.delta.sink import DeltaSink

    settings = JobSettings(
        kafka_bootstrap_servers=stack["kafka"]["bootstrap_servers"], registry_url=stack["registry"]["url"],
        topic_prefix=PREFIX, cassandra_hosts=(stack["cassandra"]["host"],),
        cassandra_port=stack["cassandra"]["port"], delta_path=directory / "delta",
        checkpoint_dir=directory / "checkpoint", spark_master="local[2]", spark_jars=stack["spark-jars"]["jars"],
        spark_conf={"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
                    "spark.sql.shuffle.partitions": "2"}, log_level="WARNING", log_format="text")
    say(f"Spark job: Kafka topics {settings.topic_pattern} -> stream ids -> Delta at {settings.delta_path}")
    spark = spark_session(settings)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        job = start(spark, settings, DeltaSink(spark, settings.delta_path, settings.app_id), available_now=True)
        query = job.query
        seen = 0
        while query.isActive:
            query.awaitTermination(2)
            for progress in query.recentProgress[seen:]:
                say(f"  micro-batch {progress['batchId']}: {progress['numInputRows']} events read")
            seen = len(query.recentProgress)
        if query.exception() is not None:
            print(f"[demo] the Spark job failed: {query.exception()}", file=sys.stderr)
            return 1
        job.close()
        rows = (spark.read.format("delta").load(str(settings.delta_path / "cdc_log"))
                .where((F.col("keyspace") == KEYSPACE) & (F.col("write_time_us") >= since_us)))
        say("summary of this run's CDC log rows (ScyllaDB layout):")
        for r in rows.groupBy("generation").count().orderBy("generation").collect():
            print(f"  generation starting {r['generation']:%Y-%m-%d %H:%M:%S} UTC: {r['count']} rows")
        per_stream = rows.groupBy("cdc$stream_id").count().orderBy(F.desc("count")).collect()
        print(f"  {len(per_stream)} streams; busiest:")
        for r in per_stream[:5]:
            print(f"    stream 0x{bytes(r['cdc$stream_id']).hex()}: {r['count']} rows")
        for r in rows.groupBy("cdc$operation").count().orderBy("cdc$operation").collect():
            print(f"  cdc$operation {r['cdc$operation']}: {r['count']} rows")
        dead = settings.delta_path / "dead_letters"
        letters = spark.read.format("delta").load(str(dead)).count() if dead.exists() else 0
        say(f"{letters} dead letters in all demo runs; query the tables with spark.read.format('delta')")
    finally:
        spark.stop()
    return 0


MIRROR_QUERY = f"SELECT * FROM {KEYSPACE}.orders WHERE customer = 'carol'"


def run_mirror(stack: dict, directory: Path, offsets: dict[int, int]) -> int:
    """This run's events → Spark → a PostgreSQL mirror of the table, then `SELECT *` of both side by side."""
    import psycopg

    from spark.job.config import JobSettings
    from spark.delivery.pipeline import Source, spark_session, start
    from spark.sinks.postgres.mirror import PostgresMirrorSink

    dsn = stack["postgres"]["dsn"]
    with psycopg.connect(dsn, autocommit=True) as pg:  # the table is new in each run: so is its mirror
        pg.execute(f"DROP SCHEMA IF EXISTS {KEYSPACE}, {KEYSPACE}_sink CASCADE")
    shutil.rmtree(directory, ignore_errors=True)
    settings = JobSettings(
        kafka_bootstrap_servers=stack["kafka"]["bootstrap_servers"], registry_url=stack["registry"]["url"],
        topic_prefix=PREFIX, cassandra_hosts=(stack["cassandra"]["host"],), cassandra_port=stack["cassandra"]["port"],
        checkpoint_dir=directory / "checkpoint", spark_master="local[2]", spark_jars=stack["spark-jars"]["jars"],
        spark_conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"}, log_level="WARNING",
        log_format="text", app_id="demo-mirror")
    say(f"mirror: this run's events -> Spark -> PostgreSQL table {KEYSPACE}.orders, equal to SELECT * of the source")
    spark = spark_session(settings)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        # The topic's offsets before this run's first write (none: the topic is new in this run).
        starting = json.dumps({TOPIC: {str(p): o for p, o in offsets.items()}}) if offsets else "earliest"
        source = Source(TOPIC.replace(".", "[.]"), {"startingOffsets": starting})
        sink = PostgresMirrorSink(dsn, f"{KEYSPACE}_sink", settings.app_id,
                                  cluster=((stack["cassandra"]["host"],), stack["cassandra"]["port"]))
        job = start(spark, settings, sink, available_now=True, source=source)
        job.query.awaitTermination()
        job.close()
    finally:
        spark.stop()
    cluster, session = connect([stack["cassandra"]["host"]], stack["cassandra"]["port"])
    try:
        source_rows = [tuple(r) for r in session.execute(f"SELECT * FROM {KEYSPACE}.orders")]
        carol = list(session.execute(MIRROR_QUERY))
    finally:
        cluster.shutdown()
    with psycopg.connect(dsn) as pg:
        mirror_rows = pg.execute(f"SELECT * FROM {KEYSPACE}.orders").fetchall()
        mirror_carol = pg.execute(MIRROR_QUERY).fetchall()
    print(f"  cqlsh> {MIRROR_QUERY}")
    for r in carol:
        print("    " + " | ".join(_shown(v) for v in r))
    print(f"  psql>  {MIRROR_QUERY}")
    for r in mirror_carol:
        print("    " + " | ".join(_shown(v) for v in r))
    same = {_comparable(r) for r in source_rows} == {_comparable(r) for r in mirror_rows}
    say(f"{len(source_rows)} rows in Cassandra, {len(mirror_rows)} in the mirror: "
        + ("every row equal" if same and len(source_rows) == len(mirror_rows) else "THEY DIFFER"))
    return 0 if same else 1


def _shown(value) -> str:
    """A value as cqlsh shows it: a set in braces (the driver's SortedSet otherwise prints its class)."""
    if type(value).__name__ == "SortedSet":
        return "{" + ", ".join(map(repr, value)) + "}"
    return str(value)


def _comparable(row: tuple) -> tuple:
    """A row of either side as plain values: sets and lists as sorted tuples, maps as sorted pairs."""
    out = []
    for value in row:
        if isinstance(value, (set, frozenset, list, tuple)) or type(value).__name__ == "SortedSet":
            value = tuple(sorted(value))
        elif hasattr(value, "items"):
            value = tuple(sorted(value.items()))
        out.append(value)
    return tuple(out)


# -- the events --------------------------------------------------------------------------------------


class Events:
    """The demo topic from the offsets it has now: only this run's events."""

    def __init__(self, stack: dict) -> None:
        bootstrap = stack["kafka"]["bootstrap_servers"]
        self.admin = AdminClient({"bootstrap.servers": bootstrap})
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"demo-{uuid.uuid4()}",
                                  "enable.auto.commit": False})
        self.deserialize = AvroDeserializer(SchemaRegistryClient({"url": stack["registry"]["url"]}))
        self.start = {p: self.consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)[1]
                      for p in self._partitions()}
        self.assigned = False

    def _partitions(self) -> list[int]:
        topic = self.admin.list_topics(TOPIC, timeout=10).topics.get(TOPIC)
        return sorted(topic.partitions) if topic is not None and topic.error is None else []

    def _assign(self) -> bool:
        """Once the connector has created the topic: read it from the offsets it had at the start."""
        if not self.assigned and (partitions := self._partitions()):
            self.consumer.assign([TopicPartition(TOPIC, p, self.start.get(p, 0)) for p in partitions])
            self.assigned = True
        return self.assigned

    def read(self, count: int, timeout: float, decode: bool = True) -> list[tuple[float, dict | None]]:
        """Up to `count` events as (Kafka message time in s, decoded value or None)."""
        out: list[tuple[float, dict | None]] = []
        deadline = time.monotonic() + timeout
        while len(out) < count and time.monotonic() < deadline:
            if not self._assign():
                time.sleep(0.2)
                continue
            for message in self.consumer.consume(min(500, count - len(out)), timeout=0.5):
                if message.error():
                    continue
                value = None
                if decode:
                    value = self.deserialize(message.value(), SerializationContext(TOPIC, MessageField.VALUE))
                    value["_key"] = self.deserialize(message.key(), SerializationContext(TOPIC, MessageField.KEY))
                out.append((message.timestamp()[1] / 1000, value))
        return out


def describe(event: dict, message_time: float) -> str:
    """One line: op, kind, table, primary key, then what the change did to each column, in CQL terms."""
    after, source = event["after"], event["source"]
    key = " ".join(f"{k}={v!r}" for k, v in after.items() if v is not None and not isinstance(v, dict))
    changes = [column_change(name, value) for name, value in after.items() if isinstance(value, dict)]
    if event["kind"].endswith("_delete"):
        changes.insert(0, event["kind"].replace("_", " ") + "d")
    if event["liveness"] and event["liveness"]["ttl"]:
        changes.append(f"USING TTL {event['liveness']['ttl']}")
    delay = message_time - source["ts_us"] / 1e6
    return (f"{event['op']} {event['kind']:<16} {source['keyspace']}.{source['table']}  {key:<28} "
            f"{', '.join(changes):<48} +{delay:.2f}s")


def column_change(name: str, value: dict) -> str:
    if "tombstone" in value:  # a plain cell
        return f"{name} deleted" if value["tombstone"] else f"{name} = {value['value']!r}"
    # A collection: elements added or removed, after deleting the whole column first on an overwrite.
    added = [f"{e['key']!r}: {e['value']!r}" if "value" in e else repr(e["key"]) for e in value.get("added") or []]
    removed = [repr(e["key"]) for e in value.get("removed") or []]
    parts = []
    if value.get("deletion"):
        parts.append(f"{name} = {{{', '.join(added)}}}" if added else f"{name} deleted")
    elif added:
        parts.append(f"{name} + {{{', '.join(added)}}}")
    if removed:
        parts.append(f"{name} - {{{', '.join(removed)}}}")
    return ", ".join(parts)


def bulk(session, events: Events, rows: int) -> None:
    insert = session.prepare(f"INSERT INTO {KEYSPACE}.orders (customer, order_id, item, quantity) "
                             "VALUES (?, ?, ?, ?)")
    say(f"bulk load: {rows} rows")
    started = time.monotonic()
    execute_concurrent_with_args(session, insert, [(f"customer-{i % 97}", i, f"item-{i % 13}", 1 + i % 5)
                                                   for i in range(rows)], concurrency=32, raise_on_first_error=True)
    wrote = time.monotonic() - started
    got = events.read(rows, timeout=60, decode=False)
    arrived = time.monotonic() - started
    say(f"wrote {rows} rows in {wrote:.1f}s ({rows / wrote:,.0f} rows/s); {len(got)} events on Kafka "
        f"{arrived:.1f}s after the first write")


def show_cdc_raw(cdc_raw: Path) -> None:
    segments = list_segments(cdc_raw)
    say(f"{cdc_raw} now (the connector deletes a segment once its events are acknowledged and committed):")
    print(f"  {'segment':34} {'durable offset':>15}  state")
    for segment in segments:
        index = read_cdc_index(segment.index_path)
        if index is not None:
            print(f"  {segment.name:34} {index.offset:>15}  {'COMPLETED' if index.completed else 'being written'}")
    if not any(read_cdc_index(s.index_path) for s in segments):
        print("  (no segment holds CDC data)")


if __name__ == "__main__":
    sys.exit(main())
