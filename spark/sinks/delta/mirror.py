"""Delta mirror: per base table `ks.t`, a Delta table `<path>/mirror/ks/t` holding what `SELECT * FROM
ks.t` returns, its columns in the typed log's Spark types (`typed_log`), and `<path>/mirror_state/ks/t`
holding the cells with their timestamps that decide it (`partition`, `row`, `state`, `expires`).

A micro-batch is merged on the executors (`DeltaMirrorStore.merged`): the driver plans one job per
table that joins the batch's changes with the states of every partition they touch, spreads both by
partition over the tasks, and has each task merge its partitions (`engine.merge`, on the states it was
given); the result, persisted, is written with two `MERGE`s, the mirror's rows first, then the states.
The two commit one after the other: a crash between them leaves the states as they were, so the batch's
replay merges the same changes into them again and writes the same mirror rows (a result lost with an
executor before the second commit is computed again from those states too). One writer per mirror path:
Delta's optimistic concurrency fails a second writer's conflicting `MERGE` (the batch is then retried).

The mirror gains the columns its base table gains and drops those it drops (column mapping by name,
which also lets a column have any name).
"""
from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, BooleanType, LongType, StringType, StructField, StructType

from spark.mirror.engine import MirrorRow, StateKey, StoredState, merge_raw
from spark.mirror.layout import MirrorError, MirrorLayout
from spark.mirror.state import Rules
from spark.mirror.values import StoreColumn, row_name, row_values
from spark.rows import arrow_schema

from ..cql_values import converter
from ..typed_log import typed


STATE = StructType([StructField("partition", BinaryType(), False), StructField("row", StringType(), False),
                    StructField("state", StringType()), StructField("expires", LongType())])
