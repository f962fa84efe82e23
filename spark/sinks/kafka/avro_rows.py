"""Log rows and dead letters as Avro records, for the Kafka sink's `format=avro`: one record schema
per layout, made from the job's own Spark layout (`LOG_ROW`, `DEAD_LETTER`), so the two cannot drift.

Avro names cannot hold `$`: `cdc$stream_id` is the field `cdc_stream_id`, its ScyllaDB name kept
in the field's `cql_name` (as the connector's events record a renamed column). Column values stay
JSON text (the `columns` map), as in every generic log; times are `timestamp-micros`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import Row
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
    StructType,
    TimestampType,
)

from schemas.avro.wire import frame
from spark import rows as R

from .records import RECORDS

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


# LOG_ROW's map columns: Arrow gives a map as (key, value) pairs, Avro takes an object.
_MAPS = tuple(f.name for f in R.LOG_ROW.fields if isinstance(f.dataType, MapType))


@dataclass(frozen=True)
class AvroLogRows:
    """A batch of log rows (`LOG_ROW` and the `LATE` flag) → `RECORDS`, each value the row's Avro datum
    framed with `schema_id`; on the executors, picklable. The datums are read from the Arrow batch itself
    (`to_pylist`), without a Spark `Row` per row: half the time a row took that way."""

    schema_id: int
    parsed: dict  # the record schema, parsed by fastavro

    def __call__(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        log = batch.drop_columns([R.LATE])
        datums = log.rename_columns([avro_field_name(n) for n in log.schema.names]).to_pylist()
        for datum in datums:
            for name in _MAPS:
                datum[name] = dict(datum[name])
        values = pa.array([frame(self.schema_id, self.parsed, d) for d in datums], pa.binary())
        return pa.RecordBatch.from_arrays([batch.column("partition_key"), values, batch.column("change_id"),
                                           batch.column(R.LATE)], schema=RECORDS)
