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

from schemas.cql import CqlType, ListType, SetType, VectorType
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


# CQL type → (PostgreSQL type, the function from the event's value to what psycopg writes for it).
_NATIVE: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "ascii": ("text", str), "text": ("text", str), "varchar": ("text", str),
    "tinyint": ("smallint", int), "smallint": ("smallint", int), "int": ("integer", int), "bigint": ("bigint", int),
    "varint": ("numeric", decimal.Decimal), "decimal": ("numeric", decimal.Decimal),
    "float": ("real", float), "double": ("double precision", float), "boolean": ("boolean", bool),
    "blob": ("bytea", _blob), "timestamp": ("timestamp with time zone", _timestamp), "date": ("date", _date),
    "time": ("bigint", int), "uuid": ("uuid", uuid.UUID), "timeuuid": ("uuid", uuid.UUID), "inet": ("inet", str),
}


def pg_column(name: str, cql: CqlType) -> StoreColumn:
    native = _NATIVE.get(cql.cql)
    if native is not None:
        return StoreColumn(name, *native)
    if isinstance(cql, (ListType, SetType, VectorType)) and cql.element.cql in _NATIVE:
        element_type, element = _NATIVE[cql.element.cql]
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
