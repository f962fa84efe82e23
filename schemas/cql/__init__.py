"""CQL type model: parse type strings once, decode and encode serialized values, render JSON."""
from .collections import ListType, MapType, SetType, TupleType, UserType, VectorType, hashable
from .identifiers import maybe_quote
from .native import NATIVE_TYPES
from .parser import parse_type, type_arguments, type_name
from .types import CqlType, CqlTypeError, CqlValueError, Duration, Kind, UnsupportedType

__all__ = [
    "CqlType", "CqlTypeError", "CqlValueError", "Duration", "Kind", "ListType", "MapType", "NATIVE_TYPES", "SetType",
    "TupleType", "UnsupportedType", "UserType", "VectorType", "hashable", "maybe_quote", "parse_type",
    "type_arguments", "type_name",
]
