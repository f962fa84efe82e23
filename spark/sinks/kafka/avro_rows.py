"""Log rows and dead letters as Avro records, for the Kafka sink's `format=avro`: one record schema
per layout, made from the job's own Spark layout (`LOG_ROW`, `DEAD_LETTER`), so the two cannot drift.
A log row's record is made by Spark on the executors (`log_row_avro`, spark-avro's `to_avro`, whose bytes
are fastavro's to the byte); a dead letter's, by fastavro (`avro_datum`).

Avro names cannot hold `$`: `cdc$stream_id` is the field `cdc_stream_id`, its ScyllaDB name kept
in the field's `cql_name` (as the connector's events record a renamed column). Column values stay
JSON text (the `columns` map), as in every generic log; times are `timestamp-micros`.
"""
from __future__ import annotations

import functools
import json
from typing import Any

from pyspark.sql import Column, Row
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from schemas.avro.wire import frame_header
from spark import rows as R

NAMESPACE = "ringtail.log"
_PRIMITIVES = {StringType: "string", BinaryType: "bytes", BooleanType: "boolean", ByteType: "int",
               IntegerType: "int", LongType: "long"}


def avro_field_name(name: str) -> str:
    return name.replace("$", "_")


def _avro_type(data_type: DataType, name: str) -> Any:
    if isinstance(data_type, TimestampType):
        return {"type": "long", "logicalType": "timestamp-micros"}
    if isinstance(data_type, ArrayType):
        return {"type": "array", "items": _avro_type(data_type.elementType, name)}
    if isinstance(data_type, MapType):
        if not isinstance(data_type.keyType, StringType):
            raise TypeError(f"{name}: an Avro map needs string keys, not {data_type.keyType}")
        return {"type": "map", "values": _avro_type(data_type.valueType, name)}
    if isinstance(data_type, StructType):
        return record_schema(data_type, name[:1].upper() + name[1:])
    primitive = _PRIMITIVES.get(type(data_type))
    if primitive is None:
        raise TypeError(f"{name}: no Avro type for {data_type}")
    return primitive


def record_schema(layout: StructType, name: str) -> dict:
    """The Avro record of `layout`; a nullable field is a union with null, defaulting to it."""
    fields = []
    for f in layout.fields:
        avro_type = _avro_type(f.dataType, f.name)
        field = {"name": avro_field_name(f.name), "type": ["null", avro_type] if f.nullable else avro_type}
        if f.nullable:
            field["default"] = None
        if field["name"] != f.name:
            field["cql_name"] = f.name
        fields.append(field)
    return {"type": "record", "name": name, "namespace": NAMESPACE, "fields": fields}


def avro_datum(row: Row) -> dict:
    """A collected row as the datum of its layout's record (nested rows as dicts)."""
    return {avro_field_name(name): value for name, value in row.asDict(recursive=True).items()}


def log_row_avro(schema_id: int, record: dict) -> Column:
    """Each log row's record value: Confluent's header (magic byte, `schema_id`) and the row's datum of
    `record` (`record_schema(LOG_ROW)`, as registered), made by Spark on the executors. Through fastavro,
    a datum from each row's Python values took more of a Kafka task's time than all the rest of it."""
    return _log_row_avro(schema_id, json.dumps(record))


@functools.lru_cache(maxsize=32)
def _log_row_avro(schema_id: int, record: str) -> Column:
    """`log_row_avro`, built once per schema and reused by every batch (30–60 ms of calls into the driver's
    JVM a batch)."""
    from pyspark.sql.avro.functions import to_avro

    datum = F.struct(*(_not_null_inside(f).alias(avro_field_name(f.name)) for f in R.LOG_ROW.fields))
    return F.concat(F.lit(bytearray(frame_header(schema_id))), to_avro(datum, record))


def _not_null_inside(field: StructField) -> Column:
    """A log row's column with no null inside a map or array, as its record has none (Spark's layout allows
    them, and spark-avro warns, at every task, of the write that would fail on one): a map holds JSON texts,
    whose null is the JSON null; an array holds column names, none of them null."""
    column = F.col(f"`{field.name}`")
    if isinstance(field.dataType, MapType):
        return F.transform_values(column, lambda _, text: F.coalesce(text, F.lit("null")))
    if isinstance(field.dataType, ArrayType):
        return F.array_compact(column)
    return column
