"""The image layout, of the sinks that send each change (Kafka, HTTP): each change as the whole rows before
and after it (Debezium's envelope: `before`, `after`, `op`, `source`, `ts_ms`), keyed by primary key. The
sink frames them (`ImageFormat`): Avro on a compacted topic per table (`kafka.images`), JSON (`http.images`).

The images come from a mirror's state kept in Delta at the sink's `state_path` (`<state_path>/mirror_state/
<keyspace>/<table>`, as the Delta mirror keeps its states, without the mirror table). A micro-batch is
merged on the executors, as the Delta mirror merges (`DeltaMirrorStore.given`): each task takes its
partitions' changes in write order (write time, then change id), merges them into their states, and
encodes an image of every row each change alters (`spark.mirror.images`; made in the native core with the
merge where it merges the partition). The sink sends the images, then writes the merged states
(`TableImages.save_states`).

A batch is merged as of the time Spark planned it (never before the sink's last purge), and its images
are dated by it (`ts_ms`): a replay makes the same images, byte for byte. So a crash after the images were
sent and before the states' write sends the same images again (the Kafka sink skips them by its ledger,
the HTTP sink posts them under the keys they had), and a crash after the states' write merges the same
changes into the states again, which changes no row and makes no image: a change merged twice (a
replica's late copy too) makes none.

Between batches, a purge images the rows whose cells expired (`ImageWriter.expired`), then writes their
states; the sink records each purge's time so that one repeated after a crash makes the same images. A
batch that changes a partition whose cells ran out since images them first, as the purge would have, and
rewrites those states: each change's image begins where its row's last one ended.
"""
from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, StructField, StructType

from schemas.avro.image import ImageSchemas
from schemas.runtime.access import CassandraCluster
from spark import rows as R
from spark.mirror.engine import StateKey, StoredState, merge_raw
from spark.mirror.images import Images, RowImage
from spark.mirror.layout import MirrorLayout
from spark.mirror.state import RECORD, Rules
from spark.mirror.tables import Layouts, prepare_tables
from spark.rows import arrow_schema

from .delta.mirror import STATE, DeltaMirrorStore, beside, known_mirrors, split_given, state_arrays
from .mirror_parts import table_changes, table_counts

# What a task gives: a state to write, or an image's record to send (key, value; a null value: a tombstone).
IMAGE_RECORD = StructType([StructField("key", BinaryType(), False), StructField("value", BinaryType())])
IMAGED = StructType([StructField("state", STATE), StructField("record", IMAGE_RECORD)])
# The columns of a change a task reads, beyond its partition, key and cells.
_ORIGIN = ("write_time_us", "change_id", "cdc$operation", "source")

Encoded = list[tuple[bytes, bytes | None]]


class ImageEncoder(Protocol):
    """A table's images as a sink sends them; picklable (it runs on the executors)."""

    def __call__(self, schemas: ImageSchemas, image: RowImage, envelope: Envelope) -> Encoded:
        """(key, value) records of one image, in the order sent."""


class ImageFormat(Protocol):
    """How a sink frames images, asked on the driver once per table and batch."""

    def table(self, layout: MirrorLayout) -> tuple[str, ImageEncoder]:
        """Where the table's images go (a topic; for HTTP the table's name) and their encoder."""


def image_schemas(layout: MirrorLayout) -> ImageSchemas:
    return ImageSchemas.of(layout.keyspace, layout.table, [(c.name, layout.cql(c.type)) for c in layout.key_columns],
                           [(c.name, layout.cql(c.type)) for c in layout.columns])


@dataclass(frozen=True)
class Envelope:
    """What an image says beyond its rows: its op, the per-change fields of its `source`, when it was made."""

    op: str
    source: dict
    made: int  # ms since the epoch

    @classmethod
    def of(cls, image: RowImage, name: str, made: int) -> Envelope:
        """`name`: the subscription or job making it; an expiry's image is dated by when it was made."""
        op = "c" if image.before is None else "d" if image.after is None else "u"
        origin = image.origin
        if origin is None:  # cells that expired
            return cls(op, {"name": name, "node": None, "segment_id": None, "entry_offset": None, "ts_ms": made,
                            "ts_us": made * 1000, "change_id": "", "snapshot": "false"}, made)
        if origin["cdc$operation"] == R.ROW_READ and image.after is not None:
            op = "r"
        written = origin["write_time_us"]
        return cls(op, {"name": name, "node": origin["source"]["node"], "segment_id": origin["source"]["segment_id"],
                        "entry_offset": origin["source"]["entry_offset"], "ts_ms": written // 1000,
                        "ts_us": written, "change_id": origin["change_id"],
                        "snapshot": "true" if op == "r" else "false"}, made)


