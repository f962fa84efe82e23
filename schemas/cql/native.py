"""The native (non-parameterized) CQL types of Cassandra 5.0.

Python values: int, float, bool, str, bytes, decimal.Decimal, uuid.UUID, ipaddress
addresses, Duration; timestamp -> aware UTC datetime, date -> datetime.date (the raw
millisecond / day count when outside Python's range, as cqlsh does); time -> int
nanoseconds since midnight; counter -> the sum of the context's shard counts.
JSON: blob '0x..'; uuid, timeuuid, inet, decimal, varint, date, time, duration as strings;
timestamp as ISO-8601 UTC with milliseconds ('2023-11-06T15:44:39.123Z'); NaN and
infinities as cqlsh prints them.
"""
from __future__ import annotations

import datetime
import decimal
import ipaddress
import math
import struct
import uuid
from typing import Any, Callable

from .encoding import ENCODERS
from .vint import read_vint

from .types import CqlType, Duration, Kind

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_EPOCH_DATE = datetime.date(1970, 1, 1)
_DATE_EPOCH_DAYS = 1 << 31  # SimpleDateType stores days as uint32 with the epoch at 2^31
_NANOS_PER_SECOND = 1_000_000_000


class NativeType(CqlType):
    __slots__ = ("decode", "encode", "to_json", "fixed_length", "empty", "kind", "bits", "counter", "time_ordered",
                 "ascii")

    def __init__(self, cql: str, kind: Kind, decode: Callable[[bytes], Any],
                 to_json: Callable[[Any], Any] | None = None, fixed_length: int | None = None, empty: Any = None,
                 bits: int = 0, counter: bool = False, time_ordered: bool = False, ascii: bool = False) -> None:
        super().__init__(cql)
        self.kind, self.bits, self.counter, self.time_ordered, self.ascii = kind, bits, counter, time_ordered, ascii
        self.decode = decode
        self.encode = ENCODERS[cql]
        self.to_json = to_json or _identity
        self.fixed_length = fixed_length
        self.empty = empty


def _identity(value: Any) -> Any:
    return value


def _unpacker(fmt: str) -> Callable[[bytes], Any]:
    unpack = struct.Struct(fmt).unpack

    def decode(raw: bytes) -> Any:
        try:
            return unpack(raw)[0]
        except struct.error as exc:  # a value of the wrong length: the malformed-value error of every type
            raise ValueError(f"{len(raw)} bytes for a {fmt!r} value: {exc}") from None

    return decode


def _float_json(value: float) -> Any:
    # JSON has no NaN/Infinity; cqlsh prints these words.
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _varint(raw: bytes) -> int:
    return int.from_bytes(raw, "big", signed=True)


def _decimal(raw: bytes) -> decimal.Decimal:
    scale = int.from_bytes(raw[:4], "big", signed=True)
    sign, digits, exponent = decimal.Decimal(_varint(raw[4:])).as_tuple()
    return decimal.Decimal((sign, digits, exponent - scale))  # exact: no context rounding or limits


def _timestamp(raw: bytes) -> datetime.datetime | int:
    millis = int.from_bytes(raw, "big", signed=True)
    try:
        return _EPOCH + datetime.timedelta(milliseconds=millis)
    except OverflowError:  # outside datetime's years 1..9999: keep the millisecond count
        return millis


def _timestamp_json(value: datetime.datetime | int) -> str | int:
    if isinstance(value, int):
        return value
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def _date(raw: bytes) -> datetime.date | int:
    days = int.from_bytes(raw, "big") - _DATE_EPOCH_DAYS
    try:
        return _EPOCH_DATE + datetime.timedelta(days=days)
    except OverflowError:  # outside datetime's range: keep days since the epoch
        return days


def _date_json(value: datetime.date | int) -> str | int:
    return value if isinstance(value, int) else value.isoformat()


def _time_json(nanos: int) -> str:
    seconds, fraction = divmod(nanos, _NANOS_PER_SECOND)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return f"{hour:02d}:{minute:02d}:{second:02d}.{fraction:09d}"


