"""Producing change events: an idempotent producer with acks=all, one topic per table."""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Iterable

from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

log = logging.getLogger("ringtail.kafka")


class TopicError(RuntimeError):
    """A table's topic cannot be created."""


def produce(producer: Producer, topic: str, key: bytes | None, value: bytes, **options) -> None:
    """Queue one record; when the local queue is full, serve acknowledgements until it is not."""
    while True:
        try:
            producer.produce(topic, value=value, key=key, **options)
            return
        except BufferError:
            producer.poll(0.1)


def end_offsets(bootstrap_servers: str, topic: str, timeout: float = 30) -> dict[int, int]:
    """The offset after the last record of each partition of `topic`; {} when it does not exist (asked
    without naming it, so a broker that creates topics on demand does not create it)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": "ringtail-offsets",
                         "enable.auto.commit": False})
    try:
        metadata = consumer.list_topics(timeout=timeout).topics.get(topic)
        if metadata is None or metadata.error is not None:
            return {}
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)[1]
                for p in sorted(metadata.partitions)}
    finally:
        consumer.close()


def create_topic(admin: AdminClient, topic: NewTopic, stopping: threading.Event, timeout: float = 60) -> bool:
    """Create `topic` (an existing one is fine); False when `stopping` was set meanwhile (a stop does
    not wait for a broker that does not answer)."""
    future = admin.create_topics([topic])[topic.topic]
    deadline = time.monotonic() + timeout
    while not future.done():
        if stopping.wait(0.2):
            return False
        if time.monotonic() >= deadline:
            raise TopicError(f"cannot create topic {topic.topic}: no answer from Kafka within {timeout:.0f} s")
    try:
        future.result()
        log.info("created topic %s (%d partitions)", topic.topic, topic.num_partitions)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise TopicError(f"cannot create topic {topic.topic}: {exc.args[0].str()}") from None
    return True


class EventProducer:
    def __init__(self, bootstrap_servers: str, *, partitions: int, replication_factor: int,
                 extra: dict | None = None) -> None:
        config = {
            "bootstrap.servers": bootstrap_servers,
            "linger.ms": 5,
            "compression.type": "lz4",
            **(extra or {}),
            # Not overridable: these make delivery exactly ordered per partition and durable.
            "enable.idempotence": True,
            "acks": "all",
            # A broker down for a long time is not a reason to give up an event: wait for it.
            "message.timeout.ms": 0,
        }
        self._producer = Producer(config)
        self._admin = AdminClient({"bootstrap.servers": bootstrap_servers})
        self.partitions, self.replication_factor = partitions, replication_factor
        self._topics: set[str] = set()

    def ensure_topic(self, topic: str, stopping: threading.Event, timeout: float = 60) -> bool:
        """Create `topic` unless this producer knows it; False when `stopping` was set meanwhile (a stop
        does not wait for a broker that does not answer)."""
        if topic in self._topics:
            return True
        if not create_topic(self._admin, NewTopic(topic, self.partitions, self.replication_factor), stopping,
                            timeout):
            return False
        self._topics.add(topic)
        return True

    def send(self, topic: str, key: bytes, value: bytes, on_delivery: Callable) -> None:
        """Queue one event (see `produce`)."""
        produce(self._producer, topic, key, value, on_delivery=on_delivery)

    def send_all(self, events: Iterable[tuple[str, bytes, bytes]], on_delivery: Callable) -> None:
        """Queue (topic, key, value) events sharing one delivery callback (see `produce`)."""
        queue = self._producer.produce
        for topic, key, value in events:
            try:
                queue(topic, value, key, on_delivery=on_delivery)
            except BufferError:
                produce(self._producer, topic, key, value, on_delivery=on_delivery)

    def poll(self, timeout: float = 0) -> None:
        """Serve delivery callbacks."""
        self._producer.poll(timeout)

    def flush(self, timeout: float) -> int:
        """Wait for acknowledgements at most `timeout` s; the number of events still waiting."""
        return self._producer.flush(timeout)

    def abandon(self) -> None:
        """Drop what waits (it is read again at the next start), so the process can exit at once."""
        self._producer.purge()
        self._producer.flush(0)
