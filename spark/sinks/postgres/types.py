"""CQL values in PostgreSQL, for the sinks that keep a base table's columns in their own types (the
mirror, the typed log): each CQL type's column type and the conversion of a value as a change event
carries it (`spark.mirror.values`) to what psycopg writes; and a staging table filled by COPY.

text, smallint (tinyint too), integer, bigint, numeric (varint, decimal: exact, each value its scale),
real, double precision, boolean, bytea, timestamptz, date, bigint (time: ns since midnight), uuid
(timeuuid too), inet; a list, set or vector of those as an array; every other type (map, tuple, UDT,
duration, nested collections) as jsonb in `spark.mirror.values`' forms. PostgreSQL holds no timestamp
or date outside years 1–9999 (as Python converts them) and no U+0000 in text: such a value does not fit.
"""
from __future__ import annotations

import datetime as dt
import decimal
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from schemas.cql import CqlType, Kind, ListType, SetType, VectorType
from spark.mirror.values import StoreColumn, json_value

from .log import ident

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_EPOCH_DATE = dt.date(1970, 1, 1)


def _timestamp(ms: int) -> dt.datetime:
    return _EPOCH + dt.timedelta(milliseconds=ms)


def _date(days: int) -> dt.date:
    return _EPOCH_DATE + dt.timedelta(days=days)


def _blob(text: str) -> bytes:
    return bytes.fromhex(text[2:])


# A native type's (PostgreSQL type, the function from the event's value to what psycopg writes for it), by
# its kind, or by its kind and width; counters and durations are jsonb.
_NATIVE: dict[Kind | tuple[Kind, int], tuple[str, Callable[[Any], Any]]] = {
    Kind.TEXT: ("text", str), Kind.VARINT: ("numeric", decimal.Decimal), Kind.DECIMAL: ("numeric", decimal.Decimal),
    (Kind.INTEGER, 8): ("smallint", int), (Kind.INTEGER, 16): ("smallint", int),  # no 1-byte integer
    (Kind.INTEGER, 32): ("integer", int), (Kind.INTEGER, 64): ("bigint", int),
    (Kind.FLOAT, 32): ("real", float), (Kind.FLOAT, 64): ("double precision", float),
    Kind.BOOLEAN: ("boolean", bool), Kind.BLOB: ("bytea", _blob),
    Kind.TIMESTAMP: ("timestamp with time zone", _timestamp),
    Kind.DATE: ("date", _date), Kind.TIME: ("bigint", int), Kind.UUID: ("uuid", uuid.UUID), Kind.INET: ("inet", str),
}


def _native(cql: CqlType) -> tuple[str, Callable[[Any], Any]] | None:
    return None if cql.counter else _NATIVE.get(cql.kind) or _NATIVE.get((cql.kind, cql.bits))


def pg_column(name: str, cql: CqlType) -> StoreColumn:
    native = _native(cql)
    if native is not None:
        return StoreColumn(name, *native)
    if isinstance(cql, (ListType, SetType, VectorType)) and _native(cql.element) is not None:
        element_type, element = _native(cql.element)
        return StoreColumn(name, element_type + "[]",
                           lambda values: [None if v is None else element(v) for v in values])
    from psycopg.types.json import Jsonb

    to_json = json_value(cql)
    return StoreColumn(name, "jsonb", lambda value: Jsonb(to_json(value)))


def copy_staged(conn: Any, staging: str, target: str, names: Sequence[str], rows: Iterable[list],
                extra: str | None = None) -> None:
    """Fill the temporary table `staging` (shaped like `target`, plus the `extra` column, dropped at commit;
    emptied when this transaction made it before) with `rows` of the columns `names`, by COPY."""
    conn.execute(f"CREATE TEMPORARY TABLE IF NOT EXISTS {staging} (LIKE {target}"
                 f"{'' if extra is None else ', ' + extra}) ON COMMIT DROP")
    conn.execute(f"TRUNCATE {staging}")
    with conn.cursor() as cursor:
        with cursor.copy(f"COPY {staging} ({', '.join(map(ident, names))}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
