"""Log rows, dead letters and generations as JSON, for the sinks that send JSON (HTTP, Kafka): column
values and deleted elements as the JSON they are, blobs as `0x…`, times as ISO 8601 UTC."""
from __future__ import annotations

import datetime as dt
import json
from typing import Any

from pyspark.sql import Row

from spark.streams.generations import Generations

from .contract import utc_time

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


def dead_letter_json(row: Row) -> dict:
    return {name: _json_value(value) for name, value in row.asDict().items()}


def generations_json(generations: Generations) -> list[dict]:
    return [{"time": _json_value(utc_time(g.timestamp)),
             "expired": None if g.expired is None else _json_value(utc_time(g.expired)),
             "ranges": [] if g.description is None else [
                 {"range_end": e.token_range_end, "streams": ["0x" + s.value.hex() for s in e.streams]}
                 for e in g.description.entries]}
            for g in generations.generations]
