"""The Kafka sink's image layout: each change as the whole rows before and after it (`schemas.avro.image`),
on a topic per table, `<topic>.<keyspace>.<table>`, keyed by primary key and compacted.

The images come from a mirror's state kept in Delta at the sink's `state_path` (`<state_path>/mirror_state/
<keyspace>/<table>`, as the Delta mirror keeps its states, without the mirror table). A micro-batch is
merged on the executors, as the Delta mirror merges (`DeltaMirrorStore.given`): each task takes its
partitions' changes in write order (write time, then change id), merges them into their states, and
encodes an image of every row each change alters (`spark.mirror.images`), with a tombstone after a row's
removal so that compaction drops it. The driver produces the images in the batch's Kafka transaction, then
writes the merged states.

That order keeps images exactly once for `read_committed` readers: a crash after the transaction and
before the states' write leaves the states as they were and the batch in the ledger, so the replay
produces nothing and merges the same changes into the same states again; a crash before the commit
aborts the transaction and the replay makes the same images. A change merged twice (a replica's late copy)
changes no row and makes no image.
"""
from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, StructField, StructType

from schemas.avro.image import ImageSchemas
from schemas.avro.registry import SchemaRegistry
from schemas.avro.wire import frame
from schemas.runtime.access import CassandraCluster
from spark import rows as R
from spark.mirror.engine import Change, StoredState, merge
from spark.mirror.images import Images, RowImage
from spark.mirror.layout import MirrorLayout
from spark.mirror.state import RECORD, Rules
from spark.mirror.tables import Layouts, prepare_tables
from spark.rows import arrow_schema

from ..delta.mirror import STATE, DeltaMirrorStore, LoadedStates, known_mirrors, split_given
from ..mirror_parts import table_changes, table_counts
from .records import RECORDS, Record, shipped

log = logging.getLogger(__name__)

# What a task gives: a state to write, or a record to produce (a null value: a tombstone).
KAFKA_RECORD = StructType([StructField("key", BinaryType(), False), StructField("value", BinaryType())])
IMAGED = StructType([StructField("state", STATE), StructField("record", KAFKA_RECORD)])
# The columns of a change a task reads, beyond its partition, key and cells.
_ORIGIN = ("write_time_us", "change_id", "cdc$operation", "source")


def image_schemas(layout: MirrorLayout) -> ImageSchemas:
    return ImageSchemas.of(layout.keyspace, layout.table, [(c.name, layout.cql(c.type)) for c in layout.key_columns],
                           [(c.name, layout.cql(c.type)) for c in layout.columns])


@dataclass(frozen=True)
class Encoding:
    """How a table's images are framed: its schemas' registry ids and parsed forms; picklable."""

    key_id: int
    key_schema: dict
    value_id: int
    value_schema: dict


@dataclass(frozen=True)
class ImageTask:
    """One task: its partitions' changes merged in write order into their states (given beside them), each
    image encoded; picklable. `name` is the `source.name` of its images."""

    layout: MirrorLayout
    now: int
    encoding: Encoding
    name: str

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        loaded, columns = split_given(batches)
        if not columns:
            return
        changes = [dict(zip(columns, values)) for values in zip(*columns.values())]
        changes.sort(key=lambda c: (c["partition"], c["write_time_us"], c["change_id"]))
        names = [c.name for c in self.layout.partition_key]
        rules, store = Rules(self.layout), LoadedStates(loaded)
        images = Images(rules, self.now)
        merge(rules, store, (Change(c["partition"], [json.loads(c["key"])[n] for n in names],
                                    json.loads(c["cells"]), c) for c in changes), self.now, observer=images)
        out = [{"state": s._asdict(), "record": None} for s in store.states]
        schemas, made = image_schemas(self.layout), int(time.time() * 1000)
        for image in images.images:
            out += [{"state": None, "record": r} for r in image_records(schemas, self.encoding, image, self.name, made)]
        yield from pa.Table.from_pylist(out, schema=arrow_schema(IMAGED)).to_batches()


def image_records(schemas: ImageSchemas, encoding: Encoding, image: RowImage, name: str, made: int) -> list[dict]:
    """The records of an image: its key and envelope, and a tombstone after a removal (for compaction)."""
    op = "c" if image.before is None else "d" if image.after is None else "u"
    if image.change is None:  # cells that expired
        source = {"name": name, "node": None, "segment_id": None, "entry_offset": None, "ts_ms": made,
                  "ts_us": made * 1000, "change_id": "", "snapshot": "false"}
    else:
        origin = image.change.origin
        if origin["cdc$operation"] == R.ROW_READ and image.after is not None:
            op = "r"
        written = origin["write_time_us"]
        source = {"name": name, "node": origin["source"]["node"], "segment_id": origin["source"]["segment_id"],
                  "entry_offset": origin["source"]["entry_offset"], "ts_ms": written // 1000, "ts_us": written,
                  "change_id": origin["change_id"], "snapshot": "true" if op == "r" else "false"}
    key = frame(encoding.key_id, encoding.key_schema, schemas.key(image.key))
    records = [{"key": key, "value": frame(encoding.value_id, encoding.value_schema,
                                          schemas.value(op, image.before, image.after, source, made))}]
    if image.after is None:
        records.append({"key": key, "value": None})
    return records