@dataclass(frozen=True)
class ImageTask:
    """One task: its partitions' changes merged in write order into their states (given beside them) as of
    `now` (s), each image encoded; picklable. `name` is the `source.name` of its images."""

    layout: MirrorLayout
    now: int
    made: int
    encode: ImageEncoder
    name: str

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        store, columns = split_given(batches, ("partition", "write_time_us", "change_id"))
        if not columns:
            return
        origins = [dict(zip(_ORIGIN, values)) for values in zip(*(columns[name] for name in _ORIGIN))]
        rules = Rules(self.layout)
        images = Images(rules, self.now)
        # Cells that ran out since the purge are imaged first, as the purge would have: each change's image
        # then begins where its row's last one ended. The merge rewrites those states (`purge`), so the
        # purge does not image them again.
        image_expiries(images, store.loaded, store.due_states(self.now), 0)
        merge_raw(rules, store, list(zip(columns["partition"], columns["key"], columns["cells"], origins)), self.now,
                  purge=True, observer=images)
        schema = arrow_schema(IMAGED)
        if store.states:
            yield beside(schema, "state", state_arrays(store.states))
        records = encoded(self.encode, self.layout, images, self.name, self.made)
        if records:
            keys, values = zip(*records)
            yield beside(schema, "record", [pa.array(keys, pa.binary()), pa.array(values, pa.binary())])


def encoded(encode: ImageEncoder, layout: MirrorLayout, images: Images, name: str, made: int) -> Encoded:
    """The records of `images`, in the order made, framed by `encode`; `name` and `made` as `Envelope.of`."""
    schemas = image_schemas(layout)
    return [record for image in images.images for record in encode(schemas, image, Envelope.of(image, name, made))]


def image_expiries(images: Images, states: Mapping[StateKey, str], due: Mapping[StateKey, int], since: int) -> None:
    """Image every partition with a state in `due` (key → when the first of its cells expired; `states`: the
    whole partition's) as it was just before that first expiry, never before `since`, and as it is now."""
    first: dict[bytes, int] = {}
    for (partition, _), expires in due.items():
        first[partition] = min(expires, first.get(partition, expires))
    for partition, expires in sorted(first.items()):
        record = json.loads(states.get((partition, RECORD)) or "{}")
        rows = {row: json.loads(text) for (p, row), text in states.items() if p == partition and row != RECORD}
        if "p" in record:
            images.expired(record, rows, max(expires - 1, since))


@dataclass
class TableImages:
    """One table's share of a batch: where its images go and the plan merging them (persisted)."""

    target: str
    store: DeltaMirrorStore
    imaged: DataFrame

    def records(self) -> DataFrame:
        """The image records (`key`, `value`), a task's in the order made (a row's in the order of its changes)."""
        return self.imaged.where(F.col("record").isNotNull()).select("record.key", "record.value")

    def save_states(self) -> None:
        self.store.merge_states(self.imaged.where(F.col("state").isNotNull()).select("state.*"))


@dataclass(frozen=True)
class ImagesAt:
    """Where the image layout keeps its states, and the cluster whose tables' schemas it reads."""

    spark: SparkSession
    state_path: str
    cluster: CassandraCluster

    def writer(self, name: str, format: ImageFormat) -> ImageWriter:
        return ImageWriter(self.spark, self.state_path, Layouts(self.cluster), name, format)


class ImageWriter:
    """The image layout's part of a batch: `plan` makes each table's images on the executors, the sink
    sends them (`TableImages.records`), then writes the states (`TableImages.save_states`)."""

    def __init__(self, spark: SparkSession, state_path: str, layouts: Layouts, name: str,
                 format: ImageFormat) -> None:
        self.spark, self.state_path, self.layouts, self.name, self.format = spark, state_path, layouts, name, format

    def plan(self, rows: DataFrame, planned_ms: int, purged: int) -> list[TableImages]:
        """The images of a batch Spark planned at `planned_ms`: merged as of then, never before the sink's last
        purge (`purged`, s), and dated then."""
        now, made = max(planned_ms // 1000, purged), planned_ms
        counts = table_counts(rows)
        planned = []
        for layout, store in prepare_tables(self.layouts, counts, self._store, counts):
            target, encode = self.format.table(layout)
            imaged = store.given(table_changes(rows, layout, *_ORIGIN)).mapInArrow(
                ImageTask(layout, now, made, encode, self.name), IMAGED)
            planned.append(TableImages(target, store, imaged.persist()))
        return planned

    def expired(self, since: int, now: int) -> tuple[list[tuple[str, bytes, bytes | None]], list[TableStates]]:
        """What expired after `since` and by `now` (s), in every table with images: the records imaging it
        (target, key, value; a table's together, in an order a repeat keeps), and the states to write once
        they are sent (their next expiry)."""
        records, saves = [], []
        for keyspace, table in known_mirrors(self.spark, self.state_path):
            layout = self.layouts.get(keyspace, table)
            if layout is None:
                continue
            store = self._store(layout)
            due = store.due_states(now)
            if not due:
                continue
            rules = Rules(layout)
            images = Images(rules, now)
            loaded = store.load_partitions({p for p, _ in due})
            image_expiries(images, loaded, due, since)
            states = []
            for key in due:
                state = json.loads(loaded[key])
                states.append(StoredState(*key, loaded[key], rules.next_expiry([state], now)))
            target, encode = self.format.table(layout)
            records += [(target, key, value) for key, value in encoded(encode, layout, images, self.name, now * 1000)]
            saves.append(TableStates(store, states))
        return records, saves

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

