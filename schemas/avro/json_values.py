"""Values in the log's JSON forms as datums of the natural Avro types (`types.avro_type`).

The JSON forms are those of the Spark side's log rows and mirrors: timestamps in ms, dates in days and
times in ns since their epochs, a blob as ``"0x…"``, uuid, varint, decimal and inet as strings, NaN and
the infinities as strings, a duration as ``{months, days, nanoseconds}``, lists, sets, vectors and tuples
as arrays, a map as an object (text keys) or an array of ``[key, value]`` pairs, a UDT as an object of
field names. Each is built once per type; None stays None. The native core reads the same forms as it writes
images (`spark/native/src/datum_writer.rs`); these are the reference it is tested against.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from schemas.cql import CqlType, Kind, ListType, MapType, SetType, TupleType, UserType, VectorType

from .names import avro_name

Convert = Callable[[Any], Any]


def json_datum(cql: CqlType) -> Convert:
    """The function from a JSON-form value of `cql` to its datum for `avro_type(cql, …)`'s schema."""
    convert = _datum(cql)
    return lambda value: None if value is None else convert(value)


def _datum(cql: CqlType) -> Convert:
    if isinstance(cql, (ListType, SetType, VectorType)):
        element = json_datum(cql.element)
        return lambda values: [element(v) for v in (values.values() if isinstance(values, Mapping) else values)]
    if isinstance(cql, MapType):
        return _map(cql)
    if isinstance(cql, TupleType):
        elements = [(f"field{i}", json_datum(t)) for i, t in enumerate(cql.elements, 1)]
        return lambda values: {name: convert(v)
                               for (name, convert), v in zip(elements, [*values, *[None] * len(elements)])}
    if isinstance(cql, UserType):
        fields = [(name, avro_name(name), json_datum(t)) for name, t in zip(cql.field_names, cql.field_types)]
        return lambda value: {avro: convert(value.get(name)) for name, avro, convert in fields}
    match cql.kind:
        case Kind.BLOB:
            return _blob
        case Kind.FLOAT:
            return float  # float("NaN"), float("Infinity") read JSON's strings for them
        case Kind.VARINT | Kind.DECIMAL:
            return str
    return _as_is


def _map(cql: MapType) -> Convert:
    key, value = json_datum(cql.key), json_datum(cql.value)

    def pairs(mapping: Any) -> list:
        return list(mapping.items()) if isinstance(mapping, Mapping) else mapping

    if cql.key.kind is Kind.TEXT:  # an Avro map, as `types` declares it
        return lambda mapping: {k: value(v) for k, v in pairs(mapping)}
    return lambda mapping: [{"key": key(k), "value": value(v)} for k, v in pairs(mapping)]


def _blob(value: str) -> bytes:
    return bytes.fromhex(value[2:] if value[:2] in ("0x", "0X") else value)


def _as_is(value: Any) -> Any:
    return value
