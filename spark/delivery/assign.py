"""Token, generation and stream id of every decoded row, a whole Arrow batch at a time, in the same pass
as decoding (`StreamAssigner`, handed to `events.decode_partition`): each Python worker loads the
generations from the cluster and loads them again every `refresh` seconds, so it knows a generation the
job publishes well before it starts (`generation_delay` after the ring change, 65 s by default).

A row that no generation covers, or whose write time lies outside the acceptance window, is
not logged but kept as a dead letter with its reason. The window is judged against the time
the change reached Kafka, not the wall clock, so a replayed micro-batch decides the same way.
A mirror's rows are never rejected (`reject=False`): the table holds a write whatever its timestamp,
so its mirror must too; one that no generation covers keeps a null stream id.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schemas.runtime.access import CassandraCluster
from spark import rows as R
from spark.streams.generations import Generations
from spark.streams.tokens import tokens_of_keys

def assign_batch(batch: pa.RecordBatch, generations: Generations, leeway_us: int,
                 max_age_us: int | None, reject_rows: bool = True) -> pa.RecordBatch:
    n = batch.num_rows
    decoded = pc.is_null(batch.column("failure")).to_numpy(zero_copy_only=False)
    written = batch.column("write_time_us").fill_null(0).to_numpy()
    reached_kafka = batch.column("kafka_time").cast(pa.int64()).fill_null(0).to_numpy()
    keys = batch.column("partition_key").fill_null(b"").to_pylist()
    tokens = tokens_of_keys(keys)

    starts = np.array([g.timestamp for g in generations.generations], dtype=np.int64)
    positions = np.searchsorted(starts, written, side="right") - 1
    reasons = np.full(n, None, dtype=object)
    details = np.full(n, None, dtype=object)

    def reject(mask: np.ndarray, reason: str, detail: Callable[[int], str]) -> None:
        if not reject_rows:
            return
        mask = mask & decoded & (reasons == None)  # noqa: E711 - elementwise
        for i in np.flatnonzero(mask):
            reasons[i], details[i] = reason, detail(i)

    reject(written > reached_kafka + leeway_us, R.FROM_THE_FUTURE,
           lambda i: f"written at {written[i]} µs, more than {leeway_us} µs after it reached Kafka"
                     f" ({reached_kafka[i]})")
    if max_age_us is not None:
        reject(written < reached_kafka - max_age_us, R.TOO_OLD,
               lambda i: f"written at {written[i]} µs, more than {max_age_us} µs before it reached Kafka")
    reject(positions < 0, R.NO_GENERATION,
           lambda i: f"no CDC generation starts at or before the write time {written[i]} µs"
                     + (f" (the first starts at {starts[0]})" if len(starts) else " (none is published)"))
    accepted = decoded & (reasons == None) & (positions >= 0)  # noqa: E711

    ids = np.zeros(n, dtype="V16")
    if accepted.any():
        ids[accepted] = generations.stream_ids(written[accepted], tokens[accepted])
    stream_ids = R.stream_id_column(ids, accepted)
    mask = pa.array(accepted)
    generation = pc.if_else(mask, pa.array(starts[np.maximum(positions, 0)] if len(starts) else np.zeros(n, np.int64)),
                            pa.nulls(n, pa.int64())).cast(pa.timestamp("us", tz="UTC"))
    token = pc.if_else(pa.array(decoded), pa.array(tokens), pa.nulls(n, pa.int64()))
    failure = pc.coalesce(batch.column("failure"), pa.array(reasons, pa.string()))
    detail = pc.coalesce(batch.column("failure_detail"), pa.array(details, pa.string()))

    replaced = {"cdc$stream_id": stream_ids, "generation": generation, "token": token, "failure": failure,
                "failure_detail": detail}
    # Columns beyond `DECODED`'s (the replica-copy step's) pass through.
    return pa.RecordBatch.from_arrays([replaced.get(name, batch.column(name)) for name in batch.schema.names],
                                      schema=batch.schema)


@dataclass(frozen=True)
class StreamAssigner:
    """How the decoding pass assigns stream ids: the generations in `keyspace` of the cluster, the
    acceptance window, and whether rows are rejected (not for a mirror's: `assign_batch`)."""

    cluster: CassandraCluster
    keyspace: str
    ignore_msb: int
    leeway_us: int
    max_age_us: int | None
    reject_rows: bool = True
    refresh: float = 10.0  # seconds between two loads of the generations in a worker

    def assign(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        return assign_batch(batch, self.generations(), self.leeway_us, self.max_age_us, self.reject_rows)

    def generations(self) -> Generations:
        """This process's generations, loaded again once `refresh` seconds old."""
        key = (self.cluster, self.keyspace, self.ignore_msb)
        with _LOCK:
            loaded = _GENERATIONS.get(key)
            if loaded is None or time.monotonic() - loaded[0] >= self.refresh:
                from spark.streams.storage import GenerationStore

                generations = GenerationStore(_session(self.cluster), self.keyspace).load(
                    leeway=self.leeway_us, ignore_msb=self.ignore_msb)
                loaded = _GENERATIONS[key] = (time.monotonic(), generations)
            return loaded[1]


_LOCK = threading.Lock()
_GENERATIONS: dict[tuple, tuple[float, Generations]] = {}
_SESSIONS: dict[tuple, Any] = {}


def _session(cluster: CassandraCluster) -> Any:
    """One session per worker process and cluster (Spark reuses its Python workers)."""
    if cluster not in _SESSIONS:
        from schemas.runtime.session import STATEMENTS_ONLY, connect

        _SESSIONS[cluster] = connect(*cluster, **STATEMENTS_ONLY)[1]
    return _SESSIONS[cluster]
