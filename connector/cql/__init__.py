"""CQL type model: parse type strings once, decode serialized values, render JSON."""
from .collections import ListType, MapType, SetType, TupleType, UserType, VectorType, hashable
from .native import NATIVE_TYPES
from .parser import parse_type
from .types import CqlType, CqlTypeError, Duration, UnsupportedType

__all__ = [
    "CqlType", "CqlTypeError", "Duration", "ListType", "MapType", "NATIVE_TYPES", "SetType",
    "TupleType", "UnsupportedType", "UserType", "VectorType", "hashable", "parse_type",
]
