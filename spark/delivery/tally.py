"""A micro-batch's counts, taken in the pass that first reads the batch whole: the sink's write (the
Delta sink's span of its late rows, before its append), or the one read before a sink that takes rows on the
driver. Spark observations ride on that pass, so counting costs no job of its own.

An observation is filled by the first action that runs the plan under it whole. The batch is
persisted above its observation, so every later action reads the cache and the figures stay those
of one pass, even when the sink reads the rows several times. A sink may read nothing (Delta skips
an append it already holds, when Spark replays a batch): the counts then make the pass themselves,
which also runs the replica-copy removal's state for the batch, as every batch must.
"""
from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from spark.sinks.contract import utc_time

from .selection import Selection


@dataclass(frozen=True)
class BatchCounts:
    batch_id: int
    rows: int  # log rows of the batch
    delivered: int  # of them, selected and written
    dead_letters: int
    late: int
    newest_kafka_time: dt.datetime | None  # of the rows delivered


class Tally:
    """The counts of one micro-batch of `DECODED` rows: `observe` it (before persisting), give it the log
    rows to `deliver`, then take the `counts` after a pass has read them (or `read` them first)."""

    def __init__(self, batch_id: int, late: Column, settle: float = 2.0) -> None:
        self._batch_id = batch_id
        self._late = late
        self._batch = Observation()
        self._delivered: Observation | None = None
        self._rows: DataFrame | None = None
        # Spark hands an action's metrics to its observations on a listener thread, soon after the action.
        self._settle = settle
        self._counts: BatchCounts | None = None

    def observe(self, batch: DataFrame) -> DataFrame:
        logged = F.col("failure").isNull()
        newest = F.unix_micros(F.max(F.when(logged, F.col("kafka_time"))))
        return batch.observe(self._batch, F.count_if(logged).alias("rows"), F.count_if(~logged).alias("dead_letters"),
                             F.count_if(logged & self._late).alias("late"), newest.alias("newest"))

    def deliver(self, rows: DataFrame, selection: Selection) -> DataFrame:
        """The rows `selection` delivers of the batch's log `rows`; counted too when it keeps only some."""
        if not selection.everything:
            self._delivered = Observation()
            rows = selection.apply(rows).observe(self._delivered, F.count(F.lit(1)).alias("rows"),
                                                 F.unix_micros(F.max("kafka_time")).alias("newest"))
        self._rows = rows
        return rows

    def read(self) -> None:
        """Read the batch whole, in parallel: decoded, cached and counted in one pass."""
        self._rows.count()

    def counts(self) -> BatchCounts:
        """The batch's counts, from the pass that read it; when none has (a sink skipping a batch it
        holds already), from a pass made now."""
        if self._counts is None:
            if not self._settled():
                self.read()
            batch = self._batch.get
            delivered = batch if self._delivered is None else self._delivered.get
            self._counts = BatchCounts(self._batch_id, batch["rows"], delivered["rows"], batch["dead_letters"],
                                       batch["late"], utc_time(delivered["newest"]))
        return self._counts

    def _settled(self) -> bool:
        """Whether every observation is filled within the settle time (PySpark's `Observation.get` waits
        without end; the future of its JVM object says without waiting)."""
        deadline = time.monotonic() + self._settle
        observations = [o for o in (self._batch, self._delivered) if o is not None]
        while not all(o._jo is not None and o._jo.future().isCompleted() for o in observations):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)
        return True
