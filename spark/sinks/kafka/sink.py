"""Kafka: log rows as JSON or Avro records on a topic of their own, exactly once for `read_committed` readers.

Each record is keyed by the change's serialized partition key (a partition's changes stay in order on
one Kafka partition), valued by the log row as JSON (`format=json`, the default) or as Avro in
Confluent's wire format with its schema in the registry (`format=avro`, subject `<topic>-value`; see
`avro_rows`), with the change id in the `ringtail-change-id` header. A row the job read late (more than
`dedup_watermark` after its write) also has the header `ringtail-late: true`: a replica's copy of the
change may be in the topic already, and a reader drops it when it holds that change id. Dead letters go
to `<topic>.dead-letters`, in the same format.

The ledger topic `<topic>.ringtail` (compacted, keyed by the writer: the newest stays) holds the writer's
newest batch: its id, the digest of its source offsets, its slot count and whether it is finished. A
micro-batch goes in in three steps, as the SQL sinks' do (`sinks.parts`):

1. the driver claims the batch in the ledger, in a transaction: a replay of a finished batch is skipped,
   an older batch or other offsets are refused (`ledger`);
2. the executors produce its log rows, cut into slots by partition key, a transaction per slot that
   records the batch in the slot's ledger (`slots`); a replay writes the slots not committed yet;
3. the driver writes the dead letters and marks the batch finished, in one transaction.

The driver's transactional id (one per writer, as each slot's is) fences a second writer of the same
subscription, such as a runner that lost its lease without knowing it. In the image layout, the records
of step 2 are the images the executors made from a mirror's state, cut into slots by their key; the
states are written once the batch is finished (`images`).

For a cluster without transactions (`transactions=false`) the producers are idempotent instead and the
batch is marked finished once every record of it is acknowledged: at least once, since a crash between
the two repeats the batch, with the same change ids in the headers for a reader to drop the repeats by.
"""
from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import partial, reduce
from typing import get_args

import pyarrow as pa

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from schemas.avro.wire import frame
from schemas.runtime.access import KafkaSecurity, RegistrySecurity
from schemas.runtime.kafka import create_topic, produce
from spark import rows as R
from spark.streams.generations import Generations

from ..contract import MicroBatch, Resolved, Sink, resolved_rows
from ..json_rows import NotJsonError, dead_letter_json, generations_json, log_row_texts, resolved_json
from ..layouts import KafkaFormat
from .avro_rows import avro_datum, log_row_avro
from ..images import ImagesAt, ImageWriter, TableImages
from .images import AvroImages
from .records import RECORDS, Record, headers, shipped
from .slots import PRODUCING, SLOT, SlotWriter, slotted
from ..ledger import is_newest_replay
from ..parts import held_to_write, write_each_part

Encode = Callable[[Row], bytes]

log = logging.getLogger(__name__)
_ORDER = ("write_time_us", "change_id", "cdc$batch_seq_no", "keyspace", "table")


class KafkaSinkError(RuntimeError):
    """The target cluster did not take a batch."""


@dataclass(frozen=True)
class Held:
    """The newest batch the ledger holds for a writer: its source offsets (None in a record written before
    the ledger kept them), whether it is finished, and how many slots its rows were cut into (None before
    slots)."""

    batch: int
    offsets: str | None
    done: bool = True
    slots: int | None = None

    @classmethod
    def parse(cls, value: bytes) -> Held:
        held = json.loads(value)
        if isinstance(held, int):  # a bare batch id
            return cls(held, None)
        return cls(held["batch"], held["offsets"], held.get("done", True), held.get("slots"))

    def json(self) -> bytes:
        return _json({"batch": self.batch, "offsets": self.offsets, "done": self.done, "slots": self.slots})


