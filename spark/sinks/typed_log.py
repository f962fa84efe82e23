"""A base table's CDC log with its columns in their own types, for Spark tables (Delta's `typed` layout).

The layout is ScyllaDB's CDC log, as the Cassandra sink writes it (`log_table.LogLayout`): the
`cdc$` metadata, the primary key, each non-key column (a non-frozen list as a map from element
timeuuid to value), `cdc$deleted_X` and, for a multi-cell `X`, `cdc$deleted_elements_X`. Each CQL
type becomes a Spark type:

| CQL | Spark |
|---|---|
| ascii, text, varchar | string |
| tinyint, smallint, int, bigint | byte, short, int, long |
| float, double, boolean, blob | float, double, boolean, binary |
| timestamp, date | timestamp (UTC), date |
| time | long: nanoseconds since midnight |
| uuid, timeuuid, inet | string |
| varint, decimal | string: the exact value (Spark's decimal holds 38 digits at a fixed scale) |
| duration | struct of months, days, nanoseconds |
| list, set, vector | array |
| map | map; array of (key, value) structs when the key holds a map (Spark cannot key by one) |
| tuple | struct of `_1`, `_2`, … |
| user type | struct of its fields, by CQL name |

A column the base table no longer lists (dropped before its rows were written) has no type to be
written in: its values are kept as JSON text in `cdc$other_columns`. A value that does not fit its
column's type fails the micro-batch with the change it belongs to (`TypedLogError`); nothing is skipped.

Rows are converted on the executors (`mapInArrow`) by the CQL type layer the Cassandra sink uses
(`cql_values`), then into Arrow values here.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
from cassandra.query import UNSET_VALUE
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, ByteType, DataType, DateType, DoubleType,
                               FloatType, IntegerType, LongType, MapType as SparkMap, ShortType, StringType,
                               StructField, StructType, TimestampType)

from schemas.avro.types import varint_text
from schemas.cql import CqlType, Kind, ListType, MapType, SetType, TupleType, UserType, VectorType, parse_type

from .log_table import METADATA, TYPED_FIELDS, LogLayout, LogRowEncoder, other_columns

Convert = Callable[[Any], Any]
CQL_TYPE = "cql_type"  # each column's metadata: its CQL type, so a log outlives its base table
# Columns the base table no longer lists (dropped before their rows were written): name → the value's
# JSON text, null when the row deleted the column, `cdc$deleted_elements_<name>` → the keys removed.
OTHER_COLUMNS = "cdc$other_columns"


class TypedLogError(ValueError):
    """A log row whose values do not fit its table's column types: which row, and why."""


_INTEGERS = {8: ByteType(), 16: ShortType(), 32: IntegerType(), 64: LongType()}
_NATIVE: dict[Kind, tuple[DataType, Convert]] = {
    Kind.TEXT: (StringType(), str), Kind.BOOLEAN: (BooleanType(), bool), Kind.BLOB: (BinaryType(), bytes),
    Kind.TIMESTAMP: (TimestampType(), lambda ms: ms * 1000),  # Arrow's timestamp[us, UTC] from an int
    Kind.DATE: (DateType(), lambda d: d.days_from_epoch),  # Arrow's date32 from days since the epoch
    Kind.TIME: (LongType(), lambda t: t.nanosecond_time),
    Kind.UUID: (StringType(), str), Kind.INET: (StringType(), str),
    Kind.VARINT: (StringType(), varint_text), Kind.DECIMAL: (StringType(), str),
    Kind.DURATION: (StructType([StructField("months", IntegerType()), StructField("days", IntegerType()),
                                StructField("nanoseconds", LongType())]),
                    lambda d: {"months": d.months, "days": d.days, "nanoseconds": d.nanoseconds}),
}


def spark_type(cql: CqlType) -> DataType:
    """The Spark type of a log column of CQL type `cql`."""
    return typed(cql)[0]


def typed(cql: CqlType) -> tuple[DataType, Convert]:
    """(The Spark type of `cql`, the function from its driver value (as `cql_values` makes it) to the
    value Arrow takes for that type; None stays None), built in one walk of the type."""
    data_type, convert = _typed(cql)
    return data_type, _nullable(convert)


def _nullable(convert: Convert) -> Convert:
    return lambda value: None if value is None else convert(value)


