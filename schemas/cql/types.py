"""CQL type objects: framing facts, value decoding and encoding, and JSON rendering.

A type is parsed once (see parser.py) and then used on hot paths: `fixed_length` tells
the commit log reader how a value is framed, `decode(raw)` turns non-empty serialized
bytes (Cassandra's normal value serialization, the native protocol encoding) into a
Python value, and `to_json(value)` renders that value as a JSON-compatible object.

An empty byte string is a legitimate value of every type (Cassandra's "empty" value);
`decode_or_empty` maps it to `empty` (None, or '' / b'' for text-like types).
"""
from __future__ import annotations

import enum
from typing import Any, NamedTuple


class CqlTypeError(ValueError):
    """A type string that cannot be parsed or resolved."""


class CqlValueError(ValueError):
    """A value that does not fit its CQL type (out of range, malformed text, wrong kind of object)."""


class UnsupportedType(CqlTypeError):
    """A custom marshal class (or other type) this project does not decode."""


class Duration(NamedTuple):
    """CQL duration: months, days and nanoseconds, each with its own sign."""

    months: int
    days: int
    nanoseconds: int


class Kind(enum.Enum):
    """What a native type's values are, whatever its name: the trait every target maps from (with `bits`
    for integers and floats), so no target lists the type names again."""

    TEXT = enum.auto()  # ascii, text (varchar)
    BLOB = enum.auto()
    BOOLEAN = enum.auto()
    INTEGER = enum.auto()  # tinyint, smallint, int, bigint, counter: `bits` wide
    VARINT = enum.auto()  # arbitrary precision
    DECIMAL = enum.auto()
    FLOAT = enum.auto()  # float, double: `bits` wide
    TIMESTAMP = enum.auto()  # milliseconds since the epoch
    DATE = enum.auto()  # days since the epoch
    TIME = enum.auto()  # nanoseconds since midnight
    UUID = enum.auto()  # uuid, timeuuid (`time_ordered`)
    INET = enum.auto()
    DURATION = enum.auto()


_STRING_JSON = frozenset({Kind.TEXT, Kind.BLOB, Kind.UUID, Kind.INET, Kind.VARINT, Kind.DECIMAL})


class CqlType:
    """Base of every CQL type."""

    __slots__ = ("cql",)
    fixed_length: int | None = None  # serialized size if every value has it
    multi_cell = False  # stored as one cell per element (non-frozen collection / UDT)
    empty: Any = None  # Python value of an empty serialized value
    kind: Kind | None = None  # a native type's trait; None for collections, tuples and UDTs
    bits = 0  # an integer's or a float's width
    counter = False  # a counter: its cells are deltas, never in a key, never TTL'd
    time_ordered = False  # a timeuuid: ordered by its time first
    ascii = False  # ascii: text of 7-bit characters only

    def __init__(self, cql: str) -> None:
        self.cql = cql

    @property
    def json_is_string(self) -> bool:
        """Whether `to_json` gives a string (so a JSON object key can be the value's JSON itself)."""
        return self.kind in _STRING_JSON

    def decode(self, raw: bytes) -> Any:
        raise NotImplementedError

    def encode(self, value: Any) -> bytes:
        """The bytes Cassandra stores for `value` (a value `decode` gives, or the like); the inverse of
        `decode`. Raises CqlValueError for a value that does not fit."""
        raise NotImplementedError

    def decode_or_empty(self, raw: bytes) -> Any:
        return self.decode(raw) if raw else self.empty

    def to_json(self, value: Any) -> Any:
        return value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CqlType) and other.cql == self.cql

    def __hash__(self) -> int:
        return hash(self.cql)

    def __repr__(self) -> str:
        return f"<CqlType {self.cql}>"