def _duration(raw: bytes) -> Duration:
    months, p = read_vint(raw, 0)
    days, p = read_vint(raw, p)
    nanos, p = read_vint(raw, p)
    if p != len(raw):
        raise ValueError("trailing bytes after duration")
    for name, part in (("months", months), ("days", days)):
        if not -2**31 <= part < 2**31:  # 32-bit in Cassandra's Duration: a wider vint is damage
            raise ValueError(f"duration {name} {part} outside the 32-bit range")
    return Duration(months, days, nanos)


_DURATION_UNITS = (
    (3_600 * _NANOS_PER_SECOND, "h"), (60 * _NANOS_PER_SECOND, "m"), (_NANOS_PER_SECOND, "s"),
    (1_000_000, "ms"), (1_000, "us"), (1, "ns"),
)


def _duration_json(value: Duration) -> str:
    """Cassandra's Duration.toString form, e.g. '1y2mo3d4h5m6s7ms8us9ns' or '-3d'."""
    sign = "-" if min(value) < 0 else ""
    years, months = divmod(abs(value.months), 12)
    parts = [f"{n}{unit}" for n, unit in ((years, "y"), (months, "mo"), (abs(value.days), "d")) if n]
    nanos = abs(value.nanoseconds)
    for size, unit in _DURATION_UNITS:
        amount, nanos = divmod(nanos, size)
        if amount:
            parts.append(f"{amount}{unit}")
    return sign + ("".join(parts) or "0s")


def _counter(raw: bytes) -> int:
    """Sum of the shard counts of a counter context.

    Layout: int16 header count n, |n| int16 header entries, then 32-byte shards
    (16-byte counter id, int64 clock, int64 count).
    """
    if len(raw) == 8:  # a plain counter value, as the native protocol sends it
        return int.from_bytes(raw, "big", signed=True)
    header = 2 + 2 * abs(int.from_bytes(raw[:2], "big", signed=True))
    if header > len(raw) or (len(raw) - header) % 32:
        raise ValueError("malformed counter context")
    return sum(int.from_bytes(raw[i + 24:i + 32], "big", signed=True) for i in range(header, len(raw), 32))


def _uuid(raw: bytes) -> uuid.UUID:
    return uuid.UUID(bytes=bytes(raw))


def _inet(raw: bytes) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    return ipaddress.ip_address(bytes(raw))


def _text(raw: bytes) -> str:
    return str(raw, "utf-8")


def _ascii(raw: bytes) -> str:
    return str(raw, "ascii")


def _boolean(raw: bytes) -> bool:
    return raw[0] != 0


def _blob_json(value: bytes) -> str:
    return "0x" + value.hex()


K = Kind
_text_type = NativeType("text", K.TEXT, _text, empty="")

NATIVE_TYPES: dict[str, CqlType] = {t.cql: t for t in (
    NativeType("ascii", K.TEXT, _ascii, empty="", ascii=True),
    NativeType("bigint", K.INTEGER, _unpacker(">q"), fixed_length=8, bits=64),
    NativeType("blob", K.BLOB, bytes, _blob_json, empty=b""),
    NativeType("boolean", K.BOOLEAN, _boolean, fixed_length=1),
    NativeType("counter", K.INTEGER, _counter, bits=64, counter=True),
    NativeType("date", K.DATE, _date, _date_json),
    NativeType("decimal", K.DECIMAL, _decimal, str),
    NativeType("double", K.FLOAT, _unpacker(">d"), _float_json, fixed_length=8, bits=64),
    NativeType("duration", K.DURATION, _duration, _duration_json),
    NativeType("float", K.FLOAT, _unpacker(">f"), _float_json, fixed_length=4, bits=32),
    NativeType("inet", K.INET, _inet, str),
    NativeType("int", K.INTEGER, _unpacker(">i"), fixed_length=4, bits=32),
    NativeType("smallint", K.INTEGER, _unpacker(">h"), bits=16),
    _text_type,
    NativeType("time", K.TIME, _unpacker(">q"), _time_json),
    NativeType("timestamp", K.TIMESTAMP, _timestamp, _timestamp_json, fixed_length=8),
    NativeType("timeuuid", K.UUID, _uuid, str, fixed_length=16, time_ordered=True),
    NativeType("tinyint", K.INTEGER, _unpacker(">b"), bits=8),
    NativeType("uuid", K.UUID, _uuid, str, fixed_length=16),
    NativeType("varint", K.VARINT, _varint, str),
)}
NATIVE_TYPES["varchar"] = _text_type
