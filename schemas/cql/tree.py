"""A parsed CQL type as the native core (`schemas._native`) takes it: nested tuples, each native type by
its traits, so types are parsed and named in one place (the Python type layer) for both halves."""
from __future__ import annotations

from .collections import ListType, MapType, SetType, TupleType, UserType, VectorType
from .types import CqlType


def type_tree(cql: CqlType) -> tuple:
    """`cql` as nested tuples (see `CqlType` in the contract crate's python.rs)."""
    if isinstance(cql, ListType):
        return ("list", type_tree(cql.element), cql.multi_cell)
    if isinstance(cql, SetType):
        return ("set", type_tree(cql.element), cql.multi_cell)
    if isinstance(cql, MapType):
        return ("map", type_tree(cql.key), type_tree(cql.value), cql.multi_cell)
    if isinstance(cql, TupleType):
        return ("tuple", [type_tree(e) for e in cql.elements])
    if isinstance(cql, UserType):
        return ("udt", list(cql.field_names), [type_tree(t) for t in cql.field_types], cql.multi_cell)
    if isinstance(cql, VectorType):
        return ("vector", type_tree(cql.element), cql.dimension)
    return ("native", cql.kind.name, cql.bits, cql.counter, cql.time_ordered, cql.ascii)
