"""Log rows, dead letters and generations as JSON, for the sinks that send JSON (Kafka, HTTP): column
values and deleted elements as the JSON they are, blobs as `0x…`, times as ISO 8601 UTC.

A log row's JSON text is made on the executors from the Arrow batch its task holds (`log_row_texts`): in the
native core when it is built (`schemas._native.log_row_texts`), its values' JSON texts set in place unparsed
but checked; else by `log_row_json`, the reference, which the tests hold the native core to (equal as JSON:
the native core writes a value's JSON text as the decoder made it, spaces and all)."""
from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Row

from spark.rows import column_address
from spark.streams.generations import Generations

from .contract import utc_time

try:
    from schemas._native import log_row_texts as _native_texts
except ImportError:  # made by the reference, as the job decodes (`spark.delivery.pipeline.decoder`)
    _native_texts = None

# Log-row columns whose values are JSON text.
_JSON_TEXT = {"key"}
_JSON_TEXT_MAPS = {"columns", "deleted_elements"}


class NotJsonError(ValueError):
    """A log row holds a value whose text is not JSON: it cannot be sent, and its batch fails naming its change."""

    def __init__(self, change_id: str | None) -> None:
        super().__init__(f"the log row of change {change_id} holds a value whose text is not JSON")
        self.change_id = change_id


def _json_value(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return "0x" + bytes(value).hex()
    if isinstance(value, dt.datetime):
        utc = dt.timezone.utc
        return (value.astimezone(utc) if value.tzinfo else value.replace(tzinfo=utc)).isoformat()
    if isinstance(value, Row):
        value = value.asDict()
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    return value


def log_row_json(row: Row | Mapping[str, Any]) -> dict:
    """The row (a Spark `Row`, or a dict as Arrow's `to_pylist` gives it) as JSON; a value's text that is not
    JSON raises `ValueError`."""
    out = {}
    for name, value in (row.asDict() if isinstance(row, Row) else row).items():
        if name in _JSON_TEXT:
            out[name] = _loads(value)
        elif name in _JSON_TEXT_MAPS:
            entries = value.items() if isinstance(value, Mapping) else value or ()  # Arrow gives a map's pairs
            out[name] = {k: _loads(v) for k, v in entries}
        else:
            out[name] = _json_value(value)
    return out


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def log_row_texts(rows: pa.RecordBatch) -> pa.Array:
    """Each log row's JSON text (`log_row_json`'s, without spaces) of the columns `rows` has; a row holding a
    value's text that is not JSON raises `NotJsonError`, naming the first such row's change."""
    if _native_texts is None:
        texts = []
        for row in rows.to_pylist():
            try:  # ASCII: a value may hold a lone surrogate (`"\ud800"`), which UTF-8 cannot
                texts.append(json.dumps(log_row_json(row), separators=(",", ":")))
            except ValueError:
                raise NotJsonError(row.get("change_id")) from None
        return pa.array(texts, pa.string())
    held: list[pa.Array] = []  # alive for the call: the native core reads their buffers by address
    specs = [spec for name, column in zip(rows.schema.names, rows.columns)
             for spec in _specs(name, column, held, name in _JSON_TEXT, name in _JSON_TEXT_MAPS)]
    made = _native_texts(specs, rows.num_rows)
    if isinstance(made, int):
        raise NotJsonError(rows.column("change_id")[made].as_py() if "change_id" in rows.schema.names else None)
    offsets, data = made
    return pa.Array.from_buffers(pa.string(), rows.num_rows, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _specs(name: str, array: pa.Array, held: list[pa.Array], json_text: bool = False, json_map: bool = False
           ) -> list[tuple]:
    """The native core's `JsonFieldSpec`s of a column: its own, then (a struct's) its fields'."""
    kind = array.type
    if json_text:
        return [(name, "json", [column_address(array)], 0)]
    if json_map:
        return [(name, "json_map", [_validity(array), column_address(array.offsets), column_address(array.keys),
                                    column_address(array.items)], 0)]
    if pa.types.is_struct(kind):
        fields = [spec for i in range(kind.num_fields) for spec in _specs(kind.field(i).name, array.field(i), held)]
        return [(name, "row", [_validity(array)], kind.num_fields), *fields]
    if pa.types.is_list(kind) and pa.types.is_string(kind.value_type):
        return [(name, "text_list", [_validity(array), column_address(array.offsets), column_address(array.values)],
                 0)]
    if pa.types.is_string(kind):
        return [(name, "text", [column_address(array)], 0)]
    if pa.types.is_binary(kind):
        return [(name, "hex", [column_address(array)], 0)]
    if pa.types.is_timestamp(kind):
        number, array = "time", pc.cast(pc.cast(array, pa.timestamp("us", kind.tz)), pa.int64())
    elif pa.types.is_boolean(kind):
        number, array = "boolean", pc.cast(array, pa.int64())
    elif pa.types.is_integer(kind):
        number, array = "integer", pc.cast(array, pa.int64())
    else:
        raise TypeError(f"column {name}: no JSON text for Arrow type {kind}")
    held.append(array)
    return [(name, number, [column_address(array)], 0)]


def _validity(array: pa.Array) -> tuple[int, int, int, int, int, int]:
    """A nested column's own validity, as a column address (`column_address`) without values."""
    bits = array.buffers()[0]
    return (bits.address if bits is not None and array.null_count else 0, 0, 0, 0, array.offset, len(array))


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
