"""The snapshot as a Spark streaming source: each micro-batch reads the next step of every unfinished
token range, one Spark task per range, so a cluster reads ranges in parallel and Spark's checkpoint
makes each step exactly once (its offsets are planned before the batch and committed after the sink
write; a batch cut short is read again with the same bounds, and the sink's ledger makes its write
a no-op).

The offset is the ranges with their positions (`ranges.to_offset`). Planning a step asks Cassandra
where the next N partitions of each range end (`TableRows.probe`); reading a range retries a failed
page from the last token it completed, and the others go on meanwhile.
"""
from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pyarrow as pa
from cassandra.concurrent import execute_concurrent_with_args
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from schemas.runtime.access import CassandraSecurity
from schemas.runtime.session import STATEMENTS_ONLY, connect
from schemas.tables.loader import read_table
from schemas.tables.model import Table, UserType
from spark import rows as R
from spark.location import Location
from spark.streams.generations import Generation, Generations
from spark.streams.storage import GenerationStore

from .checkpoint import planned_offset
from .ranges import advance, from_offset, refine, ring_ranges, to_offset
from .raw import RAW_PAGES, raw_rows
from .rows import TableRows, paged

log = logging.getLogger(__name__)
NAME = "ringtail-snapshot"
_PROBING = 16  # a step's probes in flight at once (one per open range; a ring has tens to thousands)


def reads_element_times(session: Any) -> bool:
    """Whether the cluster `session` reaches reads a multi-cell column's write times and TTLs
    (`MAXWRITETIME`, `WRITETIME` of each element): Cassandra 5.0 does, 4.x does not."""
    release = session.execute("SELECT release_version FROM system.local").one().release_version
    return int(release.split(".")[0]) >= 5


class SnapshotError(RuntimeError):
    """A range could not be read: says which range, from which token, and why."""


@dataclass(frozen=True)
class SnapshotPlan:
    """What one subscription's snapshot reads, and how (passed to Spark as one JSON option)."""

    hosts: tuple[str, ...]
    port: int
    security: CassandraSecurity | None
    keyspace: str
    table: str
    generations_keyspace: str
    ignore_msb: int
    checkpoint: str
    version_us: int  # the snapshot version's start
    consistency: str = "LOCAL_QUORUM"
    fetch_size: int = 1000
    step_partitions: int = 20_000  # per micro-batch, over all ranges
    rate_limit: float = 0.0  # rows/s per range being read; 0: none
    attempts: int = 5  # per page, before the micro-batch fails (and is retried whole)
    tasks: int = 2  # per micro-batch: the cores Spark reads with
    cells: bool = False  # each row with its cells' write times and TTLs, for a mirror (`TableRows`)
    element_times: bool = True  # Cassandra reads a multi-cell column's write times (5.0, not 4.x: `TableRows`)

    def option(self) -> str:
        """The plan as its option's text: with the Cassandra password, if any (the option's name is among
        those `spark.sql.redaction.options.regex` hides, `spark.delivery.pipeline.spark_session`)."""
        security = self.security.revealed() if self.security is not None else None
        return json.dumps({**{f.name: getattr(self, f.name) for f in fields(self)}, "security": security})

    @classmethod
    def from_option(cls, text: str) -> SnapshotPlan:
        values = json.loads(text)
        values["hosts"] = tuple(values["hosts"])
        if values["security"] is not None:
            values["security"] = CassandraSecurity.model_validate(values["security"])
        return cls(**values)


@dataclass(frozen=True)
class RangeSteps(InputPartition):
    """One Spark task of a micro-batch: for each range it takes, tokens (after, end] of `table`, read
    in turn, with the streams of `generation`. A task takes several ranges, as many tasks as Spark
    has cores: a task costs far more to start than a range step to read."""

    steps: tuple[tuple[int, int], ...]
    table: Table
    user_types: Mapping[str, UserType]
    generation: Generation


_SESSIONS: dict[tuple, Any] = {}
_STATEMENTS: dict[tuple, Any] = {}
_SESSIONS_LOCK = threading.Lock()


def _session(plan: SnapshotPlan, raw: bool = True) -> Any:
    """One session per Python worker process (workers are reused across tasks): answering with raw
    rows for the table's data, with ordinary rows for the schema and the generations."""
    key = (plan.hosts, plan.port, plan.security, raw)
    with _SESSIONS_LOCK:
        if key not in _SESSIONS:
            _, session = connect(plan.hosts, plan.port, plan.security, row_factory=RAW_PAGES if raw else None,
                                 **STATEMENTS_ONLY)
            _SESSIONS[key] = raw_rows(session) if raw else session
        return _SESSIONS[key]


def _prepared(plan: SnapshotPlan, text: str) -> Any:
    """`text` prepared once per process on the raw-rows session, at the plan's consistency."""
    from cassandra import ConsistencyLevel

    key = (plan.hosts, plan.port, plan.security, plan.consistency, text)
    with _SESSIONS_LOCK:
        statement = _STATEMENTS.get(key)
    if statement is None:
        statement = _session(plan).prepare(text)
        statement.consistency_level = ConsistencyLevel.name_to_value[plan.consistency.upper()]
        with _SESSIONS_LOCK:
            _STATEMENTS[key] = statement
    return statement


