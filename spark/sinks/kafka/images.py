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
from spark.mirror.engine import Change, merge
from spark.mirror.images import Images, RowImage
from spark.mirror.layout import MirrorLayout
from spark.mirror.state import Rules
from spark.mirror.tables import Layouts, prepare_tables
from spark.rows import arrow_schema

from ..delta.mirror import STATE, DeltaMirrorStore, LoadedStates
from ..mirror_parts import mirror_changes, table_counts

log = logging.getLogger(__name__)

# What a task gives: a state to write, or a record to produce (a null value: a tombstone).
RECORD = StructType([StructField("key", BinaryType(), False), StructField("value", BinaryType())])
IMAGED = StructType([StructField("state", STATE), StructField("record", RECORD)])
# The columns of a change a task reads, beyond its partition, key and cells.
_ORIGIN = ("write_time_us", "change_id", "cdc$operation", "source")


def image_schemas(layout: MirrorLayout) -> ImageSchemas:
    return ImageSchemas.of(layout.keyspace, layout.table, [(c.name, layout.cql(c.type)) for c in layout.key_columns],
                           [(c.name, layout.cql(c.type)) for c in layout.columns])


def image_changes(changes: DataFrame) -> DataFrame:
    """A table's changes as `ImageTask` reads them."""
    return changes.select("partition_key", "key", "cells", *(F.col(f"`{c}`") for c in _ORIGIN)) \
        .withColumnRenamed("partition_key", "partition")


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
        loaded, changes = {}, []
        for batch in batches:
            for row in batch.to_pylist():
                if row["cells"] is None:
                    loaded[(row["partition"], row["row"])] = row["state"]
                else:
                    changes.append(row)
        if not changes:
            return
        changes.sort(key=lambda c: (c["partition"], c["write_time_us"], c["change_id"]))
        names = [c.name for c in self.layout.partition_key]
        rules, store = Rules(self.layout), LoadedStates(loaded)
        images = Images(rules, self.now)
        merge(rules, store, (Change(c["partition"], [json.loads(c["key"])[n] for n in names], json.loads(c["cells"]), c)
                             for c in changes), self.now, observer=images)
        out = [{"state": s._asdict(), "record": None} for s in store.states]
        schemas, made = image_schemas(self.layout), int(time.time() * 1000)
        for image in images.images:
            out += [{"state": None, "record": record} for record in self._records(schemas, image, made)]
        yield from pa.Table.from_pylist(out, schema=arrow_schema(IMAGED)).to_batches()

    def _records(self, schemas: ImageSchemas, image: RowImage, made: int) -> list[dict]:
        origin = image.change.origin
        source = origin["source"]
        op = ("r" if origin["cdc$operation"] == R.ROW_READ and image.after is not None
              else "c" if image.before is None else "d" if image.after is None else "u")
        written = origin["write_time_us"]
        value = schemas.value(op, image.before, image.after, {
            "name": self.name, "node": source["node"], "segment_id": source["segment_id"],
            "entry_offset": source["entry_offset"], "ts_ms": written // 1000, "ts_us": written,
            "change_id": origin["change_id"], "snapshot": "true" if op == "r" else "false"}, made)
        encoding = self.encoding
        key = frame(encoding.key_id, encoding.key_schema, schemas.key(image.key))
        records = [{"key": key, "value": frame(encoding.value_id, encoding.value_schema, value)}]
        if image.after is None:
            records.append({"key": key, "value": None})  # the row's tombstone, for compaction
        return records


@dataclass
class TableImages:
    """One table's share of a batch: the topic of its images and the plan merging them (persisted)."""

    topic: str
    store: DeltaMirrorStore
    imaged: DataFrame

    def records(self) -> Iterator[tuple[bytes, bytes | None]]:
        """(key, value) of each image record, in the order made (a row's in the order of its changes)."""
        table = self.imaged.where(F.col("record").isNotNull()).select("record.key", "record.value").toArrow()
        return zip(table.column("key").to_pylist(), table.column("value").to_pylist())

    def save_states(self) -> None:
        self.store.merge_states(self.imaged.where(F.col("state").isNotNull()).select("state.*"))


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

    def topic(self, layout: MirrorLayout) -> str:
        return f"{self.prefix}.{layout.keyspace}.{layout.table}"

    def plan(self, rows: DataFrame) -> list[TableImages]:
        counts = table_counts(rows)
        changes = mirror_changes(rows)
        now = int(time.time())
        planned = []
        for layout, store in prepare_tables(self.layouts, counts, self._store, counts):
            topic = self.topic(layout)
            if topic not in self._topics:
                self.create_topic(topic)
                self._topics.add(topic)
            schemas = image_schemas(layout)
            key_id = self.registry.register(f"{topic}-key", schemas.key_schema, layout.qualified)
            value_id = self.registry.register(f"{topic}-value", schemas.value_schema, layout.qualified)
            encoding = Encoding(key_id, self.registry.parsed_schema(key_id), value_id,
                                self.registry.parsed_schema(value_id))
            mine = changes.where((F.col("keyspace") == layout.keyspace) & (F.col("table") == layout.table))
            imaged = store.given(image_changes(mine)).mapInArrow(ImageTask(layout, now, encoding, self.name), IMAGED)
            planned.append(TableImages(topic, store, imaged.persist()))
        return planned

    def _store(self, layout: MirrorLayout) -> DeltaMirrorStore:
        store = DeltaMirrorStore(self.spark, self.state_path, layout)
        store.prepare(mirror=False)
        return store
