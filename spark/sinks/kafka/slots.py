"""A batch's log rows produced from the executors, a Kafka transaction per slot: the rule the Kafka sink
follows for them.

A Kafka transaction belongs to one producer, so the tasks of a batch cannot share one. The rows are cut
instead into a fixed number of slots by their partition key (`slotted`: Spark's hash of the key modulo
the slot count). A replay of the same source offsets cuts them the same way, and a partition's changes
stay together, in order, in one slot. Each slot is written by one task, in a transaction of its own,
under the slot's transactional id, `ringtail-sink-<app id>-slot-<n>`. Opening it fences every other
producer of the slot (an earlier attempt of the task, an executor lost but still running, a runner that
lost its lease) and completes the transaction that producer left, so what the slot's ledger says next is
final.

The slot's ledger is the offset its consumer group (named as its transactional id) has on the sink's
ledger topic, committed in the slot's transaction itself (`send_offsets_to_transaction`): the id of the
last batch whose share the slot wrote. A slot that holds the batch skips it, so a replay after a crash
between slots writes the slots not yet committed, each once. A slot without rows in a batch commits
nothing: its replay has none either.

Kafka forgets a group's offsets `offsets.retention.minutes` (7 days by default) after its last commit: a
batch cut between its slots and replayed later than that sends its slots written already again, with
the same change ids in the headers for a reader to drop them by.

Without transactions (`transactions=false`) a slot is produced idempotently and flushed, with no ledger:
at least once, as the whole sink is then.
"""
from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from schemas.runtime.kafka import produce

from ..ledger import BatchMismatch
from .records import RECORDS, BatchEncoder, headers

log = logging.getLogger(__name__)
SLOT = "ringtail$slot"
# The producer settings of every record the sink writes, on the driver and on the executors.
PRODUCING = {"enable.idempotence": True, "acks": "all", "linger.ms": 5, "compression.type": "lz4"}
# A slot's clients live for one slot of one batch, and each first reconnects to the coordinator it
# finds: with librdkafka's default first backoff (100 ms) they start in 55 ms rather than 15, every slot.
# Settings of the process (`kafka_security.properties`) still win.
_SHORT_LIVED = {"reconnect.backoff.ms": 10}


class SlotError(RuntimeError):
    """A slot's share of a batch was not written."""


def slot_of(slots: int, key: str = "partition_key") -> Column:
    """A row's slot among `slots`, from its record's key (a log row's partition key, an image's key)."""
    return F.pmod(F.hash(key), F.lit(slots))


def slotted(frame: DataFrame, slots: int, order: Iterable[Column | str], key: str = "partition_key") -> DataFrame:
    """`frame` with each row's slot in `SLOT`, a partition per slot, each in slot order then `order`."""
    # The partitioning hashes the key as `hash` does, so a task holds one slot; a task given more
    # (should Spark partition otherwise) writes each of them in turn.
    return frame.withColumn(SLOT, slot_of(slots, key)).repartition(slots, key).sortWithinPartitions(SLOT, *order)


def transactional_id(app_id: str, slot: int) -> str:
    return f"ringtail-sink-{app_id}-slot-{slot}"


