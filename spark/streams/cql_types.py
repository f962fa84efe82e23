"""Serialize partition key values the way Cassandra does before hashing them.

Values may be Python objects (as the driver returns them) or text (as typed on a
command line); both go through the same serializer so a token never depends on
how a value arrived.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import re
import struct
import uuid
from collections.abc import Callable, Sequence
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

from .errors import InvalidKeyValue, UnsupportedKeyType

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_EPOCH_DATE = dt.date(1970, 1, 1)
# `date` is stored as an unsigned day count whose epoch sits at 2**31.
_DATE_EPOCH_OFFSET = 1 << 31
_NANOS_PER_DAY = 86_400 * 10**9
_TIME_TEXT = re.compile(r"^(\d{1,2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?$")


def _fixed_int(fmt: str, bits: int) -> Callable[[Any], bytes]:
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1

    def serialize(value: Any) -> bytes:
        number = _integer(value)
        if not low <= number <= high:
            raise InvalidKeyValue(f"{number} does not fit in {bits} bits")
        return struct.pack(fmt, number)

    return serialize


def _integer(value: Any) -> int:
    if isinstance(value, bool):
        raise InvalidKeyValue(f"a boolean is not an integer: {value!r}")
    if isinstance(value, float):
        if not value.is_integer():
            raise InvalidKeyValue(f"not an integer: {value!r}")
        return int(value)
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        raise InvalidKeyValue(f"not an integer: {value!r}") from exc


_bigint = _fixed_int(">q", 64)


def _varint_bytes(number: int) -> bytes:
    # Java's BigInteger.toByteArray(): the shortest two's complement, at least one byte.
    bit_length = number.bit_length() if number >= 0 else (~number).bit_length()
    return number.to_bytes(bit_length // 8 + 1, "big", signed=True)


def _varint(value: Any) -> bytes:
    return _varint_bytes(_integer(value))


def _decimal(value: Any) -> bytes:
    try:
        # str() of a float keeps the short form a user typed (0.1, not its binary expansion).
        number = value if isinstance(value, Decimal) else Decimal(str(value))
    except InvalidOperation as exc:
        raise InvalidKeyValue(f"not a decimal: {value!r}") from exc
    if not number.is_finite():
        raise InvalidKeyValue(f"a decimal key must be finite: {value!r}")
    sign, digits, exponent = number.as_tuple()
    unscaled = int("".join(map(str, digits)) or "0")
    return struct.pack(">i", -exponent) + _varint_bytes(-unscaled if sign else unscaled)


def _floating(fmt: str) -> Callable[[Any], bytes]:
    def serialize(value: Any) -> bytes:
        try:
            return struct.pack(fmt, float(value))
        except (TypeError, ValueError, OverflowError) as exc:
            raise InvalidKeyValue(f"not a floating point number: {value!r}") from exc

    return serialize


def _boolean(value: Any) -> bytes:
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered not in ("true", "false"):
            raise InvalidKeyValue(f"not a boolean: {value!r}")
        value = lowered == "true"
    if not isinstance(value, bool):
        raise InvalidKeyValue(f"not a boolean: {value!r}")
    return b"\x01" if value else b"\x00"


def _text(value: Any) -> bytes:
    if not isinstance(value, str):
        raise InvalidKeyValue(f"not text: {value!r}")
    return value.encode("utf-8")


def _ascii(value: Any) -> bytes:
    if not isinstance(value, str) or not value.isascii():
        raise InvalidKeyValue(f"not ASCII text: {value!r}")
    return value.encode("ascii")


def _blob(value: Any) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str) and value[:2].lower() == "0x":
        try:
            return bytes.fromhex(value[2:])
        except ValueError as exc:
            raise InvalidKeyValue(f"not a hex blob: {value!r}") from exc
    raise InvalidKeyValue(f"a blob is bytes or 0x-prefixed hex text, not {value!r}")


def _uuid_value(value: Any) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except ValueError as exc:
        raise InvalidKeyValue(f"not a uuid: {value!r}") from exc


def _uuid(value: Any) -> bytes:
    return _uuid_value(value).bytes


def _timeuuid(value: Any) -> bytes:
    parsed = _uuid_value(value)
    if parsed.version != 1:
        raise InvalidKeyValue(f"a timeuuid must be a version 1 uuid: {value!r}")
    return parsed.bytes


def _inet(value: Any) -> bytes:
    if isinstance(value, (bytes, bytearray)) and len(value) in (4, 16):
        return bytes(value)
    try:
        return ipaddress.ip_address(value).packed
    except ValueError as exc:
        raise InvalidKeyValue(f"not an IP address: {value!r}") from exc


def _from_text(value: Any, parse: Callable[[str], Any], expected: str) -> Any:
    """``parse(value)`` for text other than an integer; integers and non-text pass through."""
    if isinstance(value, str) and not value.strip().lstrip("-").isdigit():
        try:
            return parse(value.strip())
        except ValueError as exc:
            raise InvalidKeyValue(f"not {expected}: {value!r}") from exc
    return value


def _timestamp(value: Any) -> bytes:
    value = _from_text(value, dt.datetime.fromisoformat, "an ISO 8601 timestamp")
    if isinstance(value, dt.datetime):
        # Naive datetimes are UTC, as the Python driver treats them.
        aware = value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
        value = (aware - _EPOCH) // dt.timedelta(milliseconds=1)
    return _bigint(value)


def _date(value: Any) -> bytes:
    value = _from_text(value, dt.date.fromisoformat, "an ISO date")
    if isinstance(value, dt.datetime):
        value = value.date()
    if isinstance(value, dt.date):
        value = (value - _EPOCH_DATE).days
    days = _integer(value)  # days since 1970-01-01, as the driver's Date(int)
    if not -_DATE_EPOCH_OFFSET <= days < _DATE_EPOCH_OFFSET:
        raise InvalidKeyValue(f"date out of range: {value!r}")
    return struct.pack(">I", days + _DATE_EPOCH_OFFSET)


def _nanos_of_day(hours: int, minutes: int, seconds: int, nanos: int) -> int:
    return ((hours * 60 + minutes) * 60 + seconds) * 10**9 + nanos


def _parse_time(text: str) -> int:
    match = _TIME_TEXT.match(text)
    if not match:
        raise ValueError(text)
    hours, minutes, seconds, fraction = match.groups()
    return _nanos_of_day(int(hours), int(minutes), int(seconds), int((fraction or "").ljust(9, "0")))


def _time(value: Any) -> bytes:
    value = _from_text(value, _parse_time, "a time of day (HH:MM:SS[.fffffffff])")
    if isinstance(value, dt.time):
        value = _nanos_of_day(value.hour, value.minute, value.second, value.microsecond * 1000)
    nanos = _integer(value)  # nanoseconds since midnight
    if not 0 <= nanos < _NANOS_PER_DAY:
        raise InvalidKeyValue(f"time of day out of range: {value!r}")
    return struct.pack(">q", nanos)


_SERIALIZERS: dict[str, Callable[[Any], bytes]] = {
    "ascii": _ascii,
    "bigint": _bigint,
    "blob": _blob,
    "boolean": _boolean,
    "date": _date,
    "decimal": _decimal,
    "double": _floating(">d"),
    "float": _floating(">f"),
    "inet": _inet,
    "int": _fixed_int(">i", 32),
    "smallint": _fixed_int(">h", 16),
    "text": _text,
    "varchar": _text,
    "time": _time,
    "timestamp": _timestamp,
    "timeuuid": _timeuuid,
    "tinyint": _fixed_int(">b", 8),
    "uuid": _uuid,
    "varint": _varint,
}

# Frozen collections, tuples and UDTs are hashed as their serialized bytes, which the caller supplies.
_PRESERIALIZED_PREFIXES = ("frozen<", "tuple<")
_NEVER_IN_KEYS = ("duration", "counter")

# CompositeType stores each component's length in an unsigned short.
_MAX_COMPONENT_LENGTH = 0xFFFF


def normalize_type(cql_type: str) -> str:
    return re.sub(r"\s+", "", cql_type).lower()


@lru_cache(maxsize=256)
def _serializer(cql_type: str) -> Callable[[Any], bytes]:
    # Cached: normalizing the type name for every value would cost more than serializing it.
    name = normalize_type(cql_type)
    if name.startswith(_PRESERIALIZED_PREFIXES):
        return _blob
    serializer = _SERIALIZERS.get(name)
    if serializer is None:
        reason = "is not allowed in a partition key" if name in _NEVER_IN_KEYS else "is not supported"
        raise UnsupportedKeyType(f"CQL type {cql_type!r} {reason}")
    return serializer


def serialize(cql_type: str, value: Any) -> bytes:
    """The bytes Cassandra stores for ``value`` as a ``cql_type`` partition key column."""
    if value is None:
        raise InvalidKeyValue(f"a partition key column cannot be null ({cql_type})")
    return _serializer(cql_type)(value)


def compose(components: Sequence[bytes]) -> bytes:
    """CompositeType encoding of a multi-column partition key.

    Per component: unsigned 16-bit big-endian length, the bytes, an end-of-component 0x00.
    """
    parts = []
    for component in components:
        if len(component) > _MAX_COMPONENT_LENGTH:
            raise InvalidKeyValue(f"a key component is limited to 65535 bytes, got {len(component)}")
        parts.append(struct.pack(">H", len(component)) + component + b"\x00")
    return b"".join(parts)


def partition_key(values: Sequence[Any], types: Sequence[str]) -> bytes:
    """The serialized partition key: the lone value's bytes, or the composite of several."""
    if len(values) != len(types):
        raise InvalidKeyValue(f"{len(values)} values for {len(types)} key columns")
    if not types:
        raise InvalidKeyValue("a partition key has at least one column")
    components = [serialize(cql_type, value) for cql_type, value in zip(types, values)]
    return components[0] if len(components) == 1 else compose(components)
