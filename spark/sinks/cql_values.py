"""LOG_ROW's JSON values as cassandra-driver values of a column's CQL type.

The JSON follows the conventions in :mod:`spark.rows` (Avro values without logical types):
timestamp as ms, date as days and time as ns since their epochs, blob as ``"0x…"``, uuid, timeuuid,
varint, decimal and inet as strings, duration as ``{months, days, nanoseconds}``, sets and tuples as
arrays, maps as arrays of ``[key, value]``, UDTs as objects of field names. A converter is built once
per column type and applied to already parsed JSON (``json.loads``); JSON null stays None.
"""
from __future__ import annotations

import datetime
import decimal
import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cassandra import util

from schemas.cql import CqlType, Kind, ListType, MapType, SetType, TupleType, UserType, VectorType, parse_type

Converter = Callable[[Any], Any]

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_MILLI = datetime.timedelta(milliseconds=1)


class UdtValue(tuple):
    """A UDT value in field order. The driver reads a UDT by index; fields past the end read as null,
    so a value built before the type gained a field still binds."""

    __slots__ = ()

    def __getitem__(self, index):
        try:
            return tuple.__getitem__(self, index)
        except IndexError:
            return None


class PairMap:
    """A map whose keys Python cannot hash (lists, maps): the driver only needs items() and len()."""

    __slots__ = ("pairs",)

    def __init__(self, pairs: list[tuple[Any, Any]]) -> None:
        self.pairs = pairs

    def items(self) -> list[tuple[Any, Any]]:
        return self.pairs

    def __len__(self) -> int:
        return len(self.pairs)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PairMap) and other.pairs == self.pairs

    def __repr__(self) -> str:
        return f"PairMap({self.pairs!r})"


def _integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(f"not an integer: {value!r}")
    return int(value)


def _float(value: Any) -> float:
    # Strings cover NaN and the infinities, which JSON numbers cannot carry.
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise TypeError(f"not a number: {value!r}")
    return float(value)


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"not a boolean: {value!r}")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"not a string: {value!r}")
    return value


def _blob(value: Any) -> bytes:
    text = _text(value)
    return bytes.fromhex(text[2:] if text[:2] in ("0x", "0X") else text)


def _timestamp(value: Any) -> int:
    """Milliseconds since the epoch; the driver packs an int as is, with no float rounding."""
    if isinstance(value, str) and not value.lstrip("-").isdigit():
        moment = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=datetime.timezone.utc)
        return (moment - _EPOCH) // _MILLI
    return _integer(value)


def _date(value: Any) -> util.Date:
    # util.Date takes days since the epoch (any 32-bit count) or 'YYYY-MM-DD'.
    return util.Date(value if isinstance(value, str) else _integer(value))


def _time(value: Any) -> util.Time:
    return util.Time(value if isinstance(value, str) else _integer(value))


def _uuid(value: Any) -> uuid.UUID:
    return uuid.UUID(_text(value))


def _varint(value: Any) -> int:
    try:
        return _integer(value)
    except ValueError:  # past Python's int-from-text digit limit; Decimal has none
        return int(decimal.Decimal(value))


def _decimal(value: Any) -> decimal.Decimal:
    if isinstance(value, bool):
        raise TypeError(f"not a decimal: {value!r}")
    if isinstance(value, float):
        return decimal.Decimal(repr(value))  # the short form, not the binary expansion
    if isinstance(value, (int, str)):
        return decimal.Decimal(value)
    raise TypeError(f"not a decimal: {value!r}")


def _inet(value: Any) -> str:
    return _text(value)


def _duration(value: Any) -> util.Duration:
    if isinstance(value, Mapping):
        return util.Duration(_integer(value["months"]), _integer(value["days"]), _integer(value["nanoseconds"]))
    months, days, nanoseconds = value
    return util.Duration(_integer(months), _integer(days), _integer(nanoseconds))


_NATIVE: dict[Kind, Converter] = {
    Kind.TEXT: _text, Kind.INTEGER: _integer, Kind.FLOAT: _float, Kind.BOOLEAN: _boolean, Kind.BLOB: _blob,
    Kind.TIMESTAMP: _timestamp, Kind.DATE: _date, Kind.TIME: _time, Kind.UUID: _uuid, Kind.VARINT: _varint,
    Kind.DECIMAL: _decimal, Kind.INET: _inet, Kind.DURATION: _duration,
}


