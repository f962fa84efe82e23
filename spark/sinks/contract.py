"""The contract every sink keeps and the job relies on: a micro-batch as a sink takes it (`MicroBatch`),
what a sink does and asks of the job (`Sink`), and the helpers several sinks share."""
from __future__ import annotations

import datetime
import functools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from spark.streams.generations import Generations

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

T = TypeVar("T")
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


@dataclass(frozen=True)
class MicroBatch:
    """One micro-batch as a sink takes it: its log rows (`LOG_ROW`, with `CELLS` for a mirror), its dead
    letters (`DEAD_LETTER`), its id, by which the sink makes a replay a no-op, the digest of the source
    offsets it covers, by which the sink tells a replay from another batch with that id (`ledger`), and
    when Spark planned it, the same on a replay: what a sink computes of the time (images) comes out
    the same."""

    id: int
    rows: DataFrame
    dead_letters: DataFrame
    # How many dead letters the batch holds, known once a pass has read it whole (the job counts them in
    # that pass).
    dead_letter_count: Callable[[], int]
    offsets: str
    planned_ms: int  # ms since the epoch (`spark.delivery.checkpoint.planned_batch`)

    def has_dead_letters(self) -> bool:
        """Whether there are dead letters to write."""
        return self.dead_letter_count() > 0


@dataclass(frozen=True)
class Resolved:
    """A table's resolved timestamp (µs since the epoch): every write to it Cassandra acknowledged before
    is in the sink (`spark.delivery.resolved`)."""

    keyspace: str
    table: str
    time_us: int


class Sink(Protocol):
    """A sink; each sink subclasses it, and so declares what it asks of the job."""

    # A mirror: it merges each change's cells by their timestamps, so its rows carry the `cells` column
    # (which the other sinks never pay for decoding), and expired values are purged between batches.
    merges_cells: bool = False
    # Its write first reads the micro-batch in one action over all its partitions (the Delta log's span
    # of its late rows, before its append; the SQL logs' parts, written from the executors): that read is
    # then the batch's only pass. A sink taking rows on the driver reads them a partition at a time, so
    # the job reads the batch whole first, in parallel.
    reads_batch_whole: bool = False
    # Resolved timestamps are published at most this often (s) whatever `resolved_interval` says: where
    # each publication is a commit of its own (Delta), a commit every few seconds would cost the sink.
    resolved_every: float = 0.0

    def prepare(self) -> None:
        """Create what the sink needs (tables, keyspaces); safe to repeat."""

    def write(self, batch: MicroBatch) -> None:
        """Write one micro-batch, its rows and its dead letters."""

    def publish_generations(self, generations: Generations) -> None:
        """Write the generation description tables (`cdc_generation_timestamps`,
        `cdc_streams_descriptions_v2`); idempotent."""

    def publish_resolved(self, resolved: list[Resolved]) -> None:
        """Record each table's resolved timestamp (`spark.delivery.resolved`), keeping the newest; idempotent."""

    def close(self) -> None:
        """Let go of what the sink holds between batches (a session, a producer); the sink is not
        used after it."""

    def purge(self) -> None:
        """Remove what has expired from the mirrors (a sink that `merges_cells`)."""


def of_tables(rows: DataFrame, tables: Iterable[tuple[str, str]]) -> DataFrame:
    """The rows of these (keyspace, table)s (a typed layout's, for the log, of tables that have no typed log)."""
    from pyspark.sql import functions as F

    return rows.where(functools.reduce(lambda a, b: a | b, [(F.col("keyspace") == k) & (F.col("table") == t)
                                                          for k, t in tables]))


def chunks(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """`items` in lists of `size` (the last may be shorter), in order."""
    chunk: list[T] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def utc_time(micros: int | None) -> datetime.datetime | None:
    """Microseconds since the epoch as an aware UTC time (generations keep their times so)."""
    return None if micros is None else _EPOCH + datetime.timedelta(microseconds=micros)


def resolved_rows(app_id: str, resolved: Iterable[Resolved]) -> list[tuple]:
    """(app_id, keyspace, table, time, µs) rows of the `resolved` tables, the time as an aware UTC time."""
    return [(app_id, r.keyspace, r.table, utc_time(r.time_us), r.time_us) for r in resolved]


def generation_rows(generations: Generations) -> tuple[list[tuple], list[tuple]]:
    """(cdc_generation_timestamps rows, cdc_streams_descriptions_v2 rows); a generation known by its
    timestamp only has no streams to publish and is left out, as readers trust a timestamp row."""
    timestamps, streams = [], []
    for generation in generations.generations:
        if generation.description is None:
            continue
        time = utc_time(generation.timestamp)
        timestamps.append((time, utc_time(generation.expired)))
        streams.extend((time, entry.token_range_end, [s.value for s in entry.streams])
                       for entry in generation.description.entries)
    return timestamps, streams
