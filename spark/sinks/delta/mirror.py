"""Delta mirror: per base table `ks.t`, a Delta table `<path>/mirror/ks/t` holding what `SELECT * FROM
ks.t` returns, its columns in the typed log's Spark types (`typed_log`), and `<path>/mirror_state/ks/t`
holding the cells with their timestamps that decide it (`partition`, `row`, `state`, `expires`).

Each chunk of a micro-batch is read with a join on the keys it touches and written with two `MERGE`s,
the states' then the mirror's. The two commit one after the other: a crash between them leaves the
mirror behind its states until the batch is replayed, which merges the same changes again (a no-op on
the states) and writes the mirror rows they decide. One writer per mirror path: Delta's optimistic
concurrency fails a second writer's conflicting `MERGE` (the batch is then retried).

The mirror gains the columns its base table gains and drops those it drops (column mapping by name,
which also lets a column have any name).
"""
from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, BooleanType, LongType, StringType, StructField, StructType

from spark.mirror.engine import MirrorRow, StateKey, StoredState
from spark.mirror.layout import MirrorLayout
from spark.mirror.values import StoreColumn, row_values

from ..cql_values import converter
from ..typed_log import typed


STATE = StructType([StructField("partition", BinaryType(), False), StructField("row", StringType(), False),
                    StructField("state", StringType()), StructField("expires", LongType())])
_KEYS = StructType(STATE.fields[:2])
_WRITE = "ringtail$write"
_COLUMN_MAPPING = {"delta.columnMapping.mode": "name", "delta.minReaderVersion": "2", "delta.minWriterVersion": "5"}


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class DeltaMirrorStore:
    """One table's mirror and states at `path` (`spark.mirror.engine.MirrorStore`)."""

    def __init__(self, spark: SparkSession, path: str, layout: MirrorLayout) -> None:
        self.spark, self.layout = spark, layout
        self.mirror_path = f"{path}/mirror/{layout.keyspace}/{layout.table}"
        self.state_path = f"{path}/mirror_state/{layout.keyspace}/{layout.table}"
        types = {c.name: c.type for c in (*layout.key_columns, *layout.columns)}
        fields, self.columns = [], []
        for name in layout.names():
            spark_type, to_arrow = typed(layout.cql(types[name]))
            fields.append(StructField(name, spark_type))
            to_driver = converter(layout.cql(types[name]))
            self.columns.append(StoreColumn(name, spark_type.simpleString(), _composed(to_driver, to_arrow)))
        self.schema = StructType(fields)
        self._rows_schema = StructType([*fields, StructField(_WRITE, BooleanType(), False)])

    def prepare(self) -> None:
        """Create both tables, or bring the mirror's columns to the base table's."""
        from delta.tables import DeltaTable

        for path, schema in ((self.state_path, STATE), (self.mirror_path, self.schema)):
            builder = DeltaTable.createIfNotExists(self.spark).location(path).addColumns(schema)
            for key, value in _COLUMN_MAPPING.items():
                builder = builder.property(key, value)
            builder.execute()
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
        table = self._states().where(F.col("expires") <= now).select("partition", "row").toArrow()
        return list(zip(table.column("partition").to_pylist(), table.column("row").to_pylist()))

    def save(self, states: list[StoredState], rows: list[MirrorRow]) -> None:
        from delta.tables import DeltaTable

        if states:
            updates = self.spark.createDataFrame(pa.Table.from_pylist(
                [s._asdict() for s in states], schema=pa.schema(
                    [("partition", pa.binary()), ("row", pa.string()), ("state", pa.string()),
                     ("expires", pa.int64())])), STATE)
            (DeltaTable.forPath(self.spark, self.state_path).alias("t")
             .merge(updates.alias("s"), "t.partition = s.partition AND t.row = s.row")
             .whenMatchedDelete("s.state IS NULL")
             .whenMatchedUpdate(set={"state": "s.state", "expires": "s.expires"})
             .whenNotMatchedInsert("s.state IS NOT NULL", values={n: f"s.{n}" for n in STATE.fieldNames()})
             .execute())
        if rows:
            self._replace(rows)

    def _replace(self, rows: Sequence[MirrorRow]) -> None:
        from delta.tables import DeltaTable

        from spark.rows import arrow_schema

        source = self.spark.createDataFrame(
            pa.Table.from_pylist([self._values(r) for r in rows], schema=arrow_schema(self._rows_schema)),
            self._rows_schema)
        layout = self.layout
        match = " AND ".join([f"t.{_quoted(c.name)} = s.{_quoted(c.name)}" for c in layout.partition_key]
                             + [f"t.{_quoted(c.name)} <=> s.{_quoted(c.name)}" for c in layout.clustering])
        values = {_quoted(n): f"s.{_quoted(n)}" for n in self.schema.fieldNames()}
        (DeltaTable.forPath(self.spark, self.mirror_path).alias("t").merge(source.alias("s"), match)
         .whenMatchedDelete(f"NOT s.{_quoted(_WRITE)}")
         .whenMatchedUpdate(set=values)
         .whenNotMatchedInsert(f"s.{_quoted(_WRITE)}", values=values)
         .execute())

    def _values(self, row: MirrorRow) -> dict[str, Any]:
        values = row_values(self.layout, self.columns, row, "Delta")
        return {**dict(zip(self.schema.fieldNames(), values)), _WRITE: row.values is not None}


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
