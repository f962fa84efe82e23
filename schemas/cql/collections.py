"""Parameterized CQL types: list, set, map, tuple, user-defined types and vector.

Frozen values are one serialized blob (int32 element count, then int32-length-prefixed
elements; tuples and UDTs: int32-length-prefixed fields with -1 for null). Non-frozen
collections and UDTs are multi-cell: each element is its own cell whose path
identifies the element (list: timeuuid, set: the element, map: the key, UDT: the
int16 field index). Multi-cell types decode a cell to a (key, value) pair with
`decode_cell(path, value)`, a tombstone's path to its key with `decode_path`, and merge
pairs into the Python value with `assemble`.
"""
from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from typing import Any, Iterable

from .vint import read_uvint, write_uvint

from .identifiers import maybe_quote
from .native import NATIVE_TYPES
from .types import CqlType, CqlValueError

_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")
_TIMEUUID = NATIVE_TYPES["timeuuid"]


def _frozen_elements(raw: bytes, count_per_item: int) -> list[bytes | None]:
    """Element blobs of a frozen collection (count first; maps have 2 blobs per entry)."""
    if len(raw) < 4:
        raise ValueError("collection shorter than its element count")
    (count,) = _INT32.unpack_from(raw, 0)
    if count < 0:
        raise ValueError("negative collection size")
    return _length_prefixed(raw, 4, count * count_per_item, exact=True)