_KEYS = StructType(STATE.fields[:2])
_WRITE = "ringtail$write"
# Both tables map columns by name: a column can have any name, and a dropped one leaves the data files as they are.
COLUMN_MAPPING = {"delta.columnMapping.mode": "name", "delta.minReaderVersion": "2", "delta.minWriterVersion": "5"}


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class DeltaMirrorStore:
    """One table's mirror and states at `path` (`spark.mirror.engine.MirrorStore`)."""

    def __init__(self, spark: SparkSession, path: str, layout: MirrorLayout) -> None:
        self.spark, self.layout = spark, layout
        self.mirror_path = f"{path}/mirror/{layout.keyspace}/{layout.table}"
        self.state_path = f"{path}/mirror_state/{layout.keyspace}/{layout.table}"
        self.rows = MirrorRows.of(layout)
        self.schema = self.rows.schema

    def prepare(self, mirror: bool = True) -> None:
        """Create both tables, or bring the mirror's columns to the base table's; without `mirror`, the
        states' table alone (an image layout keeps no mirror)."""
        from delta.tables import DeltaTable

        for path, schema in ((self.state_path, STATE), (self.mirror_path, self.schema))[:2 if mirror else 1]:
            builder = DeltaTable.createIfNotExists(self.spark).location(path).addColumns(schema)
            for key, value in COLUMN_MAPPING.items():
                builder = builder.property(key, value)
            builder.execute()
        if not mirror:
            return
        have = self.spark.read.format("delta").load(self.mirror_path).schema.fieldNames()
        wanted = self.schema.fieldNames()
        if set(wanted) - set(have):
            # An empty append with schema merge adds the columns, whatever their names and types.
            (self.spark.createDataFrame([], self.schema).write.format("delta").mode("append")
             .option("mergeSchema", "true").save(self.mirror_path))
        for name in set(have) - set(wanted):
            self.spark.sql(f"ALTER TABLE delta.{_quoted(self.mirror_path)} DROP COLUMN {_quoted(name)}")

    def _states(self) -> DataFrame:
        return self.spark.read.format("delta").load(self.state_path)

    def _found(self, frame: DataFrame) -> dict[StateKey, str]:
        table = frame.select("partition", "row", "state").toArrow()
        return dict(zip(zip(table.column("partition").to_pylist(), table.column("row").to_pylist()),
                        table.column("state").to_pylist()))

    def load(self, keys: Collection[StateKey]) -> dict[StateKey, str]:
        if not keys:
            return {}
        partitions, rows = zip(*keys)
        wanted = self.spark.createDataFrame(pa.table({"partition": list(partitions), "row": list(rows)}), _KEYS)
        return self._found(self._states().join(F.broadcast(wanted), ["partition", "row"]))

    def load_partitions(self, partitions: Collection[bytes]) -> dict[StateKey, str]:
        if not partitions:
            return {}
        wanted = self.spark.createDataFrame(pa.table({"partition": list(partitions)}), StructType(_KEYS.fields[:1]))
        return self._found(self._states().join(F.broadcast(wanted), ["partition"]))

    def due(self, now: int) -> list[StateKey]:
        return list(self.due_states(now))

    def due_states(self, now: int) -> dict[StateKey, int]:
        """The states with something expired by `now` (s), with when the first of it expired."""
        table = self._states().where(F.col("expires") <= now).select("partition", "row", "expires").toArrow()
        return dict(zip(zip(table.column("partition").to_pylist(), table.column("row").to_pylist()),
                        table.column("expires").to_pylist()))

    def given(self, changes: DataFrame) -> DataFrame:
        """`changes` (of this table: `partition`, `key`, `cells`, and what else a task reads of them) beside
        the states of every partition they touch (`partition`, `row`, `state`, `expires`; null cells), spread
        by partition over the tasks: what a task merging on the executors is given."""
        touched = self._states().join(changes.select("partition").distinct(), "partition")
        given = changes.unionByName(touched.select("partition", "row", "state", "expires"), allowMissingColumns=True)
        return given.repartition(self.spark.sparkContext.defaultParallelism, "partition")

    def merged(self, changes: DataFrame, now: int) -> DataFrame:
        """The plan of `changes` (of this table: `partition`, `key`, `cells`) merged on the executors into the
        states of every partition they touch, as of `now` (s): rows of a `state` to write or a `mirror` row
        to write, one of the two set. The driver only plans it."""
        return self.given(changes.select("partition", "key", "cells")).mapInArrow(
            MergeTask(self.layout, now), _merged(self.rows))

    def save(self, states: list[StoredState], rows: list[MirrorRow]) -> None:
        """Write the mirror rows, then the states (in the order the module explains)."""
        if rows:
            self.replace(self.spark.createDataFrame(
                pa.Table.from_arrays(self.rows.arrays(rows), schema=arrow_schema(self.rows.with_flag)),
                self.rows.with_flag))
        if states:
            self.merge_states(self.spark.createDataFrame(
                pa.Table.from_arrays(state_arrays(states), schema=arrow_schema(STATE)), STATE))

    def merge_states(self, updates: DataFrame) -> None:
        """Write `STATE` rows: a null state removes its key's."""
        from delta.tables import DeltaTable

        (DeltaTable.forPath(self.spark, self.state_path).alias("t")
         .merge(updates.alias("s"), "t.partition = s.partition AND t.row = s.row")
         .whenMatchedDelete("s.state IS NULL")
         .whenMatchedUpdate(set={"state": "s.state", "expires": "s.expires"})
         .whenNotMatchedInsert("s.state IS NOT NULL", values={n: f"s.{n}" for n in STATE.fieldNames()})
         .execute())

    def replace(self, source: DataFrame) -> None:
        """Write mirror rows (`MirrorRows.with_flag`): each removed by its key, then written when flagged."""
        from delta.tables import DeltaTable

        layout = self.layout
        match = " AND ".join([f"t.{_quoted(c.name)} = s.{_quoted(c.name)}" for c in layout.partition_key]
                             + [f"t.{_quoted(c.name)} <=> s.{_quoted(c.name)}" for c in layout.clustering])
        values = {_quoted(n): f"s.{_quoted(n)}" for n in self.schema.fieldNames()}
        (DeltaTable.forPath(self.spark, self.mirror_path).alias("t").merge(source.alias("s"), match)
         .whenMatchedDelete(f"NOT s.{_quoted(_WRITE)}")
         .whenMatchedUpdate(set=values)
         .whenNotMatchedInsert(f"s.{_quoted(_WRITE)}", values=values)
         .execute())


