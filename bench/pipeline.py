"""End-to-end figures of the pipeline on the local stack: CQL writes → cdc_raw → connector → Kafka.

    python bench/pipeline.py [--backlog N] [--rate R] [--seconds S] [--body BYTES] [--decoder native|python]

- backlog: N rows are written while the connector is stopped, then it is started; throughput is N over
  the time from its /ready to the broker's append time of the last event.
- latency: with the connector running, rows are written at a steady R rows/s for S seconds; a row's
  latency is the broker's append time of its event (the topic uses LogAppendTime: with acks=all on one
  broker, that is when Kafka acknowledges it) minus the time Cassandra acknowledged the write.
- CPU: the connector process's user + system CPU seconds while it drains the backlog, per 100,000 changes.
- memory: the connector process's resident high-water mark (VmHWM).

The connector runs as users run it (`python -m connector run`), from a position at the end of cdc_raw.
Needs the local stack (`deploy/local/start`); prints figures, asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import socket
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from cassandra.concurrent import execute_concurrent_with_args  # noqa: E402
from confluent_kafka import Consumer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroDeserializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

from deploy.local.endpoints import StackUnavailable  # noqa: E402
from services import stack_for_figures  # noqa: E402 - bench/ is the script's directory
from deploy.local.processes import ConnectorProcess  # noqa: E402
from schemas.runtime.session import connect  # noqa: E402

PARTITIONS = 3
MiB = 1 << 20


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def sync_mode(cassandra_yaml: Path) -> tuple[str, float]:
    """The commit log's sync mode and its period (periodic) or window (group), in seconds; Cassandra 5
    accepts `1000ms`, `1s`, or the old `_in_ms` keys."""
    text = cassandra_yaml.read_text()
    mode = re.search(r"^commitlog_sync:\s*(\w+)", text, re.M)
    mode = mode[1] if mode else "periodic"
    key = "commitlog_sync_group_window" if mode == "group" else "commitlog_sync_period"
    match = re.search(rf"^{key}:\s*(\d+)\s*(ms|s)?\s*$", text, re.M)
    if match:
        return mode, int(match[1]) / (1 if match[2] == "s" else 1000)
    match = re.search(rf"^{key}_in_ms:\s*(\d+)", text, re.M)
    return mode, int(match[1]) / 1000 if match else float("nan")


def wait_emitted(connector: ConnectorProcess, count: float, timeout: float) -> float:
    """Poll /metrics until the connector has `count` acknowledged events; returns the count reached."""
    deadline = time.monotonic() + timeout
    emitted = 0.0
    while time.monotonic() < deadline:
        emitted = connector.metrics().get("ringtail_changes_emitted_total", 0.0)
        if emitted >= count:
            break
        time.sleep(0.1)
    return emitted


class AppendTimes:
    """Reads the topic from the start: row id → broker append time (s) of its first event."""

    def __init__(self, bootstrap: str, registry_url: str, topic: str) -> None:
        self.topic = topic
        self.keys = AvroDeserializer(SchemaRegistryClient({"url": registry_url}))
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4()}",
                                  "enable.auto.commit": False})
        self.consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        self.times: dict[int, float] = {}

    def until(self, ids: range, timeout: float) -> dict[int, float]:
        wanted, deadline = set(ids), time.monotonic() + timeout
        context = SerializationContext(self.topic, MessageField.KEY)
        while not wanted <= self.times.keys() and time.monotonic() < deadline:
            for message in self.consumer.consume(1000, timeout=0.5):
                if not message.error():
                    self.times.setdefault(self.keys(message.key(), context)["id"], message.timestamp()[1] / 1000)
        return {i: self.times[i] for i in ids if i in self.times}

    def close(self) -> None:
        self.consumer.close()


def percentile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backlog", type=int, default=20_000, help="rows written with the connector stopped")
    parser.add_argument("--rate", type=int, default=200, help="rows/s of the latency run")
    parser.add_argument("--seconds", type=float, default=30, help="length of the latency run")
    parser.add_argument("--body", type=int, default=200, help="bytes of text per row")
    parser.add_argument("--decoder", choices=["native", "python"], default="native",
                        help="what reads the segments: the native core, or the Python reference")
    args = parser.parse_args()
    try:
        stack = stack_for_figures()
    except StackUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    run_dir = Path(os.environ.get("RINGTAIL_STACK_RUN_DIR") or REPO_ROOT / ".run")
    described = json.loads((run_dir / "stack.json").read_text())
    mode, period = sync_mode(Path(described["cassandra"]["config"]))

    name = uuid.uuid4().hex[:8]
    keyspace, prefix = f"bench_{name}", f"bench{name}"
    topic = f"{prefix}.{keyspace}.t"
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    # Created before the connector does it: LogAppendTime stamps each event when the broker takes it.
    admin.create_topics([NewTopic(topic, PARTITIONS, 1, config={"message.timestamp.type": "LogAppendTime"})])[
        topic].result(30)
    cluster, cql = connect([stack.cassandra_host], stack.cassandra_port)
    cql.execute(f"CREATE KEYSPACE {keyspace} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}")
    cql.execute(f"CREATE TABLE {keyspace}.t (id int PRIMARY KEY, body text) WITH cdc = true")
    insert = cql.prepare(f"INSERT INTO {keyspace}.t (id, body) VALUES (?, ?)")
    body = "b" * args.body
    with tempfile.TemporaryDirectory(prefix="ringtail-bench-") as scratch:
        connector = ConnectorProcess(stack, Path(scratch) / "state", prefix, metrics_port=free_port(),
                                     decoder=args.decoder)
        appended = AppendTimes(stack.kafka_bootstrap, stack.registry_url, topic)
        try:
            connector.start_from_now()
            print(f"writing a backlog of {args.backlog:,} rows ({args.body} B of text each), connector stopped",
                  flush=True)
            started = time.monotonic()
            execute_concurrent_with_args(cql, insert, [(i, body) for i in range(args.backlog)], concurrency=64,
                                         raise_on_first_error=True)
            write_rate = args.backlog / (time.monotonic() - started)
            time.sleep(period + 0.5)  # all of it durable in cdc_raw before the connector starts
            launched = time.time()
            connector.start()
            while not connector.ready():
                time.sleep(0.02)
            ready, cpu_at_ready = time.time(), connector.cpu_seconds()
            print("connector ready; draining the backlog", flush=True)
            wait_emitted(connector, args.backlog, timeout=600)
            drain_cpu = connector.cpu_seconds() - cpu_at_ready
            backlog = appended.until(range(args.backlog), timeout=120)
            if len(backlog) < args.backlog:
                print(f"error: {args.backlog - len(backlog)} backlog events missing", file=sys.stderr)
                return 1
            last_ack = max(backlog.values())

            count = int(args.rate * args.seconds)
            print(f"writing {count:,} rows at {args.rate}/s with the connector running", flush=True)
            acked: dict[int, float] = {}
            began = time.monotonic()
            # Sent on time whatever each write waits (with group sync it waits for the sync it shares);
            # a row's clock starts when Cassandra acknowledges it.
            futures = []
            for n in range(count):
                time.sleep(max(0.0, began + n / args.rate - time.monotonic()))
                future = cql.execute_async(insert, (args.backlog + n, body))
                future.add_callback(lambda _, row=args.backlog + n: acked.__setitem__(row, time.time()))
                futures.append(future)
            for future in futures:
                future.result()
            achieved = count / (time.monotonic() - began)
            wait_emitted(connector, args.backlog + count, timeout=120)
            steady = appended.until(range(args.backlog, args.backlog + count), timeout=120)
            latencies = sorted(steady[i] - acked[i] for i in steady)
            if not latencies:
                print("error: no event of the steady run arrived", file=sys.stderr)
                return 1
            peak = connector.peak_rss()
        finally:
            connector.stop()
            appended.close()
            cql.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")
            cluster.shutdown()
            admin.delete_topics([topic])

    drain = last_ack - ready
    # periodic: a write is durable within a period, and the connector is given a second on top;
    # group: the write is acknowledged once durable, so the connector alone stands between.
    target = period + 1.0 if mode == "periodic" else 0.1
    p50, p99 = percentile(latencies, 0.50), percentile(latencies, 0.99)
    print(f"\nringtail pipeline, local stack: Cassandra {described['cassandra']['version']} "
          f"(commitlog_sync {mode}, {'period' if mode == 'periodic' else 'window'} {period * 1000:.0f} ms), "
          f"Kafka {described['kafka']['version']}, "
          f"{PARTITIONS} partitions; rows of an int key and {args.body} B of text; decoder {args.decoder}")
    rows = [
        ("backlog throughput", f"{args.backlog / drain:,.0f} changes/s",
         f"{args.backlog:,} changes acknowledged {drain:.2f} s after /ready "
         f"(process start to /ready {ready - launched:.2f} s; backlog written at {write_rate:,.0f} rows/s)"),
        ("connector CPU", f"{drain_cpu * 100_000 / args.backlog:.2f} s per 100k",
         f"user + system CPU of the process while it drained the backlog ({drain_cpu:.2f} s)"),
        ("write → Kafka ack p50", f"{p50 * 1000:,.0f} ms", f"{len(latencies):,} of {count:,} rows at "
                                                          f"{achieved:,.0f} rows/s"),
        ("write → Kafka ack p99", f"{p99 * 1000:,.0f} ms",
         f"target ≤ {'sync period + 1 s' if mode == 'periodic' else '100 ms'} = {target * 1000:,.0f} ms: "
         f"{'met' if p99 <= target else 'NOT met'}"),
        ("write → Kafka ack max", f"{latencies[-1] * 1000:,.0f} ms", ""),
        ("connector peak RSS", f"{peak / MiB:,.0f} MiB", "VmHWM of the process, both runs"),
    ]
    print(f"  {'measure':24} {'value':>18}  notes")
    for measure, value, notes in rows:
        print(f"  {measure:24} {value:>18}  {notes}".rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
