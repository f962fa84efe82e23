"""Log rows, dead letters and generations as JSON, for the sinks that send JSON (HTTP, Kafka): column
values and deleted elements as the JSON they are, blobs as `0x…`, times as ISO 8601 UTC.

A log row's JSON is made by Spark on the executors (`log_row_json_text`): its JSON texts set in place,
nothing parsed, the columns Spark's JSON writer writes as they are in one `to_json` per run of them, each
other column by an expression of its own. `log_row_json` makes it in Python: the reference the tests hold
Spark's to (equal as JSON: Python escapes what is not ASCII, Spark does not), as dead letters are made."""
from __future__ import annotations

import datetime as dt
import functools
import itertools
import json
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, Row
from pyspark.sql import functions as F
from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, ByteType, DataType, IntegerType, LongType, MapType,
                               ShortType, StringType, StructField, StructType, TimestampType)

from spark.rows import column_address
from spark.streams.generations import Generations

from .contract import utc_time

try:
    from schemas._native import first_not_json as _first_not_json
except ImportError:  # checked in Python, as the job decodes (`spark.delivery.pipeline.decoder`)
    _first_not_json = None

# Spark types whose JSON Spark's writer makes as `_json_value` does (not floats: it writes 1.0E10 and "NaN").
_AS_IS = (StringType, ByteType, ShortType, IntegerType, LongType, BooleanType)
# Log-row columns whose values are JSON text.
_JSON_TEXT = {"key"}
_JSON_TEXT_MAPS = {"columns", "deleted_elements"}


def _json_value(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return "0x" + bytes(value).hex()
    if isinstance(value, dt.datetime):
        return (value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)).isoformat()
    if isinstance(value, Row):
        return {k: _json_value(v) for k, v in value.asDict().items()}
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    return value


def log_row_json(row: Row, omit: str | None = None) -> dict:
    """The row as JSON, without the column `omit` (a flag the sink carries elsewhere)."""
    out = {}
    for name, value in row.asDict().items():
        if name == omit:
            continue
        if name in _JSON_TEXT:
            out[name] = json.loads(value)
        elif name in _JSON_TEXT_MAPS:
            out[name] = {k: json.loads(v) for k, v in (value or {}).items()}
        else:
            out[name] = _json_value(value)
    return out


def quoted_text(text: Column) -> Column:
    """A string, number or boolean as its JSON text, null as null (Spark's JSON writer escapes a string)."""
    array = F.to_json(F.array(text))  # ["…"]
    return array.substr(F.lit(2), F.length(array) - 2)


def json_object(texts: Column) -> Column:
    """A map of JSON texts as the text of the JSON object of their values (`{}` for none)."""
    members = F.transform(F.map_entries(texts), lambda e: F.concat(
        quoted_text(e["key"]), F.lit(":"), F.coalesce(e["value"], F.lit("null"))))
    return F.coalesce(F.concat(F.lit("{"), F.array_join(members, ","), F.lit("}")), F.lit("{}"))


def _iso_time(time: Column) -> Column:
    """A timestamp as Python's `isoformat` of it in UTC writes it (no fraction when it has no microsecond)."""
    utc = F.to_utc_timestamp(time, F.current_timezone())  # rendered in the session's zone, as UTC
    whole = F.unix_micros(time) % 1_000_000 == 0
    return F.concat(F.lit('"'), F.when(whole, F.date_format(utc, "yyyy-MM-dd'T'HH:mm:ss"))
                    .otherwise(F.date_format(utc, "yyyy-MM-dd'T'HH:mm:ss.SSSSSS")), F.lit('+00:00"'))


def _written_as_is(kind: DataType) -> bool:
    """Whether Spark's JSON writer writes values of `kind` as `_json_value` does: text, integers, booleans,
    and arrays and structs of them."""
    if isinstance(kind, ArrayType):
        return _written_as_is(kind.elementType)
    if isinstance(kind, StructType):
        return all(_written_as_is(f.dataType) for f in kind.fields)
    return isinstance(kind, _AS_IS)