@dataclass(frozen=True)
class MirrorRows:
    """A table's mirror columns in Spark's types, and a mirror row's values for them; built where it is
    used (the converters are closures), from the layout alone."""

    layout: MirrorLayout
    schema: StructType
    with_flag: StructType  # and whether the row is written (or only removed)
    columns: tuple[StoreColumn, ...]

    @classmethod
    def of(cls, layout: MirrorLayout) -> MirrorRows:
        types = {c.name: c.type for c in (*layout.key_columns, *layout.columns)}
        fields, columns = [], []
        for name in layout.names():
            spark_type, to_arrow = typed(layout.cql(types[name]))
            fields.append(StructField(name, spark_type))
            to_driver = converter(layout.cql(types[name]))
            columns.append(StoreColumn(name, spark_type.simpleString(), _composed(to_driver, to_arrow)))
        return cls(layout, StructType(fields), StructType([*fields, StructField(_WRITE, BooleanType(), False)]),
                   tuple(columns))

    def values(self, row: MirrorRow) -> dict[str, Any]:
        values = row_values(self.layout, self.columns, row, "Delta")
        return {**dict(zip(self.schema.fieldNames(), values)), _WRITE: row.values is not None}

    def arrays(self, rows: Sequence[MirrorRow]) -> list[pa.Array]:
        """`rows` as the columns of `with_flag`, converted a column at a time; a value that does not fit raises
        a `MirrorError` naming its row."""
        schema = arrow_schema(self.with_flag)
        by_name = [{**row.key, **(row.values or {})} for row in rows]
        try:
            arrays = [pa.array([None if (v := values.get(column.name)) is None else column.convert(v)
                                for values in by_name], schema.field(column.name).type) for column in self.columns]
        except (ValueError, TypeError, KeyError, OverflowError, pa.ArrowException):
            for row in rows:  # the first that does not fit, named
                try:
                    pa.Table.from_pylist([self.values(row)], schema=schema)
                except pa.ArrowException as exc:
                    raise MirrorError(f"{row_name(self.layout, row)} does not fit Delta: {exc}") from exc
            raise
        return [*arrays, pa.array([row.values is not None for row in rows], pa.bool_())]


