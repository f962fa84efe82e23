"""A consumer decoding the connector's topics through the registry, and what tests check on its events
(the connector process itself is `deploy.local.processes.ConnectorProcess`)."""
from __future__ import annotations

import threading
import time
import uuid

from confluent_kafka import Consumer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from deploy.local.endpoints import Stack


class EventConsumer:
    """Every event of the topics matching `^<prefix>\\.`, decoded through the registry."""

    def __init__(self, stack: Stack, prefix: str) -> None:
        self.registry = SchemaRegistryClient({"url": stack.registry_url})
        self.deserialize = AvroDeserializer(self.registry)
        self.consumer = Consumer({"bootstrap.servers": stack.kafka_bootstrap, "group.id": f"test-{uuid.uuid4()}",
                                  "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 500})
        self.consumer.subscribe([f"^{prefix.replace('.', '[.]')}[.][^.]+[.][^.]+$"])  # table topics, not dead letters
        self.events: list[dict] = []
        self._closed = False

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

    def close(self, timeout: float = 5) -> None:
        """Leave the group; a consumer that lost its broker can block in close, so the test run does not
        wait for it longer than `timeout`."""
        if self._closed:
            return
        self._closed = True
        closing = threading.Thread(target=self.consumer.close, daemon=True)
        closing.start()
        closing.join(timeout)


def write_marker(cql, keyspace: str) -> uuid.UUID:
    cql.execute(f"CREATE TABLE IF NOT EXISTS {keyspace}.marker (id uuid PRIMARY KEY) WITH cdc = true")
    marker = uuid.uuid4()
    cql.execute(f"INSERT INTO {keyspace}.marker (id) VALUES ({marker})")
    return marker


def has_marker(marker: uuid.UUID):
    return lambda events: any(e["source"]["table"] == "marker" and e["_key"]["id"] == str(marker)
                              or e["_key"].get("id") == marker for e in events)


def assert_each_once(events: list[dict], table: str, written: list[int], repeats: bool = True) -> None:
    """Every written id arrived; a repeat (allowed only with `repeats`) is the same change, at the same
    position, never another one."""
    got = [e for e in events if e["source"]["table"] == table]
    positions: dict[int, set] = {}
    for e in got:
        positions.setdefault(e["_key"]["id"], set()).add(tuple(e["source"]["position"].values()))
    missing = sorted(set(written) - positions.keys())
    assert not missing, f"{len(missing)} of {len(written)} rows never arrived, e.g. {missing[:10]}"
    assert all(len(p) == 1 for p in positions.values()), "a repeated event with another position"
    assert repeats or len(got) == len(positions), f"{len(got) - len(positions)} events repeated"
