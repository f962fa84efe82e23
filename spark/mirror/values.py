"""A mirror's values in a JSON column (PostgreSQL's jsonb, MySQL's JSON): the log's JSON forms
(`spark.rows`), made to hold in any JSON store and to read the same whatever version of a type
wrote them:

* a UDT as an object of every field its type has now (a value written before a field was added has it
  null), a tuple as an array, a map as an object when its keys are text and as an array of
  ``[key, value]`` pairs otherwise, sets, lists and vectors as arrays, a duration as
  ``{months, days, nanoseconds}``, a blob as ``"0x…"``;
* NaN and the infinities, which JSON has no numbers for, as the strings ``"NaN"``, ``"Infinity"``,
  ``"-Infinity"``.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from schemas.cql import CqlType, Kind, ListType, MapType, SetType, TupleType, UserType, VectorType

from .engine import MirrorRow
from .layout import MirrorError, MirrorLayout


def json_value(cql: CqlType) -> Callable[[Any], Any]:
    """The function from a value of `cql` (as a change event carries it) to its JSON column form."""
    convert = _json(cql)
    return lambda value: None if value is None else convert(value)


def _json(cql: CqlType) -> Callable[[Any], Any]:
    if isinstance(cql, (ListType, SetType, VectorType)):
        element = json_value(cql.element)
        return lambda values: [element(v) for v in values]
    if isinstance(cql, MapType):
        key, value = json_value(cql.key), json_value(cql.value)
        if cql.key.kind is Kind.TEXT:
            return lambda pairs: {k: value(v) for k, v in pairs}
        return lambda pairs: [[key(k), value(v)] for k, v in pairs]
    if isinstance(cql, TupleType):
        elements = [json_value(t) for t in cql.elements]
        return lambda values: [e(v) for e, v in zip(elements, [*values, *[None] * len(elements)])]
    if isinstance(cql, UserType):
        fields = [(name, json_value(t)) for name, t in zip(cql.field_names, cql.field_types)]
        return lambda value: {name: convert(value.get(name)) for name, convert in fields}
    if cql.kind is Kind.FLOAT:
        return finite
    return _as_is


def finite(value: Any) -> Any:
    """A float JSON can hold: NaN and the infinities as strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def _as_is(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class StoreColumn:
    """A mirror column as a store holds it."""

    name: str
    type: str  # the store's type
    convert: Callable[[Any], Any]  # the event's value (not null) → the value the store's client writes


def store_values(columns: Sequence[StoreColumn], values: Mapping[str, Any], store: str, row: str,
                 error: type[ValueError] = MirrorError) -> list[Any]:
    """`values` (by column name, as change events carry them) in `store`'s forms, one per column: a value
    that does not fit its column raises `error` naming the `row` it belongs to."""
    out = []
    for column in columns:
        value = values.get(column.name)
        try:
            out.append(None if value is None else column.convert(value))
        except (ValueError, TypeError, KeyError, OverflowError) as exc:
            raise error(f"{row}: column {column.name} = {value!r} does not fit {store}'s {column.type}:"
                        f" {type(exc).__name__}: {exc}") from exc
    return out


def row_values(layout: MirrorLayout, columns: Sequence[StoreColumn], row: MirrorRow, store: str) -> list[Any]:
    """A mirror row's values, one per column, for `store`."""
    return store_values(columns, {**row.key, **(row.values or {})}, store, row_name(layout, row))


def row_name(layout: MirrorLayout, row: MirrorRow) -> str:
    """How a `MirrorError` names a mirror row: its table and primary key."""
    return f"{layout.qualified} row {row.key}"