def _typed(cql: CqlType) -> tuple[DataType, Convert]:
    if isinstance(cql, (ListType, SetType, VectorType)):
        element_type, element = typed(cql.element)
        return ArrayType(element_type), lambda values: [element(v) for v in values]
    if isinstance(cql, MapType):
        (key_type, key), (value_type, value) = typed(cql.key), typed(cql.value)

        def pairs(mapping) -> list[tuple[Any, Any]]:  # a dict, or the driver's PairMap of unhashable keys
            return [(key(k), value(v)) for k, v in mapping.items()]

        if _holds_map(key_type):
            entry = StructType([StructField("key", key_type), StructField("value", value_type)])
            return ArrayType(entry), lambda mapping: [{"key": k, "value": v} for k, v in pairs(mapping)]
        return SparkMap(key_type, value_type), pairs
    if isinstance(cql, TupleType):
        names = [f"_{i}" for i in range(1, len(cql.elements) + 1)]
        types, elements = zip(*(typed(e) for e in cql.elements))
        struct = StructType([StructField(n, t) for n, t in zip(names, types)])
        return struct, lambda value: {n: c(v) for n, c, v in zip(names, elements, value)}
    if isinstance(cql, UserType):
        names = list(cql.field_names)
        types, fields = zip(*(typed(t) for t in cql.field_types))
        struct = StructType([StructField(n, t) for n, t in zip(names, types)])
        # A UDT value binds by index; fields past its end (the type grew since) read as null.
        return struct, lambda value: {n: c(value[i]) for i, (n, c) in enumerate(zip(names, fields))}
    if cql.kind is Kind.INTEGER:
        return _INTEGERS[cql.bits], int
    if cql.kind is Kind.FLOAT:
        return (FloatType() if cql.bits == 32 else DoubleType()), float
    try:
        return _NATIVE[cql.kind]
    except KeyError:
        raise TypeError(f"no Spark type for CQL type {cql.cql}") from None


def _holds_map(data_type: DataType) -> bool:
    if isinstance(data_type, SparkMap):
        return True
    if isinstance(data_type, ArrayType):
        return _holds_map(data_type.elementType)
    if isinstance(data_type, StructType):
        return any(_holds_map(f.dataType) for f in data_type.fields)
    return False


def typed_source(rows: DataFrame) -> DataFrame:
    """Log rows with only the columns a typed log's row is made from (`TYPED_FIELDS`): what the tasks that
    make typed rows are given, in Delta, PostgreSQL and MySQL."""
    return rows.select(*(F.col(f"`{name}`") for name in TYPED_FIELDS))


class TypedLog:
    """The Spark schema of a layout's log and the `mapInArrow` function filling it from LOG_ROW rows."""

    def __init__(self, layout: LogLayout) -> None:
        self.layout = layout
        udts = {u.name: u for u in layout.user_types}
        metadata = dict(METADATA)
        fields, converts = [], []
        for name, type_text in layout.columns().items():
            if name in metadata:
                data_type, convert = typed(parse_type(type_text))
                convert = _nullable(convert)
            else:
                data_type, convert = typed(parse_type(type_text, udts, layout.keyspace))
            fields.append(StructField(name, data_type, metadata={CQL_TYPE: type_text}))
            converts.append(convert)
        fields.append(StructField(OTHER_COLUMNS, SparkMap(StringType(), StringType())))
        self.schema = StructType(fields)
        self._converts = converts
        self._known = layout.data_names

    @classmethod
    def of_schema(cls, keyspace: str, base: str, schema: StructType, user_types) -> TypedLog:
        """The typed log an existing table has, from its columns' CQL types (their metadata)."""
        columns = {f.name: f.metadata[CQL_TYPE] for f in schema.fields if CQL_TYPE in f.metadata}
        return cls(LogLayout.of_log_table(keyspace, base, columns, user_types))

    def row(self, log_row: dict, encoder: LogRowEncoder) -> dict[str, Any]:
        try:
            values = encoder.encode(log_row)[:-1]  # the write time last: it is in cdc$time
            out = {f.name: None if v is UNSET_VALUE else convert(v)
                   for f, convert, v in zip(self.schema.fields, self._converts, values)}
        except Exception as exc:
            raise TypedLogError(f"{self.layout.keyspace}.{self.layout.base}: change {log_row.get('change_id')}"
                                f" (cdc$time {log_row.get('cdc$time')}) does not fit the typed log:"
                                f" {type(exc).__name__}: {exc}") from exc
        out[OTHER_COLUMNS] = list(other_columns(log_row, self._known).items()) or None
        return out

    def encode(self) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
        """The `mapInArrow` function: LOG_ROW batches of this layout's table → batches of `schema`."""
        from spark.rows import arrow_schema

        layout, schema = self.layout, arrow_schema(self.schema)

        def encode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            typed, encoder = TypedLog(layout), LogRowEncoder(layout)
            for batch in batches:
                yield pa.RecordBatch.from_pylist([typed.row(r, encoder) for r in batch.to_pylist()], schema=schema)

        return encode
