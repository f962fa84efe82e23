"""The connector as users run it (`python -m connector run --config FILE`, a real process that can be
killed), and a consumer decoding its topics through the registry."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from connector.commitlog import Position
from connector.source import list_segments
from tests.integration.capture import chain_end
from tests.stack import ROOT, Stack


class ConnectorProcess:
    def __init__(self, stack: Stack, state_dir: Path, prefix: str) -> None:
        self.state_dir = state_dir
        self.prefix = prefix
        self.cdc_raw = stack.cdc_raw
        self.config = state_dir.parent / f"{state_dir.name}.yaml"
        self.config.write_text(
            f"cdc_raw: {stack.cdc_raw}\nstate_dir: {state_dir}\n"
            f"cassandra_hosts: {stack.cassandra_host}\ncassandra_port: {stack.cassandra_port}\n"
            f"kafka_bootstrap_servers: {stack.kafka_bootstrap}\nregistry_url: {stack.registry_url}\n"
            f"topic_prefix: {prefix}\ntopic_partitions: 3\nmetrics_port: 0\npoll_interval: 0.1\n"
            f"commit_interval: 0.2\nlog_format: text\n")
        self.log = state_dir.parent / f"{state_dir.name}.log"
        self.process: subprocess.Popen | None = None

    def start_from_now(self) -> None:
        """Position the connector at the end of what is durable now: older segments belong to other
        tests (and to tables dropped since)."""
        with_index = [s for s in list_segments(self.cdc_raw) if s.index_path.exists()]
        newest = with_index[-1]
        self.seed(Position(newest.segment_id, chain_end(newest.path), -1, -1))

    def seed(self, position: Position) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        (self.state_dir / "position.json").write_text(json.dumps(position._asdict()))

    def start(self) -> None:
        log = open(self.log, "a")
        self.process = subprocess.Popen([sys.executable, "-m", "connector", "run", "--config", str(self.config)],
                                        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()

    def committed(self) -> Position | None:
        path = self.state_dir / "position.json"
        return Position(**json.loads(path.read_text())) if path.exists() else None


class EventConsumer:
    """Every event of the topics matching `^<prefix>\\.`, decoded through the registry."""

    def __init__(self, stack: Stack, prefix: str) -> None:
        self.registry = SchemaRegistryClient({"url": stack.registry_url})
        self.deserialize = AvroDeserializer(self.registry)
        self.consumer = Consumer({"bootstrap.servers": stack.kafka_bootstrap, "group.id": f"test-{uuid.uuid4()}",
                                  "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 500})
        self.consumer.subscribe([f"^{prefix.replace('.', '[.]')}[.].*"])
        self.events: list[dict] = []

    def until(self, predicate, timeout: float = 60) -> list[dict]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = self.consumer.poll(0.5)
            if message is None or message.error():
                if predicate(self.events):
                    return self.events
                continue
            context = SerializationContext(message.topic(), MessageField.VALUE)
            event = self.deserialize(message.value(), context)
            event["_key"] = self.deserialize(message.key(), SerializationContext(message.topic(), MessageField.KEY))
            event["_topic"] = message.topic()
            self.events.append(event)
        raise AssertionError(f"events did not arrive within {timeout} s ({len(self.events)} so far)")

    def close(self) -> None:
        self.consumer.close()


def write_marker(cql, keyspace: str) -> uuid.UUID:
    cql.execute(f"CREATE TABLE IF NOT EXISTS {keyspace}.marker (id uuid PRIMARY KEY) WITH cdc = true")
    marker = uuid.uuid4()
    cql.execute(f"INSERT INTO {keyspace}.marker (id) VALUES ({marker})")
    return marker


def has_marker(marker: uuid.UUID):
    return lambda events: any(e["source"]["table"] == "marker" and e["_key"]["id"] == str(marker)
                              or e["_key"].get("id") == marker for e in events)
