"""What a subscription delivers of its table's log rows: the operations, a filter, the columns, and
the changes written from its start on. The job delivers everything (`Selection()`).

The filter is a Spark SQL boolean expression over the log row (`cdc$operation`, `write_time`, `key`…)
and over each column of the table as a column of its own — numbers, booleans and text typed, other
types as their JSON text — so `qty > 5 AND note LIKE 'a%'` reads as written. A column whose name is
also a log-row column (`key`, `columns`…) is reached as `columns['name']`. A deletion carries no
values, so `qty > 5` is false for it: add `OR cdc$operation BETWEEN 3 AND 8` to keep deletions. The rows of a
snapshot (operation `read`) go through the filter and the columns like any other; the operations
choose among changes only.

Applied inside the micro-batch, after the replica copies are removed, so a changed filter or column
list never changes the streaming query's state and the checkpoint stays valid across alters.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from schemas.cql import NATIVE_TYPES, Kind
from spark import rows as R

OPERATION_CODES = {
    "insert": (R.ROW_INSERT,),
    "update": (R.ROW_UPDATE,),
    "delete": (R.ROW_DELETE, R.PARTITION_DELETE, R.RANGE_DELETE_START_INCLUSIVE, R.RANGE_DELETE_START_EXCLUSIVE,
               R.RANGE_DELETE_END_INCLUSIVE, R.RANGE_DELETE_END_EXCLUSIVE),
}
# The Spark type a column of a native type of these kinds has in the filter; any other is its JSON text.
_FILTER_TYPES = {Kind.INTEGER: "bigint", Kind.DATE: "bigint", Kind.TIME: "bigint", Kind.VARINT: "decimal(38,0)",
                 Kind.FLOAT: "double", Kind.DECIMAL: "double", Kind.BOOLEAN: "boolean"}
_LOG_ROW_NAMES = frozenset(f.name for f in R.LOG_ROW.fields)


@dataclass(frozen=True)
class Selection:
    operations: tuple[str, ...] = tuple(OPERATION_CODES)
    filter: str | None = None
    columns: tuple[str, ...] | None = None  # None: every column
    key_columns: tuple[str, ...] = ()
    column_types: Mapping[str, str] = field(default_factory=dict)  # CQL type of each column, for the filter
    start_us: int | None = None  # changes written before it are not delivered…
    # …unless they reached Kafka this long after it (a write with an old client timestamp made later).
    start_grace_us: int = 60_000_000

    @property
    def everything(self) -> bool:
        return (set(self.operations) == set(OPERATION_CODES) and self.filter is None and self.columns is None
                and self.start_us is None)

    def apply(self, rows: DataFrame) -> DataFrame:
        """`rows` (in the `LOG_ROW` layout) that this selection delivers, projected."""
        if self.everything:
            return rows
        if set(self.operations) != set(OPERATION_CODES):
            # A snapshot's rows are the table as it was, not changes: the operations leave them be.
            codes = [R.ROW_READ, *(c for op in self.operations for c in OPERATION_CODES[op])]
            rows = rows.where(F.col("`cdc$operation`").isin(codes))
        if self.start_us is not None:
            grace = F.timestamp_micros(F.lit(self.start_us + self.start_grace_us))
            rows = rows.where((F.col("write_time_us") >= self.start_us) | (F.col("kafka_time") >= grace))
        if self.filter is not None:
            values = [self._value(name).alias(name) for name in self.column_types if name not in _LOG_ROW_NAMES]
            rows = rows.select("*", *values).where(F.expr(self.filter)).select(*(rows[f"`{c}`"] for c in rows.columns))
        if self.columns is not None:
            rows = self._project(rows)
        return rows

    def _value(self, name: str) -> Column:
        path = "$['" + name.replace("\\", "\\\\").replace("'", "\\'") + "']"
        text = (F.get_json_object(F.col("key"), path) if name in self.key_columns
                else F.get_json_object(F.col("columns")[name], "$"))
        native = NATIVE_TYPES.get(self.column_types[name])
        kind = native.kind if native is not None else None
        if kind is Kind.TIMESTAMP:
            return F.timestamp_millis(text.cast("bigint"))
        return text.cast(_FILTER_TYPES.get(kind, "string"))

    def _project(self, rows: DataFrame) -> DataFrame:
        """Only the key and the named columns; an update left with nothing to say is not delivered."""
        keep = F.array(*(F.lit(c) for c in self.columns))
        rows = (rows.withColumn("columns", F.map_filter("columns", lambda k, _: F.array_contains(keep, k)))
                .withColumn("deleted_columns", F.filter("deleted_columns", lambda c: F.array_contains(keep, c)))
                .withColumn("deleted_elements",
                            F.map_filter("deleted_elements", lambda k, _: F.array_contains(keep, k))))
        empty = ((F.col("`cdc$operation`") == R.ROW_UPDATE) & (F.size("columns") == 0)
                 & (F.size("deleted_columns") == 0) & (F.size("deleted_elements") == 0))
        return rows.where(~empty)
