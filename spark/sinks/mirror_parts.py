"""A mirror's micro-batch merged on the executors, a part per task: the driver plans (which tables, their
layouts, their stores' tables made ready), the tasks read, merge and write (`engine.merge`).

Each change goes to a bucket, a hash of (keyspace, table, partition key) into `BUCKETS`, and each
bucket to one task. So every state a task reads and writes is its own within the batch: a Cassandra
partition's changes, states and mirror rows are all in one task, and the tasks of a batch never wait on
each other. Another writer of the same mirror (a runner that lost its claim without knowing it) is kept
apart by the store's lock on each (table, bucket), which a task takes before it reads, tables and
buckets in ascending order, so that two writers never wait on each other in a circle.

A part is named by the digest of its changes in sorted order: a retried task whose shuffle input came
in another order has the same name, and the ledger of parts (`spark.sinks.parts`) skips it once an
attempt has committed it. A part merged twice would change nothing anyway (a merge is idempotent); the
name keeps the ledger's counts exact.
"""
from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark.mirror.engine import MirrorStore, RawChange
from spark.mirror.layout import MirrorLayout
from spark.mirror.tables import merge_batch

from .contract import of_tables
from .parts import part_digest, write_each_part

log = logging.getLogger(__name__)

# Enough buckets to spread a table over any executor count a mirror store can take writes from at once.
BUCKETS = 64

Name = tuple[str, str]  # (keyspace, table)


def mirror_changes(rows: DataFrame) -> DataFrame:
    """The batch's changes a mirror merges: a range deletion's second row (its end bound) carries no
    cells, the first has both bounds."""
    return rows.where(F.col("cells").isNotNull())


def table_changes(rows: DataFrame, layout: MirrorLayout, *columns: str) -> DataFrame:
    """One table's changes of a batch as a merging task takes them: `partition` (its serialized partition key),
    `key`, `cells`, and `columns`."""
    of_table = of_tables(mirror_changes(rows), [(layout.keyspace, layout.table)])
    return of_table.select(F.col("partition_key").alias("partition"), "key", "cells",
                           *(F.col(f"`{c}`") for c in columns))


def table_counts(rows: DataFrame) -> dict[Name, int]:
    """How many changes of each table the batch holds (read on the driver: a few rows)."""
    counted = mirror_changes(rows).groupBy("keyspace", "table").count().collect()
    return {(r["keyspace"], r["table"]): r["count"] for r in counted}


def bucketed(rows: DataFrame) -> DataFrame:
    """The batch's changes with their bucket, each bucket in one of as many partitions as the cluster
    runs tasks at once: ranges of buckets, cut where Spark's sample of the changes balances them (hashing
    64 values into few partitions leaves them a fifth apart)."""
    bucket = F.pmod(F.xxhash64("keyspace", "table", "partition_key"), F.lit(BUCKETS)).cast("int")
    tasks = rows.sparkSession.sparkContext.defaultParallelism
    return (mirror_changes(rows).select("keyspace", "table", "partition_key", "key", "cells", bucket.alias("bucket"))
            .repartitionByRange(tasks, "bucket"))


@dataclass(frozen=True)
class MirrorPart:
    """One task's changes, per table in sorted order, with the buckets they are in."""

    name: str
    changes: dict[Name, list[RawChange]]
    buckets: dict[Name, list[int]]

    @classmethod
    def of(cls, batches: Iterator[pa.RecordBatch]) -> MirrorPart | None:
        """The part of `bucketed`'s Arrow batches of one partition; None when it holds no change."""
        changes: dict[Name, list[RawChange]] = defaultdict(list)
        buckets: dict[Name, set[int]] = defaultdict(set)
        for batch in batches:
            columns = batch.to_pydict()
            for keyspace, table, partition, key, cells, bucket in zip(
                    columns["keyspace"], columns["table"], columns["partition_key"], columns["key"], columns["cells"],
                    columns["bucket"]):
                changes[(keyspace, table)].append((partition, key, cells))
                buckets[(keyspace, table)].add(bucket)
        if not changes:
            return None
        ordered = {name: sorted(changes[name]) for name in sorted(changes)}
        return cls(part_digest(_encoded(ordered)), ordered, {name: sorted(buckets[name]) for name in ordered})

    def merge(self, layouts: Iterable[MirrorLayout], lock: Callable[[MirrorLayout, list[int]], None],
              store_of: Callable[[MirrorLayout], MirrorStore], chunk: int) -> int:
        """Merge the part's changes of the tables `layouts` names (another's are not merged) into their
        stores, `chunk` at a time, each table's buckets taken first (`lock`), tables in name order; how
        many changes were merged."""
        tables = []
        for layout in sorted(layouts, key=lambda t: (t.keyspace, t.table)):
            name = (layout.keyspace, layout.table)
            if name in self.changes:
                lock(layout, self.buckets[name])
                tables.append((layout, store_of(layout)))
        return merge_batch(tables, self.changes, chunk).changes


@dataclass(frozen=True)
class MirrorParts:
    """Merges a batch's changes on the executors, a part per task (run by `write_each_part` on the
    `bucketed` changes); a store's subclass writes each part (`write`). Picklable, so Spark ships it."""

    batch_id: int
    layouts: tuple[MirrorLayout, ...]  # of the tables to merge into; another table's changes are not merged
    chunk: int

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> int | None:
        part = MirrorPart.of(batches)
        return None if part is None else self.write(part)

    def write(self, part: MirrorPart) -> int:
        """Merge and write `part`, in one transaction with its claim in the ledger of parts; how many changes
        were merged (0 when an attempt has committed it)."""
        raise NotImplementedError


def merge_on_executors(rows: DataFrame, parts_of: Callable[[dict[Name, int]], MirrorParts]) -> None:
    """Step 2 of a SQL mirror's batch (`spark.sinks.parts`): the tables made ready on the driver (`parts_of`
    the batch's change counts per table), then the changes merged on the executors."""
    parts = parts_of(table_counts(rows))
    merged = write_each_part(bucketed(rows), parts)
    log.info("mirror: %d changes of %d tables merged", merged, len(parts.layouts))


def _encoded(changes: dict[Name, list[RawChange]]) -> Iterator[bytes]:
    for (keyspace, table), raw in changes.items():
        yield keyspace.encode()
        yield table.encode()
        for partition, key, cells in raw:
            yield partition
            yield key.encode()
            yield cells.encode()