class SnapshotReader(DataSourceStreamReader):
    def __init__(self, plan: SnapshotPlan) -> None:
        self.plan = plan
        self.current: dict | None = None

    def _table(self) -> tuple[Table, Mapping[str, UserType]]:
        table, user_types = read_table(_session(self.plan, raw=False), self.plan.keyspace, self.plan.table)
        if table is None:
            raise SnapshotError(f"table {self.plan.keyspace}.{self.plan.table} does not exist")
        return table, user_types

    def _generations(self) -> Generations:
        generations = GenerationStore(_session(self.plan, raw=False), self.plan.generations_keyspace).load(
            ignore_msb=self.plan.ignore_msb)
        if not generations.generations:
            raise SnapshotError("no CDC generation is published: the runner publishes one before the snapshot")
        return generations

    def _generation(self) -> Generation:
        return self._generations().operating_at(time.time_ns() // 1000)

    def initialOffset(self) -> dict:
        generation = self._generation()
        return to_offset(generation.timestamp, ring_ranges(e.token_range_end for e in generation.topology().entries))

    def latestOffset(self) -> dict:
        if self.current is None:
            self.current = planned_offset(Location(self.plan.checkpoint)) or self.initialOffset()
        generation_us, ranges = from_offset(self.current)
        generation = self._generation()
        if generation.timestamp != generation_us:
            ranges = refine(ranges, (e.token_range_end for e in generation.topology().entries))
            log.info("snapshot of %s.%s follows the generation of %d: %d ranges", self.plan.keyspace,
                     self.plan.table, generation.timestamp, len(ranges))
        if not all(r.done for r in ranges):
            statement = _prepared(self.plan, TableRows(*self._table()).probe)
            ranges = advance(ranges, lambda steps: probe(_session(self.plan), statement, steps),
                             self.plan.step_partitions)
        self.current = to_offset(generation.timestamp, ranges)
        return self.current

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        self.current = end  # a batch run again after a restart continues from its end
        _, before = from_offset(start)
        generation_us, after = from_offset(end)
        if len(before) != len(after) or any(a.end != b.end for a, b in zip(after, before)):
            before = refine(before, (r.end for r in after))
        generation = next(g for g in self._generations().generations if g.timestamp == generation_us)
        table, user_types = self._table()
        steps = [(b.position, a.position) for b, a in zip(before, after) if a.position > b.position]
        tasks = max(1, min(self.plan.tasks, len(steps)))
        return [RangeSteps(tuple(steps[i::tasks]), table, user_types, generation) for i in range(tasks)]

    def read(self, partition: RangeSteps) -> Iterator[pa.RecordBatch]:
        table_rows = TableRows(partition.table, partition.user_types, cells=self.plan.cells,
                               element_times=self.plan.element_times)
        for after, end in partition.steps:
            yield from read_step(self.plan, table_rows, partition.generation, after, end)

    def commit(self, end: dict) -> None:
        pass  # progress is the registry's, recorded after the sink write


def probe(session: Any, statement: Any, steps: list[tuple[int, int, int]]) -> list[int | None]:
    """`ranges.Probes` with `TableRows.probe` prepared on the raw-rows `session`: the steps asked concurrently,
    each answer read whole (a first page only, of the driver's default 5,000 rows, would read as "fewer
    partitions left" and let a large step run to its range's end)."""
    statement.fetch_size = None
    answers = execute_concurrent_with_args(session, statement, steps, concurrency=_PROBING)
    return [None if len(rows := answer.current_rows) < limit else int.from_bytes(rows[-1][0], "big", signed=True)
            for (_, answer), (_, _, limit) in zip(answers, steps)]


def read_step(plan: SnapshotPlan, table_rows: TableRows, generation: Generation, after: int, end: int
              ) -> Iterator[pa.RecordBatch]:
    """The rows of tokens (after, end] as `DECODED` batches, a page at a time. A failed page is asked again from
    the last token whose rows were all yielded; the rows of a token never straddle two attempts: a page's rows
    of its last token wait for the next page."""
    session = _session(plan)
    statement = _prepared(plan, table_rows.select)
    done_until, attempt, held = after, 0, None
    started, read = time.monotonic(), 0
    while True:
        try:
            for page in paged(session, statement, (done_until, end), plan.fetch_size):
                rows = table_rows.page_rows(page, generation, plan.version_us)
                if held is not None:
                    rows = pa.concat_batches([held, rows])
                tokens = rows.column("token").to_numpy()
                cut = int(np.searchsorted(tokens, tokens[-1]))  # a range's rows come in token order
                complete, held = rows.slice(0, cut), rows.slice(cut)
                if cut:
                    yield complete
                    done_until = int(tokens[cut - 1])
                    read += cut
                    if plan.rate_limit:
                        ahead = read / plan.rate_limit - (time.monotonic() - started)
                        if ahead > 0:
                            time.sleep(ahead)
            if held is not None:
                yield held
            return
        except Exception as exc:  # a timeout, a node down: the range is asked again from where it is
            attempt += 1
            held = None
            if attempt >= plan.attempts:
                raise SnapshotError(f"{plan.keyspace}.{plan.table}: reading tokens ({done_until}, {end}] failed"
                                    f" {attempt} times: {type(exc).__name__}: {exc}") from exc
            log.warning("snapshot of %s.%s: tokens (%d, %d] failed (%s); again in %d s", plan.keyspace, plan.table,
                        done_until, end, exc, attempt)
            time.sleep(attempt)


class SnapshotSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        return R.DECODED

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return SnapshotReader(SnapshotPlan.from_option(self.options["plan"]))
