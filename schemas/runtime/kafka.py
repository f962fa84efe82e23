"""Producing change events: an idempotent producer with acks=all, one topic per table."""
from __future__ import annotations

import logging
import re
import threading
import time
from typing import Callable, Iterable

from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, ClusterMetadata, NewTopic

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


def end_offsets(client: dict, topic: str, timeout: float = 30) -> dict[int, int]:
    """The offset after the last record of each partition of `topic`, asked with the client configuration
    `client` (`KafkaSecurity.librdkafka`); {} when it does not exist (asked without naming it, so a broker
    that creates topics on demand does not create it)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({**client, "group.id": "ringtail-offsets", "enable.auto.commit": False})
    try:
        metadata = consumer.list_topics(timeout=timeout).topics.get(topic)
        if metadata is None or metadata.error is not None:
            return {}
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)[1]
                for p in sorted(metadata.partitions)}
    finally:
        consumer.close()


def latest_offsets(admin: AdminClient, pattern: str, timeout: float = 10) -> dict[str, dict[int, int]]:
    """Topic → partition → the offset after its last record, for every topic whose whole name matches
    `pattern`, in one request per broker."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec

    wanted = re.compile(pattern)
    metadata = admin.list_topics(timeout=timeout)
    request = {TopicPartition(name, p): OffsetSpec.latest() for name, topic in metadata.topics.items()
               if topic.error is None and wanted.fullmatch(name) for p in topic.partitions}
    offsets: dict[str, dict[int, int]] = {}
    if request:
        for partition, future in admin.list_offsets(request, request_timeout=timeout).items():
            offsets.setdefault(partition.topic, {})[partition.partition] = future.result(timeout).offset
    return offsets


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


def topic_replication(brokers: int, replication_factor: int | None,
                      min_insync_replicas: int | None) -> tuple[int, int]:
    """(replication factor, min.insync.replicas) of the topics ringtail creates on a cluster of `brokers`.
    Unset, they are what production clusters run with: three copies, of which two must have a write
    before it is acknowledged (acks=all), so one broker can be lost without losing or refusing a write.
    A cluster of fewer brokers gets a copy on each, one fewer in sync (at least one)."""
    factor = replication_factor or min(3, brokers)
    in_sync = min_insync_replicas or max(1, min(2, factor - 1))
    if factor > brokers:
        raise TopicError(f"topic_replication_factor {factor} is more than the {brokers} broker(s) of the cluster")
    if in_sync > factor:
        raise TopicError(f"topic_min_insync_replicas {in_sync} is more than the replication factor {factor}: "
                         "no write could be acknowledged")
    return factor, in_sync


def broker_count(cluster: ClusterMetadata) -> int:
    """The cluster's brokers: those alive, and those down that hold a copy of some partition (a broker
    down when the first topic is created does not make its topics keep fewer copies)."""
    ids = set(cluster.brokers)
    for topic in cluster.topics.values():
        for partition in topic.partitions.values():
            ids.update(partition.replicas)
    return len(ids)


class EventProducer:
    def __init__(self, client: dict, *, partitions: int, replication_factor: int | None = None,
                 min_insync_replicas: int | None = None, extra: dict | None = None,
                 on_error: Callable | None = None) -> None:
        """`client`: the cluster's address and security (`KafkaSecurity.librdkafka`), shared by the
        producer and the admin clients that create topics; `extra`: the producer's own settings;
        `on_error`: librdkafka's client errors (served by the producer's poll)."""
        config = {
            **({"error_cb": on_error} if on_error is not None else {}),
            **client,
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
        self._client = client
        self.partitions = partitions
        self._replication = (replication_factor, min_insync_replicas)
        self._layout: tuple[int, int] | None = None  # decided at the first topic, from the cluster's brokers
        self._topics: set[str] = set()

    @staticmethod
    def _cluster(admin: AdminClient, timeout: float):
        """The cluster's metadata, from whichever broker answers first."""
        try:
            return admin.list_topics(timeout=timeout)
        except KafkaException as exc:
            raise TopicError(f"cannot read the cluster's metadata: {exc.args[0].str()}") from None

    def _topic_layout(self, brokers: int) -> tuple[int, int]:
        if self._layout is None:
            self._layout = topic_replication(brokers, *self._replication)
            log.info("topics are created with replication factor %d and min.insync.replicas %d (%d broker(s))",
                     *self._layout, brokers)
        return self._layout

    def ensure_topic(self, topic: str, stopping: threading.Event, timeout: float = 15, *,
                     compacted: bool = False) -> bool:
        """Create `topic` unless it exists (`compacted`: one partition, keeping the newest record of each
        key); False when `stopping` was set meanwhile (a stop does not wait for a broker that does not
        answer). A creation takes a second or so; one taking `timeout` is waiting for a controller that
        died, and fails, to be asked again."""
        if topic in self._topics:
            return True
        # A client of its own for each topic (topics are few): one kept would go on waiting for the
        # controller it knew, though that broker died, where a new one asks the brokers alive.
        admin = AdminClient(self._client)
        # Asked first from any broker: with a connector per node, another one has usually created it,
        # and a creation needs the controller.
        cluster = self._cluster(admin, timeout)
        known = cluster.topics.get(topic)
        if known is None or known.error is not None:
            factor, in_sync = self._topic_layout(broker_count(cluster))
            config = {"min.insync.replicas": str(in_sync), **({"cleanup.policy": "compact"} if compacted else {})}
            new = NewTopic(topic, 1 if compacted else self.partitions, factor, config=config)
            if not create_topic(admin, new, stopping, timeout):
                return False
        self._topics.add(topic)
        return True

    def send_all(self, events: Iterable[tuple[str, bytes, bytes]], on_delivery: Callable) -> None:
        """Queue (topic, key, value) events sharing one delivery callback (see `produce`)."""
        queue = self._producer.produce
        for topic, key, value in events:
            try:
                queue(topic, value, key, on_delivery=on_delivery)
            except BufferError:
                produce(self._producer, topic, key, value, on_delivery=on_delivery)

    def offer(self, topic: str, key: bytes, value: bytes, on_delivery: Callable) -> bool:
        """Queue one record from another thread than the one that polls: never serves callbacks (they
        belong to the polling thread); False when the local queue is full."""
        try:
            self._producer.produce(topic, value, key, on_delivery=on_delivery)
            return True
        except BufferError:
            return False

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