def _json_of(value: Column, kind: DataType, name: str | None = None) -> Column:
    """The JSON text of a value of Spark type `kind` as `_json_value` makes it (`name`: a log-row column,
    whose JSON texts go in as they are)."""
    if name in _JSON_TEXT:
        return F.coalesce(value, F.lit("null"))
    if name in _JSON_TEXT_MAPS:
        return json_object(value)
    if isinstance(kind, BinaryType):
        made = F.concat(F.lit('"0x'), F.lower(F.hex(value)), F.lit('"'))
    elif isinstance(kind, TimestampType):
        made = _iso_time(value)
    elif isinstance(kind, StructType):
        made = _json_members(value, kind)
    elif isinstance(kind, (ArrayType, MapType)):
        made = F.to_json(value)
    else:
        return quoted_text(value)
    return F.when(value.isNull(), F.lit("null")).otherwise(made)


def _json_members(struct: Column | None, kind: StructType, omit: str | None = None) -> Column:
    """The JSON object of the fields of `kind` (of `struct`, or a frame's columns when None) but `omit`, in
    their order. A run of fields Spark's JSON writer writes as they are is one `to_json` of them, not one per
    value (`quoted_text`): the text in 0.8-0.9x the time."""
    def value(f: StructField) -> Column:
        return F.col(f"`{f.name}`") if struct is None else struct.getField(f.name)

    def as_is(f: StructField) -> bool:
        return (struct is not None or f.name not in _JSON_TEXT | _JSON_TEXT_MAPS) and _written_as_is(f.dataType)

    members = []
    for plain, run in itertools.groupby((f for f in kind.fields if f.name != omit), key=as_is):
        if plain:
            written = F.to_json(F.struct(*(value(f).alias(f.name) for f in run)), {"ignoreNullFields": "false"})
            members.append(written.substr(F.lit(2), F.length(written) - 2))  # its members, without the braces
        else:
            members += [F.concat(F.lit(json.dumps(f.name) + ":"), _json_of(value(f), f.dataType,
                                                                            f.name if struct is None else None))
                        for f in run]
    return F.concat(F.lit("{"), F.concat_ws(",", *members), F.lit("}"))


@functools.lru_cache(maxsize=32)
def log_row_json_text(schema: StructType, omit: str | None = None) -> Column:
    """The JSON text of each log row of a frame of `schema` (`log_row_json`'s value), without the column
    `omit`; made by Spark, on the executors. Built once per schema and reused by every batch: building it
    is over a thousand calls into the driver's JVM, 0.2–0.4 s a batch here."""
    return _json_members(None, schema, omit)


def first_not_json(texts: pa.Array) -> int | None:
    """The row of the first of a batch's JSON texts (`log_row_json_text`) that is not JSON (`is_json`; nor is
    a null); None when all are. Checked in the native core when it is built, without building what each text
    holds as `json.loads` does: that was half of a Kafka sink task's Python time."""
    if texts.type != pa.string():
        texts = texts.cast(pa.string())
    if _first_not_json is not None:
        return _first_not_json(column_address(texts))
    return next((row for row, text in enumerate(texts.to_pylist()) if text is None or not is_json(text)), None)


def not_json(texts: pa.Array, change_ids: pa.Array) -> str | None:
    """Why a batch's JSON texts cannot be sent (`first_not_json`), naming the change whose row fails; None
    when every one is JSON."""
    wrong = first_not_json(texts)
    if wrong is None:
        return None
    return f"the log row of change {change_ids[wrong].as_py()} holds a value whose text is not JSON"


def is_json(text: str) -> bool:
    """Whether a row's JSON text (`log_row_json_text`) is JSON: not when a value's text is not, which Spark
    set in place unread (the Python encoding raised on it; so do the sinks, naming the change: `not_json`).
    The reference `first_not_json` is held to, and its check without the native core. Checked where the
    text is sent: as a Spark expression (`from_json`) the check cost more than making the text in Spark
    saved."""
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def dead_letter_json(row: Row) -> dict:
    return {name: _json_value(value) for name, value in row.asDict().items()}


def resolved_json(rows: list[tuple]) -> list[dict]:
    """`resolved_rows` as JSON objects (the time in ISO 8601, with its µs beside it)."""
    return [{"app_id": app_id, "keyspace": keyspace, "table": table, "resolved": _json_value(time),
             "resolved_us": time_us} for app_id, keyspace, table, time, time_us in rows]


def generations_json(generations: Generations) -> list[dict]:
    return [{"time": _json_value(utc_time(g.timestamp)),
             "expired": None if g.expired is None else _json_value(utc_time(g.expired)),
             "ranges": [] if g.description is None else [
                 {"range_end": e.token_range_end, "streams": ["0x" + s.value.hex() for s in e.streams]}
                 for e in g.description.entries]}
            for g in generations.generations]
