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

Two ways make the same rows. `TypedLog.frame` makes them with Spark's own functions: each value's JSON
text parsed in the JVM (`from_json`, failing fast on a value that does not fit) and brought to its
Spark type there, with no Python per row. `TypedLog.row` makes them in Python, through the CQL type
layer the Cassandra sink uses (`cql_values`): it is the reference the tests hold the first to, and it
names the change when a value does not fit, for it is what a batch falls back to when the JVM refuses
one of its values (`TYPED_REFUSALS`).
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pyarrow as pa
from cassandra.query import UNSET_VALUE
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, ByteType, DataType, DateType, DoubleType,
                               FloatType, IntegerType, LongType, MapType as SparkMap, ShortType, StringType,
                               StructField, StructType, TimestampType)

from schemas.avro.types import varint_text
from schemas.cql import CqlType, Kind, ListType, MapType, SetType, TupleType, UserType, VectorType, parse_type

from .log_table import (DELETED_ELEMENTS, METADATA, STREAM_ID, TYPED_FIELDS, LogLayout, LogRowEncoder,
                        other_columns)

Convert = Callable[[Any], Any]
CQL_TYPE = "cql_type"  # each column's metadata: its CQL type, so a log outlives its base table
# Columns the base table no longer lists (dropped before their rows were written): name → the value's
# JSON text, null when the row deleted the column, `cdc$deleted_elements_<name>` → the keys removed.
OTHER_COLUMNS = "cdc$other_columns"


class TypedLogError(ValueError):
    """A log row whose values do not fit its table's column types: which row, and why."""


def change_name(layout: LogLayout, log_row: Mapping[str, Any]) -> str:
    """How a `TypedLogError` names a log row: its table, change id and `cdc$time`."""
    return f"{layout.keyspace}.{layout.base}: change {log_row.get('change_id')} (cdc$time {log_row.get('cdc$time')})"


# Spark's error classes for a value `TypedLog.frame` will not take: the JSON parser's (failing fast) and
# `raise_error`'s. A batch they stop is made again by `TypedLog.row`, which names the change.
TYPED_REFUSALS = ("MALFORMED_RECORD_IN_PARSING", "USER_RAISED_EXCEPTION")
_FAIL_FAST = {"mode": "FAILFAST"}


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


ColumnOf = Callable[[Column], Column]


def _json_form(cql: CqlType) -> tuple[DataType, ColumnOf | None]:
    """(The Spark type `from_json` reads the log's JSON form of a `cql` value into, the function from that
    to the typed log's value; None: it is that already). A tuple's elements and a map's key and value
    differ in type, so they are read as JSON texts, each read again as its own type (`_element`)."""
    if isinstance(cql, (ListType, SetType, VectorType)):
        element_type, element = _json_form(cql.element)
        return ArrayType(element_type), None if element is None else (lambda c: F.transform(c, element))
    if isinstance(cql, MapType):
        key, value = _element(cql.key), _element(cql.value)

        def entries(c: Column) -> Column:
            return F.transform(c, lambda pair: F.struct(key(F.get(pair, 0)).alias("key"),
                                                         value(F.get(pair, 1)).alias("value")))

        pairs = ArrayType(ArrayType(StringType()))
        return (pairs, entries) if _holds_map(typed(cql.key)[0]) else (pairs, lambda c: F.map_from_entries(entries(c)))
    if isinstance(cql, TupleType):
        elements = [_element(t) for t in cql.elements]
        return ArrayType(StringType()), lambda c: F.when(c.isNotNull(), F.struct(
            *(element(F.get(c, i)).alias(f"_{i + 1}") for i, element in enumerate(elements))))
    if isinstance(cql, UserType):
        fields = [(name, *_json_form(t)) for name, t in zip(cql.field_names, cql.field_types)]
        struct = StructType([StructField(name, data_type) for name, data_type, _ in fields])
        if all(convert is None for _, _, convert in fields):
            return struct, None
        return struct, lambda c: F.when(c.isNotNull(), F.struct(
            *(_applied(convert, c.getField(name)).alias(name) for name, _, convert in fields)))
    if cql.kind is Kind.BLOB:
        return StringType(), _blob
    if cql.kind is Kind.TIMESTAMP:
        return LongType(), F.timestamp_millis
    if cql.kind is Kind.DATE:
        return IntegerType(), F.date_from_unix_date
    return typed(cql)[0], None  # the JSON form is the value: text, numbers, booleans, a duration's object


def _applied(convert: ColumnOf | None, c: Column) -> Column:
    return c if convert is None else convert(c)


def _blob(text: Column) -> Column:
    raw = F.unhex(F.substring(text, 3, 1 << 30))
    return F.when(text.isNull(), raw).when(text.startswith("0x") & raw.isNotNull(), raw).otherwise(
        F.raise_error(F.lit("a blob's JSON form is 0x and hex digits")))


def _element(cql: CqlType) -> ColumnOf:
    """The function from an element's JSON text, as `from_json` gives it for a string (a string's own text,
    a value of any other type as JSON), to its typed value."""
    data_type, convert = _json_form(cql)
    if data_type == StringType():
        return lambda text: _applied(convert, text)
    return lambda text: _parsed(data_type, convert, text)