@dataclass(frozen=True)
class SlotWriter:
    """A task's slots of one batch (Arrow batches of `slotted` rows), each encoded (`encode`: a batch →
    `RECORDS`) and produced to `topic` in a transaction that records the batch id in the slot's ledger; the
    records it sent (None: it had no rows). Picklable: it runs on the executors."""

    client: dict  # the librdkafka configuration (`KafkaSecurity.librdkafka`)
    app_id: str
    topic: str | None  # None: each row names its own, in its column `topic`
    ledger: str  # the topic the slots' groups commit their offsets on (partition 0)
    batch_id: int
    offsets: str  # the digest of the batch's source offsets, for a refusal's message
    encode: BatchEncoder
    transactions: bool
    timeout: float

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> int | None:
        sent = None
        for slot, runs in itertools.groupby(_runs(batches), key=lambda run: run[0]):
            sent = (sent or 0) + self._write(slot, (run for _, run in runs))
        return sent

    def _write(self, slot: int, runs: Iterator[pa.RecordBatch]) -> int:
        failures: list[str] = []

        def report(error, message) -> None:
            if error is not None:
                failures.append(f"{message.topic()}: {error.str()}")

        name = transactional_id(self.app_id, slot)
        if not self.transactions:
            producer = Producer({**_SHORT_LIVED, **self.client, **PRODUCING})
            sent = self._produce(producer, runs, report)
            left = producer.flush(self.timeout)
            if left or failures:
                raise SlotError(f"slot {slot} of batch {self.batch_id} not written {self._to}: "
                                f"{failures[0] if failures else f'{left} records unacknowledged'}")
            return sent
        producer = Producer({**_SHORT_LIVED, **self.client, **PRODUCING, "transactional.id": name})
        consumer = Consumer({**_SHORT_LIVED, **self.client, "group.id": name, "enable.auto.commit": False})
        began = False
        try:
            _init_transactions(producer, self.timeout)  # fences the slot's other producers, ends their transaction
            if self._held(consumer, slot):
                return 0
            producer.begin_transaction()
            began = True
            sent = self._produce(producer, runs, report)
            producer.send_offsets_to_transaction([TopicPartition(self.ledger, 0, self.batch_id)],
                                                 consumer.consumer_group_metadata(), self.timeout)
            producer.commit_transaction(self.timeout)
            return sent
        except BaseException as exc:
            if began:
                _abort(producer, self.timeout)
            if isinstance(exc, KafkaException):
                raise SlotError(f"slot {slot} of batch {self.batch_id} not written {self._to}: "
                                f"{failures[0] if failures else exc.args[0].str()}") from None
            raise
        finally:
            consumer.close()

    @property
    def _to(self) -> str:
        return f"to {self.topic or 'the image topics'} at {self.client['bootstrap.servers']}"

    def _held(self, consumer: Consumer, slot: int) -> bool:
        """Whether the slot's ledger holds this batch already (a newer one is refused)."""
        (held,) = consumer.committed([TopicPartition(self.ledger, 0)], timeout=self.timeout)
        if held.error is not None:
            raise SlotError(f"slot {slot}'s ledger on {self.ledger} not read: {held.error.str()}")
        if held.offset > self.batch_id:
            raise BatchMismatch(self.app_id, self.batch_id, self.offsets, None, held.offset)
        if held.offset == self.batch_id:
            log.info("slot %d of batch %d of %s is written already; skipped", slot, self.batch_id, self.app_id)
            return True
        return False  # an older batch, or none (a negative offset: the group never committed)

    def _produce(self, producer: Producer, runs: Iterator[pa.RecordBatch], report) -> int:
        sent = 0
        for run in runs:
            records = self.encode(run)
            topics = itertools.repeat(self.topic) if self.topic else run.column("topic").to_pylist()
            for topic, key, value, change_id, late in zip(topics, *(records.column(n).to_pylist()
                                                                     for n in RECORDS.names)):
                produce(producer, topic, key, value, headers=headers(change_id, late), on_delivery=report)
            sent += records.num_rows
        return sent


def _runs(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[int, pa.RecordBatch]]:
    """(slot, its rows without `SLOT`) of each run of one slot in `batches` (sorted by slot)."""
    for batch in batches:
        slots = batch.column(SLOT)
        rows = batch.drop_columns([SLOT])
        start = 0
        while start < batch.num_rows:
            slot = slots[start].as_py()
            end = start + pc.sum(pc.equal(slots.slice(start), slot)).as_py()  # sorted: its run is contiguous
            yield slot, rows.slice(start, end - start)
            start = end


def _init_transactions(producer: Producer, timeout: float) -> None:
    """`init_transactions`, asked again after short waits until `timeout`: librdkafka sometimes misses
    the coordinator's answer to a new producer (one start in ten here) and waits for its 500 ms timer; asked
    again, it goes on at once. A wait that ends is retriable: the same initialisation resumes."""
    deadline = time.monotonic() + timeout
    wait = 0.05
    while True:
        try:
            producer.init_transactions(max(min(wait, deadline - time.monotonic()), 0.001))
            return
        except KafkaException as exc:
            if not exc.args[0].retriable() or time.monotonic() >= deadline:
                raise
        wait = min(2 * wait, 1.0)


def _abort(producer: Producer, timeout: float) -> None:
    try:
        producer.abort_transaction(timeout)
    except KafkaException:
        pass  # a fenced or fatal producer: the slot's next producer ends its transaction
