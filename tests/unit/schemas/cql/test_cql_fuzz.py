"""Nested frozen collections, tuples and their serialized values, generated: every one decodes (map
keys holding collections too), renders as JSON and encodes back; damaged bytes only ever raise
ValueError."""
import json
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.cql import parse_type
from tests.unit.schemas.cql.samples import elements, i32

# (CQL type, a strategy of its serialized values) for the leaves.
LEAVES = [
    ("int", st.integers(-(1 << 31), (1 << 31) - 1).map(lambda v: struct.pack(">i", v))),
    ("text", st.text(max_size=5).map(str.encode)),
    ("boolean", st.sampled_from([b"\x00", b"\x01"])),
    ("bigint", st.integers(-(1 << 63), (1 << 63) - 1).map(lambda v: struct.pack(">q", v))),
]


def leaf():
    return st.sampled_from(LEAVES)


def counted(blobs: list[bytes], per_element: int = 1) -> bytes:
    return i32(len(blobs) // per_element) + elements(*blobs)


def nested(children):
    """One level up: a frozen list, set, map or tuple of `children`."""
    def sequence(kind):
        return children.map(lambda c: (f"frozen<{kind}<{c[0]}>>",
                                       st.lists(c[1], max_size=3).map(counted)))

    def mapping(pair):
        (key, keys), (value, values) = pair
        return (f"frozen<map<{key}, {value}>>",
                st.lists(st.tuples(keys, values), max_size=3).map(
                    lambda entries: counted([b for entry in entries for b in entry], 2)))

    def tuple_of(parts):
        return (f"frozen<tuple<{', '.join(p[0] for p in parts)}>>",
                st.tuples(*(p[1] for p in parts)).map(lambda blobs: elements(*blobs)))

    return st.one_of(sequence("list"), sequence("set"), st.tuples(children, children).map(mapping),
                     st.lists(children, min_size=1, max_size=3).map(tuple_of))


TYPES = st.recursive(leaf(), nested, max_leaves=6)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_nested_frozen_values_decode_and_render(data):
    cql, values = data.draw(TYPES)
    raw = data.draw(values)
    cql_type = parse_type(cql)
    value = cql_type.decode(raw)
    json.dumps(cql_type.to_json(value))
    assert cql_type.decode(cql_type.encode(value)) == value  # encode is decode's inverse


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_damaged_nested_values_raise_value_errors(data):
    cql, values = data.draw(TYPES)
    raw = bytearray(data.draw(values))
    if raw:
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] ^= data.draw(st.integers(1, 255))
    cut = data.draw(st.integers(0, len(raw)))
    cql_type = parse_type(cql)
    try:
        value = cql_type.decode_or_empty(bytes(raw[:cut]))
        json.dumps(None if value is None else cql_type.to_json(value))
    except ValueError:
        pass  # the typed error for a malformed value (UnicodeDecodeError is one)
