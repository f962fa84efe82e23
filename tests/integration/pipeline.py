"""A consumer decoding the connector's topics through the registry, and what tests check on its events
(the connector process itself is `deploy.local.processes.ConnectorProcess`)."""
from __future__ import annotations

import re
import threading
import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from deploy.local.endpoints import Stack
from schemas.frontier import FrontierRecord, frontier_topic


class EventConsumer:
    """Every event of the topics matching `^<prefix>\\.<keyspace>.<table>$` (not dead letters), decoded
    through the registry, each partition read from its start.

    Partitions are assigned by hand as their topics appear, not through a consumer group's regex
    subscription: a group's consumer was seen, in CI, not to pick up a topic created after it
    subscribed, and not to fetch again after its broker restarted, while the events were in Kafka."""

    def __init__(self, stack: Stack, prefix: str) -> None:
        self.registry = SchemaRegistryClient({"url": stack.registry_url})
        self.deserialize = AvroDeserializer(self.registry)
        self.consumer = Consumer({"bootstrap.servers": stack.kafka_bootstrap, "group.id": f"test-{uuid.uuid4()}",
                                  "enable.auto.commit": False})
        self.topics = re.compile(f"^{re.escape(prefix)}[.][^.]+[.][^.]+$")
        self.assigned: set[tuple[str, int]] = set()
        self.looked = 0.0
        self.events: list[dict] = []
        self._closed = False

    def assign_new_partitions(self) -> None:
        """Read each partition of a matching topic from its start, once; looked up at most once a second."""
        if time.monotonic() - self.looked < 1:
            return
        self.looked = time.monotonic()
        try:
            metadata = self.consumer.list_topics(timeout=5)
        except KafkaException:  # broker unreachable: look again later
            return
        new = [(name, p) for name, topic in metadata.topics.items() if self.topics.match(name) and not topic.error
               for p in topic.partitions if (name, p) not in self.assigned]
        if new:
            self.consumer.incremental_assign([TopicPartition(name, p, OFFSET_BEGINNING) for name, p in new])
            self.assigned.update(new)

    def until(self, predicate, timeout: float = 60) -> list[dict]:
        """The events once `predicate(events)` holds; a predicate with a `shortfall(events)` says in the
        error what is still missing."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.assign_new_partitions()
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
        shortfall = getattr(predicate, "shortfall", None)
        missing = f": {shortfall(self.events)}" if shortfall else ""
        raise AssertionError(f"events did not arrive within {timeout} s ({len(self.events)} so far){missing}")

    def close(self, timeout: float = 5) -> None:
        """Close the consumer; one that lost its broker can block in close, so the test run does not
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


def changes_of_every_kind_arrive(cql, keyspace: str, connector, consumer: EventConsumer) -> None:
    """Inserts, updates (a TTL, a static column, collection elements added and removed), cell, row, range
    and partition deletions of a CDC table, written through `cql`, arrive from the started `connector` as
    their events, in order, and a table without CDC sends none."""
    ks = keyspace
    cql.execute(f"CREATE TABLE {ks}.orders (shop text, id int, note text static, item text, qty int,"
                f" tags set<text>, attrs map<text, int>, PRIMARY KEY (shop, id)) WITH cdc = true")
    cql.execute(f"CREATE TABLE {ks}.plain (id int PRIMARY KEY, v text)")
    statements = [
        f"INSERT INTO {ks}.orders (shop, id, item, qty, tags) VALUES ('s1', 1, 'apple', 3, {{'red'}})",
        f"UPDATE {ks}.orders SET qty = 4, attrs['w'] = 7 WHERE shop = 's1' AND id = 1",
        f"UPDATE {ks}.orders SET tags = tags - {{'red'}} WHERE shop = 's1' AND id = 1",
        f"INSERT INTO {ks}.orders (shop, id, item) VALUES ('s1', 2, 'pear') USING TTL 3600",
        f"UPDATE {ks}.orders SET note = 'open' WHERE shop = 's1'",
        f"DELETE item FROM {ks}.orders WHERE shop = 's1' AND id = 2",
        f"DELETE FROM {ks}.orders WHERE shop = 's1' AND id = 2",
        f"DELETE FROM {ks}.orders WHERE shop = 's1' AND id > 5 AND id <= 9",
        f"DELETE FROM {ks}.orders WHERE shop = 's2'",
        f"INSERT INTO {ks}.plain (id, v) VALUES (1, 'not captured')",
    ]
    for statement in statements:
        cql.execute(statement)
    marker = write_marker(cql, ks)
    events = [e for e in consumer.until(has_marker(marker)) if e["source"]["table"] != "marker"]
    # One Cassandra partition's events share a Kafka partition, in order; across partitions the
    # commit-log position orders them.
    events.sort(key=lambda e: tuple(e["source"]["position"].values()))
    kinds = [(e["op"], e["kind"]) for e in events]
    assert kinds == [("c", "insert"), ("u", "update"), ("u", "update"), ("c", "insert"), ("u", "update"),
                     ("u", "update"), ("d", "row_delete"), ("d", "range_delete"), ("d", "partition_delete")]
    assert {e["_topic"] for e in events} == {f"{connector.prefix}.{ks}.orders"}
    insert, update, removal, ttl_insert, static, cell_delete, row_delete, range_delete, partition_delete = events
    assert insert["_key"] == {"shop": "s1"}
    assert insert["after"]["item"]["value"] == "apple" and insert["after"]["qty"]["value"] == 3
    assert [a["key"] for a in insert["after"]["tags"]["added"]] == ["red"]
    assert update["after"]["qty"]["value"] == 4 and update["after"]["item"] is None  # not touched
    assert [(a["key"], a["value"]) for a in update["after"]["attrs"]["added"]] == [("w", 7)]
    assert [r["key"] for r in removal["after"]["tags"]["removed"]] == ["red"]
    assert ttl_insert["after"]["item"]["ttl"] == 3600
    assert static["static"] is True and static["after"]["note"]["value"] == "open"
    assert cell_delete["after"]["item"]["tombstone"] is True
    assert row_delete["after"]["id"] == 2 and row_delete["deletion"]["timestamp"] > 0
    assert range_delete["deletion"]["timestamp"] > 0
    assert partition_delete["_key"] == {"shop": "s2"}
    s1 = [tuple(e["source"]["position"].values()) for e in consumer.events if e["_key"] == {"shop": "s1"}]
    assert s1 == sorted(s1) and len(s1) == 8


def frontier_past(stack: Stack, prefix: str, after_us: int, timeout: float = 60) -> FrontierRecord:
    """The first frontier record `prefix`'s connectors send whose frontier is past `after_us`."""
    consumer = Consumer({"bootstrap.servers": stack.kafka_bootstrap, "group.id": f"test-{uuid.uuid4()}",
                         "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(frontier_topic(prefix), 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                record = FrontierRecord.decode(message.value())
                if record.frontier_us > after_us:
                    return record
        raise AssertionError(f"no frontier past {after_us} within {timeout} s")
    finally:
        consumer.close()
