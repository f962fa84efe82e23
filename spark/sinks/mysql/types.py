"""CQL values in MySQL and MariaDB, for the sinks that keep a base table's columns in their own types (the
mirror, the typed log): each CQL type's column type and the conversion of a value as a change event
carries it (`spark.mirror.values`) to what PyMySQL writes.

LONGTEXT (ascii, text, varchar; varint and decimal as their exact text: DECIMAL holds 65 digits at one
fixed scale), TINYINT, SMALLINT, INT, BIGINT, DOUBLE (float too: it reads back exactly, FLOAT's text has
too few digits), BOOLEAN, LONGBLOB, DATETIME(3) (timestamp, UTC), DATE, BIGINT (time: ns since
midnight), CHAR(36) (uuid, timeuuid), VARCHAR(45) (inet); every other type as JSON in
`spark.mirror.values`' forms. MySQL holds no NaN or infinity in DOUBLE, nor a date outside the years 1 to
9999: such a value does not fit. (MySQL documents DATE from year 1000; MariaDB 10.11 stores earlier years
too and reads them back.) A DOUBLE of -0.0 reads back as 0 (MariaDB stores no negative zero).
"""
from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Callable, Iterable
from typing import Any

from schemas.cql import CqlType, Kind
from spark.mirror.values import StoreColumn, json_value

_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_DATE = dt.date(1970, 1, 1)
CHUNK = 500  # rows a statement


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _float(value: Any) -> float:
    number = float(value)
    if not math.isfinite(number):
        raise ValueError("MySQL holds no NaN or infinity")
    return number


# A native type's (MySQL type, the function from the event's value to what PyMySQL writes), by its kind,
# or by its kind and width; counters and durations are JSON.
_NATIVE: dict[Kind | tuple[Kind, int], tuple[str, Callable[[Any], Any]]] = {
    Kind.TEXT: ("LONGTEXT", str), Kind.VARINT: ("LONGTEXT", str), Kind.DECIMAL: ("LONGTEXT", str),
    (Kind.INTEGER, 8): ("TINYINT", int), (Kind.INTEGER, 16): ("SMALLINT", int), (Kind.INTEGER, 32): ("INT", int),
    (Kind.INTEGER, 64): ("BIGINT", int), (Kind.FLOAT, 32): ("DOUBLE", _float), (Kind.FLOAT, 64): ("DOUBLE", _float),
    Kind.BOOLEAN: ("BOOLEAN", bool), Kind.BLOB: ("LONGBLOB", lambda v: bytes.fromhex(v[2:])),
    Kind.TIMESTAMP: ("DATETIME(3)", lambda ms: _EPOCH + dt.timedelta(milliseconds=ms)),  # sessions are in UTC
    Kind.DATE: ("DATE", lambda days: _EPOCH_DATE + dt.timedelta(days=days)),
    Kind.TIME: ("BIGINT", int), Kind.UUID: ("CHAR(36)", str), Kind.INET: ("VARCHAR(45)", str),
}


def _native(cql: CqlType) -> tuple[str, Callable[[Any], Any]] | None:
    return None if cql.counter else _NATIVE.get(cql.kind) or _NATIVE.get((cql.kind, cql.bits))


def binary(columns: Iterable[StoreColumn]) -> frozenset[str]:
    """The names of those of `columns` that hold bytes."""
    return frozenset(c.name for c in columns if c.type in _BINARY)


_BINARY = ("LONGBLOB", "VARBINARY(16)", "BINARY(16)")


def mysql_column(name: str, cql: CqlType) -> StoreColumn:
    native = _native(cql)
    if native is not None:
        return StoreColumn(name, *native)
    to_json = json_value(cql)
    return StoreColumn(name, "JSON", lambda value: _JSON(to_json(value)))


# One encoder for every value: `json.dumps` with options makes one a call.
_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