class KafkaSink(Sink):
    def __init__(self, bootstrap_servers: str, topic: str, *, app_id: str = "ringtail", partitions: int = 3,
                 replication_factor: int = 1, timeout: float = 60.0, format: str = "json",
                 registry_url: str | None = None, transactions: bool = True,
                 security: KafkaSecurity = KafkaSecurity(), registry_security: RegistrySecurity = RegistrySecurity(),
                 images: ImagesAt | None = None) -> None:
        if format not in get_args(KafkaFormat):
            raise ValueError(f"format {format!r}: one of {', '.join(get_args(KafkaFormat))}")
        if format == "avro" and not registry_url:
            raise ValueError("format avro needs the schema registry's URL")
        if images is not None and format != "avro":
            raise ValueError("images are Avro: the image layout takes format avro")
        self.images_at = images
        self.merges_cells = images is not None  # images are made from a mirror's state
        self._images: ImageWriter | None = None
        self.bootstrap_servers, self.topic, self.app_id = bootstrap_servers, topic, app_id
        self.security, self.registry_security = security, registry_security
        self.partitions, self.replication_factor, self.timeout = partitions, replication_factor, timeout
        self.format, self.registry_url, self.transactions = format, registry_url, transactions
        self._failures: list[str] = []  # delivery reports refused in the running batch
        self.ledger, self.dead_letters = f"{topic}.ringtail", f"{topic}.dead-letters"
        self.resolved = f"{topic}.resolved"  # each table's resolved timestamp, keyed by writer and table
        self._producer: Producer | None = None
        self._held: Held | None = None  # the newest batch the ledger holds for this writer
        self._purged = 0  # when (s) the images of expired rows were last made
        self._resolved: dict[bytes, int] | None = None  # marker key → the newest resolved timestamp published
        self._avro_rows: tuple[int, dict] | None = None  # a log row's schema id and record; None: JSON
        self._encode_dead_letter: Encode | None = None

    def prepare(self) -> None:
        admin = AdminClient(self._client())
        never = threading.Event()
        for topic in (NewTopic(self.topic, self.partitions, self.replication_factor),
                      NewTopic(self.dead_letters, 1, self.replication_factor),
                      NewTopic(self.ledger, 1, self.replication_factor, config={"cleanup.policy": "compact"}),
                      NewTopic(self.resolved, 1, self.replication_factor, config={"cleanup.policy": "compact"})):
            create_topic(admin, topic, never, self.timeout)
        config = {**self._client(), **PRODUCING}
        if self.transactions:
            config["transactional.id"] = f"ringtail-sink-{self.app_id}"
        self._producer = Producer(config)
        if self.transactions:
            self._producer.init_transactions(self.timeout)  # also fences an older writer of this id
        self._held, self._purged = self._read_ledger()
        self._avro_rows, self._encode_dead_letter = self._encoders()
        if self.images_at is not None:
            self._images = self.images_at.writer(self.app_id, AvroImages(self.topic, self._registry(),
                                                                          self._create_compacted))

    def _create_compacted(self, topic: str) -> None:
        create_topic(AdminClient(self._client()), NewTopic(topic, self.partitions, self.replication_factor,
                                                           config={"cleanup.policy": "compact"}),
                     threading.Event(), self.timeout)

    def _registry(self):
        from confluent_kafka.schema_registry import SchemaRegistryClient

        from schemas.avro.registry import SchemaRegistry

        return SchemaRegistry(SchemaRegistryClient(self.registry_security.client(self.registry_url)))

    def _client(self) -> dict:
        return self.security.librdkafka(self.bootstrap_servers)

    def _encoders(self) -> tuple[tuple[int, dict] | None, Encode]:
        """(a log row's Avro schema id and record, None for JSON; dead letter → value, self-contained: it runs
        on the executors) in the sink's format; a log row's value is made on the executors (`write_parts`).
        Avro's schemas are registered here, so a registry that refuses them stops the sink before any batch."""
        if self.format == "json":
            return None, _json_dead_letter
        from .avro_rows import record_schema

        registry = self._registry()
        record = record_schema(R.LOG_ROW, "LogRow")
        row_id = registry.register(f"{self.topic}-value", record, self.topic)
        dead_id = registry.register(f"{self.dead_letters}-value", record_schema(R.DEAD_LETTER, "DeadLetter"),
                                    self.dead_letters)
        return (row_id, record), partial(_avro, dead_id, registry.parsed_schema(dead_id))

    def _read_ledger(self) -> tuple[Held | None, int]:
        """The newest batch the ledger holds for this writer, and the time (s) of its last purge of images."""
        held, purged = None, 0
        for key, value in self._read_to_end(self.ledger):
            if key == f"batch:{self.app_id}".encode():
                held = Held.parse(value)
            elif key == f"purge:{self.app_id}".encode():
                purged = json.loads(value)["purged"]
        return held, purged

    def _read_to_end(self, topic: str) -> Iterator[tuple[bytes | None, bytes | None]]:
        """(key, value) of every committed record of `topic` (one partition), to its end."""
        consumer = Consumer({**self._client(), "group.id": f"ringtail-{uuid.uuid4()}",
                             "isolation.level": "read_committed", "enable.auto.commit": False,
                             "enable.partition.eof": True})
        try:
            consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
            deadline = time.monotonic() + self.timeout
            while time.monotonic() < deadline:
                message = consumer.poll(1.0)
                if message is None:
                    continue
                if message.error():
                    if message.error().code() == KafkaError._PARTITION_EOF:
                        return
                    raise KafkaSinkError(f"reading {topic}: {message.error().str()}")
                yield message.key(), message.value()
            raise KafkaSinkError(f"reading {topic}: not at its end within {self.timeout:.0f} s")
        finally:
            consumer.close()

    def write(self, batch: MicroBatch) -> None:
        planned = [] if self._images is None else self._images.plan(batch.rows, batch.planned_ms, self._purged)
        try:
            if self.claim(batch):
                self.write_parts(batch, planned)
                self.finish(batch)
            for table in planned:  # after the images' commit (`images`)
                table.save_states()
        finally:
            for table in planned:
                table.imaged.unpersist()

    def claim(self, batch: MicroBatch) -> bool:
        """Step 1: whether the batch is to be written (False: a replay of a finished one). A new batch is
        claimed in the ledger first, with its offsets and slot count, so its replay cuts it the same way."""
        held = self._held
        if held is not None and is_newest_replay(self.app_id, batch.id, batch.offsets, held.batch, held.offsets):
            return held_to_write(self.app_id, batch.id, batch.offsets, held.offsets, held.done)
        claimed = Held(batch.id, batch.offsets, done=False, slots=_slots(batch))
        self._in_transaction(f"batch {batch.id} not claimed in {self.ledger}", lambda: self._record(claimed))
        self._held = claimed
        return True

    def write_parts(self, batch: MicroBatch, planned: Sequence[TableImages] = ()) -> None:
        """Step 2: the batch's log rows (in the image layout, the images `planned`), from the executors, a
        transaction per slot (`slots`)."""
        slots = self._held.slots or _slots(batch)
        if self._images is not None:
            if not planned:
                return
            # Each table's records are in the order made; a row's images are made in one task, so its
            # place there (`seq`) keeps them in order.
            made = reduce(DataFrame.unionByName, (table.records().withColumn("topic", F.lit(table.target))
                                                  for table in planned))
            rows = slotted(made.withColumn("seq", F.monotonically_increasing_id()), slots, ("seq",), key="key")
            rows, topic, encode, what = rows.drop("seq"), None, _image_records, "image records"
        else:
            rows = slotted(batch.rows, slots, (f"`{c}`" for c in _ORDER))
            if self._avro_rows is None:  # JSON, made on the executors from the rows themselves (`_json_chunk`)
                encode = _json_chunk
            else:
                rows = rows.select("partition_key", log_row_avro(*self._avro_rows).alias("value"), "change_id",
                                   R.LATE, SLOT)
                encode = _avro_chunk
            topic, what = self.topic, "log rows"
        sent = write_each_part(rows, SlotWriter(self._client(), self.app_id, topic, self.ledger, batch.id,
                                                batch.offsets, encode, self.transactions, self.timeout))
        log.info("batch %d: %d %s committed to %s from the executors", batch.id, sent, what, self.topic)

    def finish(self, batch: MicroBatch) -> None:
        """Step 3: the dead letters, and the batch marked finished, in one transaction."""
        finished = replace(self._held, done=True)

        def queue() -> None:
            dead = self._dead_letters(batch)
            if not self.transactions:
                self._acknowledged()  # the batch's records, before the ledger says it is finished
            self._record(finished)
            log.info("batch %d: %d dead letters committed to %s", batch.id, dead, self.dead_letters)

        self._in_transaction(f"batch {batch.id} not finished in {self.topic}", queue)
        self._held = finished

    def _dead_letters(self, batch: MicroBatch) -> int:
        if not batch.has_dead_letters():
            return 0
        return self._produce(self.dead_letters, _dead_letter_records(
            batch.dead_letters.orderBy("topic", "partition", "offset"), self._encode_dead_letter))

    def _record(self, held: Held) -> None:
        self._producer.produce(self.ledger, key=f"batch:{self.app_id}".encode(), value=held.json(),
                               on_delivery=self._report)

    def _in_transaction(self, failure: str, queue: Callable[[], None]) -> None:
        """What `queue` produces, in one transaction (without transactions: acknowledged); `failure` says
        what was not done when it fails."""
        self._begin()
        try:
            queue()
            self._commit()
        except Exception as exc:
            self._abort()
            raise KafkaSinkError(f"{failure}: {exc}") from exc

    def _produce(self, topic: str, records: Iterable[Record]) -> int:
        count = 0
        for key, value, change_id, late in records:
            produce(self._producer, topic, key, value, headers=headers(change_id, late), on_delivery=self._report)
            count += 1
        return count

    def _begin(self) -> None:
        self._failures = []
        if self.transactions:
            self._producer.begin_transaction()

    def _abort(self) -> None:
        if self.transactions:
            try:
                self._producer.abort_transaction(self.timeout)
            except KafkaException:
                pass  # a fenced or fatal producer: the next prepare starts over

    def _report(self, error, message) -> None:
        if error is not None:
            self._failures.append(f"{message.topic()}: {error.str()}")

    def _acknowledged(self) -> None:
        """Wait until every record queued is acknowledged; raise when one was refused."""
        left = self._producer.flush(self.timeout)
        if left or self._failures:
            raise KafkaSinkError(self._failures[0] if self._failures else
                                 f"{left} records unacknowledged after {self.timeout:.0f} s")

    def _commit(self) -> None:
        if self.transactions:
            self._producer.commit_transaction(self.timeout)
        else:
            self._acknowledged()

    def purge(self) -> None:
        """Image the rows whose cells expired since the last purge (`images.ImageWriter.expired`), in a
        transaction that records the purge's time in the ledger; then write their states. A purge repeated
        after a crash before the states were written images them from that time on: nothing twice."""
        if self._images is None:
            return
        now = int(time.time())
        records, saves = self._images.expired(self._purged, now)
        if records:
            def queue() -> None:
                for topic, key, value in records:
                    produce(self._producer, topic, key, value, on_delivery=self._report)
                self._producer.produce(self.ledger, key=f"purge:{self.app_id}".encode(),
                                       value=_json({"purged": now}), on_delivery=self._report)

            self._in_transaction(f"expired rows' images not written to {self.topic}", queue)
            log.info("%d image records of expired rows committed to %s", len(records), self.topic)
        self._purged = now
        for table in saves:
            table.save()

    def close(self) -> None:
        # The client closes when freed; a transaction left open by a batch cut short is aborted
        # by the next writer of this transactional id.
        self._producer = None
        if self._images is not None:
            self._images.layouts.close()

    def publish_resolved(self, resolved: list[Resolved]) -> None:
        """A marker record per table in `<topic>.resolved` (compacted: the newest stays), in a transaction of
        its own: a `read_committed` reader that has read the sink's topic up to its end when it reads a
        marker has every change it covers."""
        if self._resolved is None:  # what this writer published before: a marker never moves back
            self._resolved = {key: json.loads(value)["resolved_us"] for key, value in self._read_to_end(self.resolved)
                              if value is not None}
        markers = {f"{self.app_id}:{m['keyspace']}.{m['table']}".encode(): m
                   for m in resolved_json(resolved_rows(self.app_id, resolved))}
        newer = {key: m for key, m in markers.items() if m["resolved_us"] > self._resolved.get(key, -1)}
        if not newer:
            return
        def queue() -> None:
            for key, marker in newer.items():
                self._producer.produce(self.resolved, key=key, value=json.dumps(marker).encode(),
                                       on_delivery=self._report)

        self._in_transaction(f"resolved timestamps not written to {self.resolved}", queue)
        self._resolved.update({key: m["resolved_us"] for key, m in newer.items()})

    def publish_generations(self, generations: Generations) -> None:
        """The generations, as JSON, under the key `generations` of the ledger topic (compacted: the
        newest stays)."""
        self._in_transaction(f"generations not written to {self.ledger}", lambda: self._producer.produce(
            self.ledger, key=b"generations", on_delivery=self._report,
            value=json.dumps(generations_json(generations)).encode()))