def _counted(blobs: list[bytes | None], count_per_item: int) -> bytes:
    """A frozen collection's bytes: the inverse of `_frozen_elements`."""
    return _INT32.pack(len(blobs) // count_per_item) + _prefixed(blobs)


def _prefixed(blobs: Iterable[bytes | None]) -> bytes:
    """int32-length-prefixed blobs, -1 for null: the inverse of `_length_prefixed`."""
    return b"".join(_INT32.pack(-1) if b is None else _INT32.pack(len(b)) + b for b in blobs)


def _preserialized(value: Any) -> bytes | None:
    """A frozen value given already serialized, as bytes or `0x` hex text (from a command line)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str) and value[:2].lower() == "0x":
        try:
            return bytes.fromhex(value[2:])
        except ValueError:
            raise CqlValueError(f"not a hex value: {value!r}") from None
    return None


def _encode_or_null(cql: CqlType, value: Any) -> bytes | None:
    return None if value is None else cql.encode(value)


def _length_prefixed(raw: bytes, p: int, limit: int, exact: bool) -> list[bytes | None]:
    """Up to `limit` int32-length-prefixed blobs from p (-1 = null); all bytes must be used."""
    items: list[bytes | None] = []
    while len(items) < limit and (exact or p < len(raw)):
        if p + 4 > len(raw):
            raise ValueError("element length runs past the end of the value")
        (size,) = _INT32.unpack_from(raw, p)
        p += 4
        if size < 0:
            items.append(None)
            continue
        if p + size > len(raw):
            raise ValueError("element runs past the end of the value")
        items.append(raw[p:p + size])
        p += size
    if p != len(raw):
        raise ValueError("trailing bytes after the last element")
    return items


def _json_key(value: Any) -> str:
    # JSON object keys must be strings; non-string keys are rendered as JSON text.
    return value if isinstance(value, str) else json.dumps(value)


def _elements_json(element: CqlType, values: list) -> list:
    to_json = element.to_json
    return [None if v is None else to_json(v) for v in values]


def hashable(value: Any) -> Any:
    """A hashable stand-in for a collection value used as a map key (a tuple's elements may be
    collections too)."""
    if isinstance(value, (list, tuple)):
        return tuple(hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple((hashable(k), hashable(v)) for k, v in value.items())
    return value


class _Collection(CqlType):
    __slots__ = ("multi_cell",)

    def __init__(self, cql: str, frozen: bool) -> None:
        super().__init__(f"frozen<{cql}>" if frozen else cql)
        self.multi_cell = not frozen


class _ElementCollection(_Collection):
    """A list or set: a frozen value is a counted sequence of elements."""

    __slots__ = ("element",)

    def __init__(self, kind: str, element: CqlType, frozen: bool) -> None:
        super().__init__(f"{kind}<{element.cql}>", frozen)
        self.element = element

    def decode(self, raw: bytes) -> list:
        decode = self.element.decode_or_empty
        return [decode(e) for e in _frozen_elements(raw, 1)]

    def encode(self, value: Any) -> bytes:
        given = _preserialized(value)
        if given is not None:
            return given
        return _counted([self.element.encode(e) for e in value], 1)

    def to_json(self, value: list) -> list:
        return _elements_json(self.element, value)


class ListType(_ElementCollection):
    __slots__ = ()

    def __init__(self, element: CqlType, frozen: bool) -> None:
        super().__init__("list", element, frozen)

    def decode_path(self, raw: bytes) -> Any:
        return _TIMEUUID.decode(raw)  # the path orders the elements; it is not the index

    def path_json(self, path: Any) -> Any:
        return str(path)

    def decode_cell(self, path: bytes, value: bytes) -> tuple[Any, Any]:
        return _TIMEUUID.decode(path), self.element.decode_or_empty(value)

    def assemble(self, elements: Iterable[tuple[Any, Any]]) -> list:
        return [v for _, v in elements]


class SetType(_ElementCollection):
    __slots__ = ()

    def __init__(self, element: CqlType, frozen: bool) -> None:
        super().__init__("set", element, frozen)

    def decode_path(self, raw: bytes) -> Any:
        return self.element.decode_or_empty(raw)

    def path_json(self, path: Any) -> Any:
        return self.element.to_json(path)

    def decode_cell(self, path: bytes, value: bytes) -> tuple[Any, Any]:
        return self.decode_path(path), None  # the element is the path; the value is empty

    def assemble(self, elements: Iterable[tuple[Any, Any]]) -> list:
        return [k for k, _ in elements]


class MapType(_Collection):
    __slots__ = ("key", "value", "_key_of")

    def __init__(self, key: CqlType, value: CqlType, frozen: bool) -> None:
        super().__init__(f"map<{key.cql}, {value.cql}>", frozen)
        self.key = key
        self.value = value
        self._key_of = hashable if isinstance(key, (_Collection, TupleType, UserType, VectorType)) else None

    def decode(self, raw: bytes) -> dict:
        blobs = _frozen_elements(raw, 2)
        return dict(map(self.decode_cell, blobs[0::2], blobs[1::2]))

    def encode(self, value: Any) -> bytes:
        given = _preserialized(value)
        if given is not None:
            return given
        pairs = value.items() if isinstance(value, Mapping) else value
        return _counted([b for k, v in pairs for b in (self.key.encode(k), _encode_or_null(self.value, v))], 2)

    def to_json(self, value: dict) -> dict:
        key_json, value_json = self.key.to_json, self.value.to_json
        return {_json_key(key_json(k)): value_json(v) for k, v in dict(value).items()}

    def decode_path(self, raw: bytes) -> Any:
        key = self.key.decode_or_empty(raw)
        return self._key_of(key) if self._key_of else key

    def path_json(self, path: Any) -> Any:
        return self.key.to_json(path)

    def decode_cell(self, path: bytes, value: bytes) -> tuple[Any, Any]:
        return self.decode_path(path), self.value.decode_or_empty(value)

    def assemble(self, elements: Iterable[tuple[Any, Any]]) -> dict:
        return dict(elements)


class TupleType(CqlType):
    __slots__ = ("elements",)

    def __init__(self, elements: list[CqlType]) -> None:
        super().__init__(f"frozen<tuple<{', '.join(e.cql for e in elements)}>>")
        self.elements = tuple(elements)

    def decode(self, raw: bytes) -> tuple:
        blobs = _length_prefixed(raw, 0, len(self.elements), exact=False)
        blobs += [None] * (len(self.elements) - len(blobs))  # missing trailing fields are null
        return tuple(None if b is None else t.decode_or_empty(b) for t, b in zip(self.elements, blobs))

    def encode(self, value: Any) -> bytes:
        given = _preserialized(value)
        if given is not None:
            return given
        if len(value) > len(self.elements):
            raise CqlValueError(f"{len(value)} values for {self.cql}")
        return _prefixed(_encode_or_null(t, v) for t, v in zip(self.elements, value))

    def to_json(self, value: tuple) -> list:
        return [None if v is None else t.to_json(v) for t, v in zip(self.elements, value)]


class UserType(CqlType):
    __slots__ = ("keyspace", "name", "field_names", "field_types", "multi_cell")

    def __init__(self, keyspace: str, name: str, field_names: list[str], field_types: list[CqlType],
                 frozen: bool) -> None:
        written = maybe_quote(name)
        super().__init__(f"frozen<{written}>" if frozen else written)
        self.keyspace = keyspace
        self.name = name
        self.field_names = tuple(field_names)
        self.field_types = tuple(field_types)
        self.multi_cell = not frozen

    def decode(self, raw: bytes) -> dict:
        blobs = _length_prefixed(raw, 0, len(self.field_types), exact=False)
        return {name: None if b is None else t.decode_or_empty(b)
                for name, t, b in zip(self.field_names, self.field_types, blobs)}

    def encode(self, value: Any) -> bytes:
        given = _preserialized(value)
        if given is not None:
            return given
        fields = dict(value)
        unknown = fields.keys() - set(self.field_names)
        if unknown:
            raise CqlValueError(f"type {self.name} has no field {sorted(unknown)[0]!r}")
        return _prefixed(_encode_or_null(t, fields.get(n)) for n, t in zip(self.field_names, self.field_types))

    def to_json(self, value: dict) -> dict:
        types = dict(zip(self.field_names, self.field_types))
        return {k: None if v is None else types[k].to_json(v) for k, v in dict(value).items()}

    def decode_path(self, raw: bytes) -> str:
        (index,) = _INT16.unpack(raw)
        return self.field_names[index]

    def path_json(self, path: str) -> str:
        return path

    def decode_cell(self, path: bytes, value: bytes) -> tuple[Any, Any]:
        (index,) = _INT16.unpack(path)
        return self.field_names[index], self.field_types[index].decode_or_empty(value)

    def assemble(self, elements: Iterable[tuple[Any, Any]]) -> dict:
        return dict(elements)


class VectorType(CqlType):
    __slots__ = ("element", "dimension", "fixed_length")

    def __init__(self, element: CqlType, dimension: int) -> None:
        super().__init__(f"vector<{element.cql}, {dimension}>")
        self.element = element
        self.dimension = dimension
        size = element.fixed_length
        self.fixed_length = None if size is None else size * dimension

    def decode(self, raw: bytes) -> list:
        size, decode = self.element.fixed_length, self.element.decode
        if size is not None:
            if len(raw) != size * self.dimension:
                raise ValueError("vector has the wrong size")
            return [decode(raw[i:i + size]) for i in range(0, len(raw), size)]
        values, p = [], 0  # variable-size elements carry an unsigned vint length each
        for _ in range(self.dimension):
            length, p = read_uvint(raw, p)
            values.append(self.element.decode_or_empty(raw[p:p + length]))
            p += length
        if p != len(raw):
            raise ValueError("trailing bytes after the last vector element")
        return values

    def encode(self, value: Any) -> bytes:
        given = _preserialized(value)
        if given is not None:
            return given
        if len(value) != self.dimension:
            raise CqlValueError(f"{len(value)} values for {self.cql}")
        blobs = [self.element.encode(v) for v in value]
        if self.element.fixed_length is not None:
            return b"".join(blobs)
        return b"".join(write_uvint(len(b)) + b for b in blobs)

    def to_json(self, value: list) -> list:
        return _elements_json(self.element, value)
