"""Values → the bytes Cassandra stores for the native types: the inverse of each type's `decode`.

Values may be Python objects (as the decoder or the driver gives them) or text (as typed on a
command line); both go through the same encoder, so bytes (and tokens) never depend on how a value
arrived. A value that does not fit its type raises CqlValueError.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import re
import struct
import uuid
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from .types import CqlValueError, Duration
from .vint import write_vint

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
            raise CqlValueError(f"{number} does not fit in {bits} bits")
        return struct.pack(fmt, number)

    return serialize


def _integer(value: Any) -> int:
    if isinstance(value, bool):
        raise CqlValueError(f"a boolean is not an integer: {value!r}")
    if isinstance(value, float):
        if not value.is_integer():
            raise CqlValueError(f"not an integer: {value!r}")
        return int(value)
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        raise CqlValueError(f"not an integer: {value!r}") from exc


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
        raise CqlValueError(f"not a decimal: {value!r}") from exc
    if not number.is_finite():
        raise CqlValueError(f"a decimal must be finite: {value!r}")
    sign, digits, exponent = number.as_tuple()
    unscaled = int("".join(map(str, digits)) or "0")
    return struct.pack(">i", -exponent) + _varint_bytes(-unscaled if sign else unscaled)


def _floating(fmt: str) -> Callable[[Any], bytes]:
    def serialize(value: Any) -> bytes:
        try:
            return struct.pack(fmt, float(value))
        except (TypeError, ValueError, OverflowError) as exc:
            raise CqlValueError(f"not a floating point number: {value!r}") from exc

    return serialize


def _boolean(value: Any) -> bytes:
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered not in ("true", "false"):
            raise CqlValueError(f"not a boolean: {value!r}")
        value = lowered == "true"
    if not isinstance(value, bool):
        raise CqlValueError(f"not a boolean: {value!r}")
    return b"\x01" if value else b"\x00"


def _text(value: Any) -> bytes:
    if not isinstance(value, str):
        raise CqlValueError(f"not text: {value!r}")
    return value.encode("utf-8")


def _ascii(value: Any) -> bytes:
    if not isinstance(value, str) or not value.isascii():
        raise CqlValueError(f"not ASCII text: {value!r}")
    return value.encode("ascii")


def _blob(value: Any) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str) and value[:2].lower() == "0x":
        try:
            return bytes.fromhex(value[2:])
        except ValueError as exc:
            raise CqlValueError(f"not a hex blob: {value!r}") from exc
    raise CqlValueError(f"a blob is bytes or 0x-prefixed hex text, not {value!r}")


def _uuid_value(value: Any) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except ValueError as exc:
        raise CqlValueError(f"not a uuid: {value!r}") from exc


def _uuid(value: Any) -> bytes:
    return _uuid_value(value).bytes


def _timeuuid(value: Any) -> bytes:
    parsed = _uuid_value(value)
    if parsed.version != 1:
        raise CqlValueError(f"a timeuuid must be a version 1 uuid: {value!r}")
    return parsed.bytes


def _inet(value: Any) -> bytes:
    if isinstance(value, (bytes, bytearray)) and len(value) in (4, 16):
        return bytes(value)
    try:
        return ipaddress.ip_address(value).packed
    except ValueError as exc:
        raise CqlValueError(f"not an IP address: {value!r}") from exc


def _from_text(value: Any, parse: Callable[[str], Any], expected: str) -> Any:
    """``parse(value)`` for text other than an integer; integers and non-text pass through."""
    if isinstance(value, str) and not value.strip().lstrip("-").isdigit():
        try:
            return parse(value.strip())
        except ValueError as exc:
            raise CqlValueError(f"not {expected}: {value!r}") from exc
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
        raise CqlValueError(f"date out of range: {value!r}")
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
        raise CqlValueError(f"time of day out of range: {value!r}")
    return struct.pack(">q", nanos)


def _counter(value: Any) -> bytes:
    return _bigint(value)  # a counter's value, as the native protocol sends it


def _duration(value: Any) -> bytes:
    if not isinstance(value, Duration):
        raise CqlValueError(f"not a duration (months, days, nanoseconds): {value!r}")
    return b"".join(write_vint(_integer(part)) for part in value)


# The encoder of each native type, by name.
ENCODERS: dict[str, Callable[[Any], bytes]] = {
    "ascii": _ascii,
    "bigint": _bigint,
    "blob": _blob,
    "boolean": _boolean,
    "counter": _counter,
    "date": _date,
    "decimal": _decimal,
    "double": _floating(">d"),
    "duration": _duration,
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