@dataclass
class TableImages:
    """One table's share of a batch: the topic of its images and the plan merging them (persisted)."""

    topic: str
    store: DeltaMirrorStore
    imaged: DataFrame

    def records(self) -> Iterator[Record]:
        """The image records, in the order made (a row's in the order of its changes)."""
        return shipped(self.imaged.where(F.col("record").isNotNull()).select("record.key", "record.value"),
                       _as_records)

    def save_states(self) -> None:
        self.store.merge_states(self.imaged.where(F.col("state").isNotNull()).select("state.*"))


def _as_records(batch: pa.RecordBatch) -> pa.RecordBatch:
    n = batch.num_rows
    return pa.RecordBatch.from_arrays([batch.column("key"), batch.column("value"), pa.nulls(n, pa.string()),
                                       pa.array([False] * n)], schema=RECORDS)


@dataclass(frozen=True)
class ImagesAt:
    """Where the image layout keeps its states, and the cluster whose tables' schemas it reads."""

    spark: SparkSession
    state_path: str
    cluster: CassandraCluster

    def writer(self, prefix: str, name: str, registry: SchemaRegistry,
               create_topic: Callable[[str], None]) -> ImageWriter:
        return ImageWriter(self.spark, self.state_path, Layouts(self.cluster), registry, prefix, name, create_topic)


class ImageWriter:
    """The image layout's part of a batch: `plan` makes each table's images on the executors, the sink
    produces them (`TableImages.records`), then writes the states (`TableImages.save_states`)."""

    def __init__(self, spark: SparkSession, state_path: str, layouts: Layouts, registry: SchemaRegistry,
                 prefix: str, name: str, create_topic: Callable[[str], None]) -> None:
        self.spark, self.state_path, self.layouts, self.registry = spark, state_path, layouts, registry
        self.prefix, self.name, self.create_topic = prefix, name, create_topic
        self._topics: set[str] = set()

    def plan(self, rows: DataFrame) -> list[TableImages]:
        counts = table_counts(rows)
        now = int(time.time())
        planned = []
        for layout, store in prepare_tables(self.layouts, counts, self._store, counts):
            topic, encoding = self._encoding(layout)
            imaged = store.given(table_changes(rows, layout, *_ORIGIN)).mapInArrow(
                ImageTask(layout, now, encoding, self.name), IMAGED)
            planned.append(TableImages(topic, store, imaged.persist()))
        return planned

    def expired(self, since: int, now: int) -> tuple[list[tuple[str, bytes, bytes | None]], list[TableStates]]:
        """What expired after `since` and by `now` (s), in every table with images: the records imaging it
        (topic, key, value), and the states to write once they are produced (their next expiry)."""
        records, saves = [], []
        for keyspace, table in known_mirrors(self.spark, self.state_path):
            layout = self.layouts.get(keyspace, table)
            if layout is None:
                continue
            store = self._store(layout)
            due = store.due_states(now)
            if not due:
                continue
            rules, topic_encoding = Rules(layout), self._encoding(layout)
            images = Images(rules, now)
            loaded = store.load_partitions({p for p, _ in due})
            first: dict[bytes, int] = {}
            for (partition, _), expires in due.items():
                first[partition] = min(expires, first.get(partition, expires))
            states = []
            for partition, expires in first.items():
                record = json.loads(loaded.get((partition, RECORD)) or "{}")
                rows = {row: json.loads(text) for (p, row), text in loaded.items() if p == partition and row != RECORD}
                if "p" in record:
                    images.expired(record, rows, max(expires - 1, since))
            for key in due:
                state = json.loads(loaded[key])
                states.append(StoredState(*key, loaded[key], rules.next_expiry([state], now)))
            topic, encoding = topic_encoding
            schemas, made = image_schemas(layout), now * 1000
            records += [(topic, r["key"], r["value"]) for image in images.images
                        for r in image_records(schemas, encoding, image, self.name, made)]
            saves.append(TableStates(store, states))
        return records, saves

    def _encoding(self, layout: MirrorLayout) -> tuple[str, Encoding]:
        """The table's topic (created on first sight) and its schemas, registered."""
        topic = f"{self.prefix}.{layout.keyspace}.{layout.table}"
        if topic not in self._topics:
            self.create_topic(topic)
            self._topics.add(topic)
        schemas = image_schemas(layout)
        key_id = self.registry.register(f"{topic}-key", schemas.key_schema, layout.qualified)
        value_id = self.registry.register(f"{topic}-value", schemas.value_schema, layout.qualified)
        return topic, Encoding(key_id, self.registry.parsed_schema(key_id), value_id,
                               self.registry.parsed_schema(value_id))

    def _store(self, layout: MirrorLayout) -> DeltaMirrorStore:
        store = DeltaMirrorStore(self.spark, self.state_path, layout)
        store.prepare(mirror=False)
        return store


@dataclass
class TableStates:
    """States an expiry's images were made from, with their next expiry: written after the images."""

    store: DeltaMirrorStore
    states: list[StoredState]

    def save(self) -> None:
        self.store.save(self.states, [])