def _nullable(convert: Converter) -> Converter:
    def nullable(value: Any) -> Any:
        return None if value is None else convert(value)

    return nullable


def converter(cql: CqlType) -> Converter:
    """The function from a parsed JSON value of type `cql` to the driver value; None stays None."""
    return _nullable(_converter(cql))


def _converter(cql: CqlType) -> Converter:
    if isinstance(cql, (ListType, SetType, VectorType)):
        return _sequence(converter(cql.element))
    if isinstance(cql, MapType):
        return _map(cql)
    if isinstance(cql, TupleType):
        return _tuple([converter(t) for t in cql.elements])
    if isinstance(cql, UserType):
        return _user_type(cql)
    try:
        return _NATIVE[cql.kind]
    except KeyError:
        raise TypeError(f"no conversion for CQL type {cql.cql}") from None


def _sequence(element: Converter) -> Converter:
    def convert(value: Any) -> list:
        if isinstance(value, Mapping):  # a list keyed by element timeuuids, in list order
            value = value.values()
        elif isinstance(value, (str, bytes)):
            raise TypeError(f"not an array: {value!r}")
        return [element(v) for v in value]

    return convert


def _map(cql: MapType) -> Converter:
    key, value = converter(cql.key), converter(cql.value)
    # JSON object keys are strings: values of string-like types as they are, others as JSON text.
    object_key = (lambda k: k) if cql.key.json_is_string else _json_text

    def convert(mapping: Any) -> Any:
        if isinstance(mapping, Mapping):
            pairs = [(key(object_key(k)), value(v)) for k, v in mapping.items()]
        else:
            pairs = [_pair(entry, key, value) for entry in mapping]
        try:
            return dict(pairs)
        except TypeError:  # unhashable keys (frozen lists, sets, maps)
            return PairMap(pairs)

    return convert


def _json_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _pair(entry: Any, key: Converter, value: Converter) -> tuple[Any, Any]:
    if isinstance(entry, Mapping):  # Avro's map entry record
        return key(entry["key"]), value(entry["value"])
    k, v = entry
    return key(k), value(v)


def _tuple(elements: list[Converter]) -> Converter:
    size = len(elements)

    def convert(value: Any) -> tuple:
        if isinstance(value, Mapping):  # Avro's record: field1, field2, ...
            value = [value.get(f"field{i}") for i in range(1, size + 1)]
        if len(value) > size:
            raise ValueError(f"tuple of {size} elements given {len(value)}")
        return tuple(c(v) for c, v in zip(elements, value)) + (None,) * (size - len(value))

    return convert


def field_positions(names: Sequence[str]) -> dict[str, int]:
    """Field name (as CQL spells it) -> index."""
    return {n: i for i, n in enumerate(names)}


def _user_type(cql: UserType) -> Converter:
    positions = field_positions(cql.field_names)
    fields = [converter(t) for t in cql.field_types]
    size = len(fields)

    def convert(value: Any) -> UdtValue:
        if not isinstance(value, Mapping):
            raise TypeError(f"not a UDT object: {value!r}")
        out = [None] * size
        for name, v in value.items():
            try:
                i = positions[name]
            except KeyError:
                raise KeyError(f"type {cql.name} has no field {name!r}") from None
            out[i] = fields[i](v)
        return UdtValue(out)

    return convert


def field_indices(names: Sequence[str]) -> Converter:
    """Deleted UDT fields, by name or index, as the smallint indices ScyllaDB logs."""
    positions = field_positions(names)

    def convert(value: Any) -> list[int]:
        out = []
        for field in value:
            if isinstance(field, str):
                try:
                    out.append(positions[field])
                except KeyError:
                    raise KeyError(f"no UDT field {field!r}") from None
            else:
                index = _integer(field)
                if not 0 <= index < len(names):
                    raise ValueError(f"UDT field index {index} out of range")
                out.append(index)
        return out

    return _nullable(convert)


def type_converter(type_text: str, user_types: Mapping[str, Any], keyspace: str) -> Converter:
    """:func:`converter` of a type given as CQL text, UDTs resolved among `user_types`."""
    return converter(parse_type(type_text, user_types, keyspace))
