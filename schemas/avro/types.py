"""CQL types as Avro types: the schema of a value and how a decoded value becomes its datum.

    ascii, text, varchar -> string            blob -> bytes            boolean -> boolean
    tinyint, smallint, int -> int             bigint, counter -> long
    float -> float                            double -> double
    varint, decimal -> string                 exact and unbounded; a decimal keeps its scale
                                              ('1.50', '-12.345', '1E+3': Java's BigDecimal.toString)
    uuid, timeuuid -> string, logicalType uuid
    timestamp -> long, logicalType timestamp-millis
    date -> int, logicalType date             days since 1970-01-01, the whole CQL range
    time -> long                              nanoseconds since midnight (time-micros would round)
    inet -> string                            '10.0.0.1', '2001:db8::1'
    duration -> record Duration {months: int, days: int, nanoseconds: long}
    list, set, vector -> array                map with ascii/text keys -> map
    other maps -> array of record Entry {key, value}
    tuple -> record Tuple {field1, field2, ...}, each nullable
    user-defined type -> record Udt, one nullable field per UDT field

Cassandra stores any value as an empty byte string on request (`blobAsInt(0x)`); the decoder
gives None for it except for text, ascii and blob ('' and b''). So collection elements, map
keys and values are nullable exactly when their type decodes empty to None; elements of a
fixed-size vector never are.
"""
from __future__ import annotations

import decimal
from dataclasses import dataclass
from typing import Any, Callable

from schemas.cql import CqlType, CqlTypeError, Kind, ListType, MapType, SetType, TupleType, UserType, VectorType

from .names import ENTRY, TUPLE, avro_name, field, record

Convert = Callable[[Any], Any]


@dataclass(frozen=True, slots=True)
class AvroType:
    schema: Any
    convert: Convert | None = None  # decoded Python value -> Avro datum; None: the value itself


def optional(avro: AvroType) -> AvroType:
    convert = avro.convert
    if convert is None:
        return AvroType(["null", avro.schema])
    return AvroType(["null", avro.schema], lambda value: None if value is None else convert(value))


def value_type(cql: CqlType, namespace: str, hashable: bool = False) -> AvroType:
    """Nullable exactly when the decoded value may be None (the empty value of a non-text type)."""
    avro = avro_type(cql, namespace, hashable)
    return optional(avro) if cql.empty is None else avro


def avro_type(cql: CqlType, namespace: str, hashable: bool = False) -> AvroType:
    """The Avro type of `cql` values whose named types live under `namespace`.

    `hashable`: the value is (part of) a map key, where the decoder made lists into tuples
    and maps or UDT values into tuples of (key, value) pairs.
    """
    if isinstance(cql, (ListType, SetType)):
        return _array(value_type(cql.element, f"{namespace}.element", hashable), hashable)
    if isinstance(cql, VectorType):
        element = cql.element
        make = avro_type if element.fixed_length is not None else value_type
        return _array(make(element, f"{namespace}.element", hashable), hashable)
    if isinstance(cql, MapType):
        return _map(cql, namespace, hashable)
    if isinstance(cql, TupleType):
        return _tuple(cql, namespace, hashable)
    if isinstance(cql, UserType):
        return _user_type(cql, namespace, hashable)
    if cql.kind is Kind.DURATION:
        return AvroType(record("Duration", namespace, [
            field("months", "int"), field("days", "int"), field("nanoseconds", "long")]), _duration)
    return _native(cql)


def varint_text(value: int) -> str:
    try:
        return str(value)
    except ValueError:  # beyond Python's int-to-text digit limit; Decimal has none
        return str(decimal.Decimal(value))


def _duration(value) -> dict:
    months, days, nanoseconds = value
    return {"months": months, "days": days, "nanoseconds": nanoseconds}


def _native(cql: CqlType) -> AvroType:
    """A native type's Avro type. uuid, date and timestamp values (UUID, date, aware datetime, or int beyond
    Python's date range) are turned into their datum by fastavro's logical type writers."""
    match cql.kind:
        case Kind.TEXT:
            return AvroType("string")
        case Kind.BLOB:
            return AvroType("bytes")
        case Kind.BOOLEAN:
            return AvroType("boolean")
        case Kind.INTEGER:
            return AvroType("long" if cql.bits == 64 else "int")
        case Kind.FLOAT:
            return AvroType("float" if cql.bits == 32 else "double")
        case Kind.TIME:
            return AvroType("long")
        case Kind.VARINT:
            return AvroType("string", varint_text)
        case Kind.DECIMAL | Kind.INET:
            return AvroType("string", str)
        case Kind.UUID:
            return AvroType({"type": "string", "logicalType": "uuid"})
        case Kind.TIMESTAMP:
            return AvroType({"type": "long", "logicalType": "timestamp-millis"})
        case Kind.DATE:
            return AvroType({"type": "int", "logicalType": "date"})
    raise CqlTypeError(f"no Avro type for CQL type {cql.cql}")


def _pairs(mapping):
    """(key, value) pairs of a decoded map: a dict, or pairs already inside a map key."""
    return mapping.items() if isinstance(mapping, dict) else mapping


def _array(element: AvroType, hashable: bool) -> AvroType:
    convert = element.convert
    schema = {"type": "array", "items": element.schema}
    if convert is None:
        # fastavro reads a tuple in a union as (branch name, value): keys' tuples become lists.
        return AvroType(schema, list if hashable else None)
    return AvroType(schema, lambda values: [convert(v) for v in values])


def _map(cql: MapType, namespace: str, hashable: bool) -> AvroType:
    # Keys of a decoded map are always in their hashable form.
    key = value_type(cql.key, f"{namespace}.key", hashable=True)
    value = value_type(cql.value, f"{namespace}.value", hashable)
    to_value = value.convert
    if cql.key.kind is Kind.TEXT:
        schema = {"type": "map", "values": value.schema}
        if to_value is None:
            return AvroType(schema, dict if hashable else None)
        return AvroType(schema, lambda m: {k: to_value(v) for k, v in _pairs(m)})
    entry = record(ENTRY, namespace, [field("key", key.schema), field("value", value.schema)])
    to_key = key.convert or _same
    to_value = to_value or _same
    return AvroType({"type": "array", "items": entry},
                    lambda m: [{"key": to_key(k), "value": to_value(v)} for k, v in _pairs(m)])


def _same(value):
    return value


def _tuple(cql: TupleType, namespace: str, hashable: bool) -> AvroType:
    names = [f"field{i}" for i in range(1, len(cql.elements) + 1)]
    types = [optional(avro_type(t, f"{namespace}.{n}", hashable)) for n, t in zip(names, cql.elements)]
    converts = [(n, t.convert or _same) for n, t in zip(names, types)]
    schema = record(TUPLE, namespace, [field(n, t.schema) for n, t in zip(names, types)])
    return AvroType(schema, lambda value: {n: convert(v) for (n, convert), v in zip(converts, value)})


def _user_type(cql: UserType, namespace: str, hashable: bool) -> AvroType:
    types = [optional(avro_type(t, f"{namespace}.{avro_name(n)}", hashable))
             for n, t in zip(cql.field_names, cql.field_types)]
    converts = [(n, avro_name(n), t.convert or _same) for n, t in zip(cql.field_names, types)]
    schema = record("Udt", namespace, [field(n, t.schema) for n, t in zip(cql.field_names, types)])

    def convert(value) -> dict:
        get = dict(_pairs(value)).get  # fields missing at the end of the value are null
        return {name: to_datum(get(cql_name)) for cql_name, name, to_datum in converts}

    return AvroType(schema, convert)
