"""A layout's merge rules in the native core (`schemas._native.MirrorRules`): a partition's changes merged
into its states there, on the JSON texts the batch and the store hold, giving the states and rows the
reference (`state.Rules`) gives. The native core merges what it can and says None for the rest (a range
deletion, two different values tying at one timestamp, elements of a type it does not order, a snapshot's
list copies, text it would read otherwise), which the reference then merges whole.
"""
from __future__ import annotations

from typing import Any

from schemas.cql import CqlType, Kind

from .layout import LIST, MAP, SET, UDT, MirrorLayout

try:
    from schemas._native import MirrorRules
except ImportError:  # merged by the reference alone
    MirrorRules = None

# Element orders the native core knows, by the kind of the element (a set) or key (a map): text by code
# point, numbers as numbers (the JSON forms of these kinds are integers).
_ORDERS = {Kind.TEXT: "text", Kind.INTEGER: "integer", Kind.TIMESTAMP: "integer", Kind.DATE: "integer",
           Kind.TIME: "integer"}


def native_rules(layout: MirrorLayout) -> Any | None:
    """The native rules of `layout`; None without a native core."""
    if MirrorRules is None:
        return None
    columns = [(c.name, c.storage, c.static, *_elements(c.storage, layout.cql(c.type)),
                list(layout.cql(c.type).field_names) if c.storage == UDT else []) for c in layout.columns]
    return MirrorRules([c.name for c in layout.partition_key], [c.name for c in layout.clustering], columns,
                       list(layout.dropped))


def _elements(storage: str, cql: CqlType) -> tuple[bool, str]:
    """(Whether element keys are stored as they are, strings; the order of elements) of a column."""
    if storage == LIST:
        return True, "timeuuid"
    if storage in (SET, MAP):
        key = cql.element if storage == SET else cql.key
        return key.json_is_string, _ORDERS.get(key.kind, "other")  # a collection's kind is None: other
    return True, "other"
