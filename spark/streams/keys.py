"""Partition keys as Cassandra serializes them before hashing, through the CQL layer's codecs
(`schemas.cql`): the one place that turns key values and their types into bytes.

Values may be Python objects (as the driver returns them) or text (as typed on a command line). A
frozen collection, tuple or UDT is given already serialized (bytes or 0x-hex text): its type names
no user types here.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from schemas.cql import CqlType, CqlTypeError, CqlValueError, Kind, parse_type
from schemas.cql.composite import compose as _compose
from schemas.cql.composite import encode_partition_key

from .errors import InvalidKeyValue, UnsupportedKeyType

_PRESERIALIZED_PREFIXES = ("frozen<", "tuple<")


def normalize_type(cql_type: str) -> str:
    return re.sub(r"\s+", "", cql_type).lower()


@lru_cache(maxsize=256)
def key_type(cql_type: str) -> CqlType:
    """The codec of a partition key column's type. Cached: parsing per value would cost more than
    encoding it."""
    name = normalize_type(cql_type)
    if name.startswith(_PRESERIALIZED_PREFIXES):
        return parse_type("blob")
    try:
        parsed = parse_type(name)
    except CqlTypeError:
        raise UnsupportedKeyType(f"CQL type {cql_type!r} is not supported") from None
    if parsed.multi_cell or parsed.counter or parsed.kind is Kind.DURATION:  # as Cassandra refuses them
        raise UnsupportedKeyType(f"CQL type {cql_type!r} is not allowed in a partition key")
    return parsed


def serialize(cql_type: str, value: Any) -> bytes:
    """The bytes Cassandra stores for `value` as a `cql_type` partition key column."""
    if value is None:
        raise InvalidKeyValue(f"a partition key column cannot be null ({cql_type})")
    try:
        return key_type(cql_type).encode(value)
    except CqlValueError as exc:
        raise InvalidKeyValue(str(exc)) from None


def compose(components: Sequence[bytes]) -> bytes:
    """The CompositeType encoding of a multi-column partition key's components."""
    try:
        return _compose(components)
    except CqlValueError as exc:
        raise InvalidKeyValue(str(exc)) from None


def partition_key(values: Sequence[Any], types: Sequence[str]) -> bytes:
    """The serialized partition key: the lone value's bytes, or the composite of several."""
    codecs = [key_type(t) for t in types]
    try:
        return encode_partition_key(codecs, values)
    except CqlValueError as exc:
        raise InvalidKeyValue(str(exc)) from None
