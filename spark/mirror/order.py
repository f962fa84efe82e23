"""Cassandra's order of values, on the values as change events carry them (the log's JSON forms, see
`spark.rows`), and the bytes Cassandra compares when two cells tie.

A mirror needs the order in three places: which rows a range deletion covers (clustering prefixes, a
`DESC` column reversed), the order of a set's elements, a map's keys and a list's elements (by their
timeuuid), and the last tie-break between two cells written at the same timestamp (their serialized
values, unsigned byte by byte). Each type compares as its Cassandra `AbstractType` does:

* integers, `varint`, `timestamp`, `date`, `time`: as numbers; `decimal` by value (1.0 equals 1.00);
* `float`, `double`: Java's `Float.compare` (-0.0 before 0.0, NaN last);
* `text`, `ascii`, `blob`, `inet`, `boolean`: their bytes, unsigned (text by code point: UTF-8's order);
* `timeuuid`: by time, then the last eight bytes signed (`TimeUUIDType`); `uuid`: by version, then
  by time for version 1 or the first eight bytes unsigned, then the last eight unsigned (`UUIDType`);
* frozen collections, tuples, UDTs and vectors: element by element, then by length; a null element first.

An empty value (JSON null in a key) sorts before every other value, as Cassandra's empty value does.
"""
from __future__ import annotations

import decimal
import ipaddress
import math
import uuid
from collections.abc import Callable
from functools import total_ordering
from typing import Any

from schemas.cql import CqlType, Duration, Kind, ListType, MapType, SetType, TupleType, UserType, VectorType

Key = Callable[[Any], Any]


class UnorderedType(TypeError):
    """A type Cassandra never orders (duration), asked for an order."""


def _float(value: Any) -> tuple:
    number = float(value)
    if math.isnan(number):
        return (1, 0.0, 0)
    return (0, number, math.copysign(1, number))  # -0.0 before 0.0, as Float.compare has it


def _decimal(value: Any) -> decimal.Decimal:
    return decimal.Decimal(str(value))


def _blob(value: str) -> bytes:
    return bytes.fromhex(value[2:])


def _inet(value: str) -> bytes:
    return ipaddress.ip_address(value).packed


def _reordered_time(msb: int) -> int:
    """TimeUUIDType's reordering of the first eight bytes: the 60-bit time first, as a signed long."""
    reordered = ((msb << 48) | ((msb << 16) & 0xFFFF00000000) | (msb >> 32)) & 0xFFFFFFFFFFFFFFFF
    return reordered - (1 << 64) if reordered >> 63 else reordered


def _signed(value: int) -> int:
    return value - (1 << 64) if value >> 63 else value


def _timeuuid(value: str) -> tuple[int, int]:
    raw = uuid.UUID(value).bytes
    msb, lsb = int.from_bytes(raw[:8], "big"), int.from_bytes(raw[8:], "big")
    # "a signed per-byte comparison": each of the last eight bytes compared as a signed byte.
    return _reordered_time(msb), _signed(lsb ^ 0x0080808080808080)


def _uuid(value: str) -> tuple[int, int, int]:
    raw = uuid.UUID(value).bytes
    msb, lsb = int.from_bytes(raw[:8], "big"), int.from_bytes(raw[8:], "big")
    version = (msb >> 12) & 0xF
    return version, _reordered_time(msb) if version == 1 else msb, lsb


def _as_is(value: Any) -> Any:
    return value


_NATIVE: dict[Kind, Key] = {
    Kind.TEXT: _as_is, Kind.INTEGER: int, Kind.VARINT: int, Kind.TIMESTAMP: int, Kind.DATE: int, Kind.TIME: int,
    Kind.FLOAT: _float, Kind.DECIMAL: _decimal, Kind.BOOLEAN: int, Kind.BLOB: _blob, Kind.INET: _inet,
}


def sort_key(cql: CqlType) -> Key:
    """A function from a value of `cql` (null included) to a key that Python orders as Cassandra orders
    the values."""
    key = _key(cql)
    return lambda value: (0,) if value is None else (1, key(value))


def _key(cql: CqlType) -> Key:
    if isinstance(cql, (ListType, SetType, VectorType)):
        element = sort_key(cql.element)
        return lambda values: tuple(element(v) for v in values)
    if isinstance(cql, MapType):
        key, value = sort_key(cql.key), sort_key(cql.value)
        return lambda pairs: tuple((key(k), value(v)) for k, v in pairs)
    if isinstance(cql, TupleType):
        elements = [sort_key(t) for t in cql.elements]
        return lambda values: tuple(e(v) for e, v in zip(elements, values))
    if isinstance(cql, UserType):
        fields = [(name, sort_key(t)) for name, t in zip(cql.field_names, cql.field_types)]
        return lambda value: tuple(k(value.get(name)) for name, k in fields)
    if cql.kind is Kind.UUID:
        return _timeuuid if cql.time_ordered else _uuid
    try:
        return _NATIVE[cql.kind]
    except KeyError:
        raise UnorderedType(f"Cassandra does not order values of type {cql.cql}") from None


@total_ordering
class Descending:
    """A key in reverse order: a clustering column declared `DESC`."""

    __slots__ = ("key",)

    def __init__(self, key: Any) -> None:
        self.key = key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Descending) and self.key == other.key

    def __lt__(self, other: Descending) -> bool:
        return other.key < self.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"Descending({self.key!r})"


def descending(key: Key) -> Key:
    return lambda value: Descending(key(value))


def value_bytes(cql: CqlType) -> Callable[[Any], bytes]:
    """A function from a value of `cql` to the bytes Cassandra stores (its serialization): what two cells
    written at the same timestamp are compared by. Empty (null) is no bytes."""
    encode = _encoder(cql)
    return lambda value: b"" if value is None else encode(value)


def _encoder(cql: CqlType) -> Callable[[Any], bytes]:
    if _holds_duration(cql):
        to_cql = _duration_values(cql)
        return lambda value: cql.encode(to_cql(value))
    return cql.encode


def _holds_duration(cql: CqlType) -> bool:
    if cql.kind is Kind.DURATION:
        return True
    if isinstance(cql, (ListType, SetType, VectorType)):
        return _holds_duration(cql.element)
    if isinstance(cql, MapType):
        return _holds_duration(cql.key) or _holds_duration(cql.value)
    if isinstance(cql, TupleType):
        return any(_holds_duration(t) for t in cql.elements)
    if isinstance(cql, UserType):
        return any(_holds_duration(t) for t in cql.field_types)
    return False


def _duration_values(cql: CqlType) -> Callable[[Any], Any]:
    """The log's `{months, days, nanoseconds}` objects as the type layer's Duration, at any depth."""
    if cql.kind is Kind.DURATION:
        return lambda v: None if v is None else Duration(v["months"], v["days"], v["nanoseconds"])
    if isinstance(cql, (ListType, SetType, VectorType)):
        element = _duration_values(cql.element)
        return lambda values: None if values is None else [element(v) for v in values]
    if isinstance(cql, MapType):
        key, value = _duration_values(cql.key), _duration_values(cql.value)
        return lambda pairs: None if pairs is None else [(key(k), value(v)) for k, v in pairs]
    if isinstance(cql, TupleType):
        elements = [_duration_values(t) for t in cql.elements]
        return lambda values: None if values is None else [e(v) for e, v in zip(elements, values)]
    if isinstance(cql, UserType):
        fields = dict(zip(cql.field_names, (_duration_values(t) for t in cql.field_types)))
        return lambda value: None if value is None else {k: fields[k](v) for k, v in value.items()}
    return _as_is