def _parsed(data_type: DataType, convert: ColumnOf | None, text: Column) -> Column:
    """A JSON text parsed as `data_type` (as an array of one, for `from_json` reads no lone values), then
    converted."""
    one = F.from_json(F.concat(F.lit("["), text, F.lit("]")), ArrayType(data_type), _FAIL_FAST)
    return _applied(convert, F.get(one, 0))


def _column(cql: CqlType, text: Column) -> Column:
    """A data column's value from its JSON text. A map keyed by text-like values may come as an object:
    the log gives a non-frozen list (a map by timeuuid in its layout) as one."""
    value = _parsed(*_json_form(cql), text)
    if not isinstance(cql, MapType):
        return value
    key_type, key = _json_form(cql.key)
    if key_type != StringType():
        return value
    value_type, convert = _json_form(cql.value)
    entries = F.from_json(text, SparkMap(StringType(), value_type), _FAIL_FAST)
    if key is not None:
        entries = F.transform_keys(entries, lambda k, _: key(k))
    if convert is not None:
        entries = F.transform_values(entries, lambda _, v: convert(v))
    return F.when(text.startswith("{"), entries).otherwise(value)


def _deleted_fields(fields: tuple[str, ...], text: Column) -> Column:
    """A UDT's deleted fields, which the log names, as the indices a typed log holds."""
    names = F.array(*(F.lit(name) for name in fields))

    def index(name: Column) -> Column:
        position = F.array_position(names, name)  # 1-based, 0: no such field
        return F.when(position > 0, (position - 1).cast("short")).otherwise(F.raise_error(F.lit("no such UDT field")))

    return F.transform(F.from_json(text, ArrayType(StringType()), _FAIL_FAST), index)


def _other_columns(known: frozenset[str]) -> Column:
    """`other_columns` of a row, as a column: null when it has none."""
    names = F.array(*(F.lit(n) for n in sorted(known))).cast("array<string>")
    unknown = lambda name: ~F.array_contains(names, name)  # noqa: E731
    empty = F.create_map().cast("map<string,string>")
    values = F.coalesce(F.col("columns"), empty)
    deleted = F.filter(F.coalesce(F.col("deleted_columns"), F.array().cast("array<string>")),
                       lambda n: unknown(n) & ~F.array_contains(F.map_keys(values), n))
    other = F.map_concat(
        F.map_filter(values, lambda name, _: unknown(name)),
        F.map_from_arrays(deleted, F.transform(deleted, lambda _: F.lit(None).cast("string"))),
        F.transform_keys(F.map_filter(F.coalesce(F.col("deleted_elements"), empty), lambda name, _: unknown(name)),
                         lambda name, _: F.concat(F.lit(DELETED_ELEMENTS), name)))
    return F.when(F.size(other) > 0, other)


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

    def frame(self, rows: DataFrame) -> DataFrame:
        """LOG_ROW rows of this layout's table as rows of `schema`, made in the JVM."""
        return rows.select(*self._columns)

    @functools.cached_property
    def _columns(self) -> list[Column]:
        """`frame`'s columns: planned once per log, for a batch's fresh rows and its late ones alike."""
        layout = self.layout
        udts = {u.name: u for u in layout.user_types}
        cql = lambda type_text: parse_type(type_text, udts, layout.keyspace)  # noqa: E731
        key_types = [(name, *_json_form(cql(t))) for name, t in layout.key_columns]
        key = F.from_json("key", StructType([StructField(n, t) for n, t, _ in key_types]), _FAIL_FAST)
        out: dict[str, Column] = {}
        for name, type_text in METADATA:
            out[name] = F.col(f"`{name}`").cast(typed(parse_type(type_text))[0])
        stream = out[STREAM_ID]
        out[STREAM_ID] = F.when(stream.isNotNull(), stream).otherwise(
            F.raise_error(F.lit("a log row without a stream id")))
        for name, _, convert in key_types:
            out[name] = _applied(convert, key.getField(name))
        for column in layout.data_columns:
            out[column.name] = _column(cql(column.type), F.try_element_at("columns", F.lit(column.name)))
            out[column.deleted] = F.when(F.array_contains("deleted_columns", column.name), F.lit(True))
            if column.elements_type is not None:
                removed = F.try_element_at("deleted_elements", F.lit(column.name))
                out[column.deleted_elements] = (
                    _parsed(*_json_form(cql(column.elements_type)), removed) if column.udt_fields is None
                    else _deleted_fields(column.udt_fields, removed))
        out[OTHER_COLUMNS] = _other_columns(self._known)
        # Cast to the schema's types, which differ at most in nullability (a transform's elements are never
        # null): both ways give the log one schema.
        return [out[f.name].cast(f.dataType).alias(f.name, metadata=f.metadata) for f in self.schema.fields]

    def row(self, log_row: dict, encoder: LogRowEncoder) -> dict[str, Any]:
        try:
            values = encoder.encode(log_row)[:-1]  # the write time last: it is in cdc$time
            out = {f.name: None if v is UNSET_VALUE else convert(v)
                   for f, convert, v in zip(self.schema.fields, self._converts, values)}
        except Exception as exc:
            raise TypedLogError(f"{change_name(self.layout, log_row)} does not fit the typed log:"
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
