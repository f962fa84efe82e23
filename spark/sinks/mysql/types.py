"""CQL values in MySQL and MariaDB, for the sinks that keep a base table's columns in their own types (the
mirror, the typed log): each CQL type's column type and the conversion of a value as a change event
carries it (`spark.mirror.values`) to what PyMySQL writes.

LONGTEXT (ascii, text, varchar; varint and decimal as their exact text: DECIMAL holds 65 digits at one
fixed scale), TINYINT, SMALLINT, INT, BIGINT, DOUBLE (float too: it reads back exactly, FLOAT's text has
too few digits), BOOLEAN, LONGBLOB, DATETIME(3) (timestamp, UTC), DATE, BIGINT (time: ns since
midnight), CHAR(36) (uuid, timeuuid), VARCHAR(45) (inet); every other type as JSON in
`spark.mirror.values`' forms. MySQL holds no NaN or infinity in DOUBLE, nor dates before year 1000: such
a value does not fit. A DOUBLE of -0.0 reads back as 0 (MariaDB stores no negative zero).
"""
from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Callable
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


_INTEGERS = {8: "TINYINT", 16: "SMALLINT", 32: "INT", 64: "BIGINT"}


def _native(cql: CqlType) -> tuple[str, Callable[[Any], Any]] | None:
    """(MySQL type, the function from the event's value to what PyMySQL writes) of a native type stored as
    itself; None for one stored as JSON (duration, counter)."""
    match cql.kind:
        case Kind.TEXT | Kind.VARINT | Kind.DECIMAL:
            return "LONGTEXT", str
        case Kind.INTEGER if not cql.counter:
            return _INTEGERS[cql.bits], int
        case Kind.FLOAT:
            return "DOUBLE", _float
        case Kind.BOOLEAN:
            return "BOOLEAN", bool
        case Kind.BLOB:
            return "LONGBLOB", lambda v: bytes.fromhex(v[2:])
        case Kind.TIMESTAMP:
            return "DATETIME(3)", lambda ms: _EPOCH + dt.timedelta(milliseconds=ms)  # sessions are in UTC
        case Kind.DATE:
            return "DATE", lambda days: _EPOCH_DATE + dt.timedelta(days=days)
        case Kind.TIME:
            return "BIGINT", int
        case Kind.UUID:
            return "CHAR(36)", str
        case Kind.INET:
            return "VARCHAR(45)", str
    return None


def mysql_column(name: str, cql: CqlType) -> StoreColumn:
    native = _native(cql)
    if native is not None:
        return StoreColumn(name, *native)
    to_json = json_value(cql)
    return StoreColumn(name, "JSON", lambda value: json.dumps(to_json(value), ensure_ascii=False,
                                                              separators=(",", ":"), allow_nan=False))
