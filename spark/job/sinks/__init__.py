"""Where the job writes: every sink takes whole micro-batches and makes their writes exactly once.

A micro-batch may be written again after a crash (Spark replays it with the same batch id
when the crash came before the checkpoint). Each sink turns that replay into a no-op: Delta by
the transaction's application id and version, PostgreSQL by a ledger of batch ids written in
the same transaction, Cassandra by upserting rows whose primary key is derived from the change.
Every ledger keeps the batch's source offsets with its id, and refuses a batch it holds under the
same id with other offsets rather than skip it (`ledger`).
"""
from __future__ import annotations

import datetime
import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from pyspark.sql import DataFrame

from spark.streams.generations import Generations
from spark.streams.storage import Replication
from spark.subscriptions.model import MIRROR, boolean_setting

T = TypeVar("T")
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


@dataclass(frozen=True)
class MicroBatch:
    """One micro-batch as a sink takes it: its log rows (`LOG_ROW`, with `CELLS` for a mirror), its dead
    letters (`DEAD_LETTER`), its id, by which the sink makes a replay a no-op, and the digest of the
    source offsets it covers, by which the sink tells a replay from another batch with that id (`ledger`)."""

    id: int
    rows: DataFrame
    dead_letters: DataFrame
    # How many dead letters the batch holds, known once a pass has read it whole (the job counts them in
    # that pass).
    dead_letter_count: Callable[[], int]
    offsets: str

    def has_dead_letters(self) -> bool:
        """Whether there are dead letters to write."""
        return self.dead_letter_count() > 0


class Sink(Protocol):
    def prepare(self) -> None:
        """Create what the sink needs (tables, keyspaces); safe to repeat."""

    def write(self, batch: MicroBatch) -> None:
        """Write one micro-batch, its rows and its dead letters."""

    def publish_generations(self, generations: Generations) -> None:
        """Write the generation description tables (`cdc_generation_timestamps`,
        `cdc_streams_descriptions_v2`); idempotent."""

    def close(self) -> None:
        """Let go of what the sink holds between batches (a session, a producer); the sink is not
        used after it."""


def merges_cells(sink: Sink) -> bool:
    """Whether `sink` merges each change's cells by their timestamps (a mirror): its rows then carry the
    `cells` column, which the other sinks never pay for decoding."""
    return getattr(sink, "merges_cells", False)


def reads_batch_whole(sink: Sink) -> bool:
    """Whether the sink's write first reads the micro-batch in one action over all its partitions (the
    Delta sink's span of its late rows, before its append): that read is then the batch's only pass. A sink taking rows on the driver reads them
    a partition at a time, so the job reads the batch whole first, in parallel."""
    return getattr(sink, "reads_batch_whole", False)


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


def open_sink(spark: Any, kind: str, config: Mapping[str, str], *, app_id: str, cluster: tuple[Sequence[str], int],
              keyspace: str, kafka: str, registry: str,
              replication: Replication = None) -> Sink:
    """The sink `kind` with its settings (named as `spark.subscriptions.model.SINKS` lists them).
    `app_id` names its writes in the exactly-once bookkeeping; the Cassandra sink writes to `cluster`
    and `keyspace`, created with `replication` when missing, as ringtail's own keyspace is (Delta's typed
    layout and the mirrors read their tables' schemas there), the Kafka sink to the `kafka` cluster
    and its Avro schemas to the `registry`, unless their settings say otherwise."""
    if kind == "delta":
        from .delta import DeltaSink

        return DeltaSink(spark, config["path"], app_id, layout=config.get("layout", "log"), cluster=cluster)
    if kind == "postgres" and config.get("layout") == MIRROR:
        from .postgres_mirror import PostgresMirrorSink

        return PostgresMirrorSink(config["dsn"], schema=config.get("schema", "ringtail"), app_id=app_id,
                                  cluster=cluster)
    if kind == "postgres" and config.get("layout") == "typed":
        from .postgres_typed import PostgresTypedSink

        return PostgresTypedSink(config["dsn"], schema=config.get("schema", "ringtail"), app_id=app_id,
                                 cluster=cluster)
    if kind == "postgres":
        from .postgres import PostgresSink

        return PostgresSink(config["dsn"], schema=config.get("schema", "ringtail"), app_id=app_id)
    if kind == "cassandra":
        from .cassandra import CassandraSink

        hosts = tuple(h.strip() for h in config["hosts"].split(",")) if "hosts" in config else cluster[0]
        return CassandraSink(hosts=list(hosts), port=int(config.get("port", cluster[1])),
                             keyspace=config.get("keyspace", keyspace), replication=replication)
    if kind == "mysql" and config.get("layout") == MIRROR:
        from .mysql_mirror import MySqlMirrorSink

        return MySqlMirrorSink(config["dsn"], app_id=app_id, cluster=cluster)
    if kind == "mysql" and config.get("layout") == "typed":
        from .mysql_typed import MySqlTypedSink

        return MySqlTypedSink(config["dsn"], app_id=app_id, cluster=cluster)
    if kind == "mysql":
        from .mysql import MySqlSink

        return MySqlSink(config["dsn"], app_id=app_id)
    if kind == "kafka":
        from .kafka import KafkaSink

        return KafkaSink(config.get("bootstrap_servers", kafka), config["topic"], app_id=app_id,
                         partitions=int(config.get("partitions", 3)),
                         replication_factor=int(config.get("replication_factor", 1)),
                         format=config.get("format", "json"), registry_url=config.get("registry_url", registry),
                         transactions=boolean_setting(config.get("transactions", "true")))
    if kind == "http":
        from .http import HttpSink

        return HttpSink(config["url"], app_id=app_id, batch_size=int(config.get("batch_size", 500)),
                        timeout=float(config.get("timeout", 10)), token=config.get("token"),
                        verify=boolean_setting(config.get("verify", "true")),
                        attempts=int(config.get("attempts", 6)))
    raise ValueError(f"unknown sink {kind!r}")
