"""CQL type model: parse type strings once, decode and encode serialized values, render JSON."""
from .collections import ListType, MapType, SetType, TupleType, UserType, VectorType, hashable
from .native import NATIVE_TYPES
from .parser import parse_type, type_arguments
from .types import CqlType, CqlTypeError, CqlValueError, Duration, UnsupportedType

__all__ = [
    "CqlType", "CqlTypeError", "CqlValueError", "Duration", "ListType", "MapType", "NATIVE_TYPES", "SetType",
    "TupleType", "UnsupportedType", "UserType", "VectorType", "hashable", "parse_type", "type_arguments",
]