def _composed(to_driver: Callable[[Any], Any], to_arrow: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """The event's value → the driver's (the CQL type layer the typed log uses) → Arrow's."""
    return lambda value: to_arrow(to_driver(value))


def known_mirrors(spark: SparkSession, path: str) -> list[tuple[str, str]]:
    """The (keyspace, table) of every mirror with states under `path`, on any Hadoop-compatible store."""
    jvm = spark.sparkContext._jvm
    root = jvm.org.apache.hadoop.fs.Path(f"{path}/mirror_state")
    fs = root.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    if not fs.exists(root):
        return []
    found = []
    for keyspace in fs.listStatus(root):
        if keyspace.isDirectory():
            found += [(keyspace.getPath().getName(), table.getPath().getName())
                      for table in fs.listStatus(keyspace.getPath())
                      if fs.exists(jvm.org.apache.hadoop.fs.Path(table.getPath(), "_delta_log"))]
    return sorted(found)


def _merged(rows: MirrorRows) -> StructType:
    """What `DeltaMirrorStore.merged` gives: a state to write, or a mirror row."""
    return StructType([StructField("state", STATE), StructField("mirror", rows.with_flag)])


@dataclass(frozen=True)
class MergeTask:
    """One task of `DeltaMirrorStore.merged`: its partitions' changes merged into their states, every one of
    which it was given (so the store it merges through is those states in memory); picklable."""

    layout: MirrorLayout
    now: int

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        store, changes = split_given(batches, ("partition", "key", "cells"))
        if not changes:
            return
        merge_raw(Rules(self.layout), store, list(zip(changes["partition"], changes["key"], changes["cells"])),
                  self.now)
        rows = MirrorRows.of(self.layout)
        schema = arrow_schema(_merged(rows))
        if store.states:
            yield beside(schema, "state", state_arrays(store.states))
        if store.rows:
            yield beside(schema, "mirror", rows.arrays(store.rows))


def state_arrays(states: Sequence[StoredState]) -> list[pa.Array]:
    """`states` as the columns of `STATE`."""
    partitions, rows, texts, expires = zip(*states)
    return [pa.array(partitions, pa.binary()), pa.array(rows, pa.string()), pa.array(texts, pa.string()),
            pa.array(expires, pa.int64())]


def beside(schema: pa.Schema, name: str, children: list[pa.Array]) -> pa.RecordBatch:
    """A batch of `schema`, whose struct columns are each one kind of output: `children` the columns of the one
    `name`d, every other column null."""
    length = len(children[0])
    columns = [pa.StructArray.from_arrays(children, fields=list(field.type)) if field.name == name
               else pa.nulls(length, field.type) for field in schema]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def split_given(batches: Iterator[pa.RecordBatch], order: Sequence[str]) -> tuple[LoadedStates, dict[str, list]]:
    """What a merging task was given (`DeltaMirrorStore.given`): the states, and the changes column by column
    ({} without any), sorted by the columns named in `order` (bytes and text by code point, stably)."""
    parts = list(batches)  # none at all for a Spark partition no change went to
    if not any(part.num_rows for part in parts):
        return LoadedStates({}), {}
    given = pa.Table.from_batches(parts)
    is_state = pc.is_null(given.column("cells"))
    states = given.filter(is_state)
    keys = list(zip(states.column("partition").to_pylist(), states.column("row").to_pylist()))
    loaded = dict(zip(keys, states.column("state").to_pylist()))
    expires = {key: at for key, at in zip(keys, states.column("expires").to_pylist()) if at is not None}
    changes = given.filter(pc.invert(is_state)).drop_columns(["row", "state", "expires"])
    if changes.num_rows == 0:
        return LoadedStates(loaded, expires), {}
    changes = changes.take(pc.sort_indices(changes, [(name, "ascending") for name in order]))
    return LoadedStates(loaded, expires), {name: changes.column(name).to_pylist() for name in changes.column_names}


class LoadedStates:
    """The states of whole partitions, as a task was given them, with when each next expires; what a merge
    saves, kept (`spark.mirror.engine.MirrorStore`)."""

    def __init__(self, loaded: dict[StateKey, str], expires: dict[StateKey, int] | None = None) -> None:
        self.loaded, self.expires = loaded, expires or {}
        self.states: list[StoredState] = []
        self.rows: list[MirrorRow] = []

    def load(self, keys: Collection[StateKey]) -> dict[StateKey, str]:
        return {key: self.loaded[key] for key in keys if key in self.loaded}

    def load_partitions(self, partitions: Collection[bytes]) -> dict[StateKey, str]:
        wanted = set(partitions)
        return {key: state for key, state in self.loaded.items() if key[0] in wanted}

    def due(self, now: int) -> list[StateKey]:
        return list(self.due_states(now))

    def due_states(self, now: int) -> dict[StateKey, int]:
        """The states with something expired by `now` (s), with when the first of it expired."""
        return {key: expires for key, expires in self.expires.items() if expires <= now}

    def save(self, states: list[StoredState], rows: list[MirrorRow]) -> None:
        self.states += states
        self.rows += rows