def _dead_letter_records(frame: DataFrame, encode: Encode) -> Iterator[Record]:
    """(no key, value, change id, not late) of each dead letter of `frame`, in its order: encoded on the
    executors, so the driver only hands finished records to the producer."""
    return shipped(frame, DeadLetterEncoder(frame.schema, encode))


def _slots(batch: MicroBatch) -> int:
    """How many slots a new batch's rows are cut into: as many as Spark runs tasks at once, so every core
    produces a share, whatever the topic's partitions."""
    return batch.rows.sparkSession.sparkContext.defaultParallelism


def _json_chunk(batch: pa.RecordBatch) -> pa.RecordBatch:
    try:
        texts = log_row_texts(batch.drop_columns([R.LATE]))  # whether it was read late: a header says
    except NotJsonError as exc:
        raise KafkaSinkError(str(exc)) from None
    return _log_records(batch, texts.cast(pa.binary()))


def _avro_chunk(batch: pa.RecordBatch) -> pa.RecordBatch:
    return _log_records(batch, batch.column("value"))


def _log_records(batch: pa.RecordBatch, values: pa.Array) -> pa.RecordBatch:
    """`RECORDS` of a batch of `write_parts`' log rows, valued `values`."""
    return pa.RecordBatch.from_arrays([batch.column("partition_key"), values, batch.column("change_id"),
                                       batch.column(R.LATE)], schema=RECORDS)


@dataclass(frozen=True)
class DeadLetterEncoder:
    """A batch of dead letters of `schema` → `RECORDS`, each value made by `encode` of its `Row`; picklable."""

    schema: StructType
    encode: Encode

    def __call__(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        from pyspark.sql.conversion import ArrowTableToRowsConversion  # the Rows an RDD would give

        rows = ArrowTableToRowsConversion.convert(pa.Table.from_batches([batch]), self.schema)
        columns = ([None] * len(rows), [self.encode(r) for r in rows], [r.change_id for r in rows],
                   [False] * len(rows))
        return pa.RecordBatch.from_arrays([pa.array(c, f.type) for c, f in zip(columns, RECORDS)], schema=RECORDS)


def _image_records(batch: pa.RecordBatch) -> pa.RecordBatch:
    n = batch.num_rows
    return pa.RecordBatch.from_arrays([batch.column("key"), batch.column("value"), pa.nulls(n, pa.string()),
                                       pa.array([False] * n)], schema=RECORDS)


def _json_dead_letter(row: Row) -> bytes:
    return _json(dead_letter_json(row))


def _avro(schema_id: int, parsed: dict, row: Row) -> bytes:
    return frame(schema_id, parsed, avro_datum(row))


def _json(value: dict) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()
