"""Where the job writes: every sink takes whole micro-batches and makes their writes exactly once.

A micro-batch may be written again after a crash (Spark replays it with the same batch id
when the crash came before the checkpoint). Each sink turns that replay into a no-op: Delta by
the transaction's application id and version, PostgreSQL by a ledger of batch ids written in
the same transaction, Cassandra by upserting rows whose primary key is derived from the change.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from pyspark.sql import DataFrame

from spark.streams.generations import Generations


class Sink(Protocol):
    def prepare(self) -> None:
        """Create what the sink needs (tables, keyspaces); safe to repeat."""

    def write(self, rows: DataFrame, dead_letters: DataFrame, batch_id: int) -> None:
        """Write one micro-batch: `rows` in the `LOG_ROW` layout, `dead_letters` in `DEAD_LETTER`'s."""

    def publish_generations(self, generations: Generations) -> None:
        """Write the generation description tables (`cdc_generation_timestamps`,
        `cdc_streams_descriptions_v2`); idempotent."""


def open_sink(spark: Any, kind: str, config: Mapping[str, str], *, app_id: str, cluster: tuple[Sequence[str], int],
              keyspace: str) -> Sink:
    """The sink `kind` with its settings (named as `spark.subscriptions.model.SINKS` lists them).
    `app_id` names its writes in the exactly-once bookkeeping; the Cassandra sink writes to `cluster`
    and `keyspace` unless its settings say otherwise."""
    if kind == "delta":
        from .delta import DeltaSink

        return DeltaSink(spark, config["path"], app_id)
    if kind == "postgres":
        from .postgres import PostgresSink

        return PostgresSink(config["dsn"], schema=config.get("schema", "ringtail"), app_id=app_id)
    if kind == "cassandra":
        from .cassandra import CassandraSink

        hosts = tuple(h.strip() for h in config["hosts"].split(",")) if "hosts" in config else cluster[0]
        return CassandraSink(hosts=list(hosts), port=int(config.get("port", cluster[1])),
                             keyspace=config.get("keyspace", keyspace))
    raise ValueError(f"unknown sink {kind!r}")
