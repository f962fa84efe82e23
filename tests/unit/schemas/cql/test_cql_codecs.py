"""Every CQL type decodes Cassandra's serialized bytes and renders cqlsh-style JSON."""
import json
import math
import struct
from types import SimpleNamespace

import pytest

from schemas.cql import parse_type
from tests.unit.schemas.cql.samples import SAMPLES, UDT_FIELDS, elements, i32, svint

USER_TYPES = {name: SimpleNamespace(field_names=f, field_types=t) for name, (f, t) in UDT_FIELDS.items()}


@pytest.mark.parametrize("cql, raw, value, rendered", SAMPLES, ids=[f"{s[0]}-{i}" for i, s in enumerate(SAMPLES)])
def test_decode_and_render(cql, raw, value, rendered):
    cql_type = parse_type(cql, USER_TYPES, "ks")
    assert cql_type.decode(raw) == value
    assert cql_type.to_json(value) == rendered
    json.dumps(rendered)  # really JSON


ENCODABLE = [s for s in SAMPLES if s[0] != "counter"]  # a counter's context is not what a client writes


@pytest.mark.parametrize("cql, raw, value, rendered", ENCODABLE, ids=[f"{s[0]}-{i}" for i, s in enumerate(ENCODABLE)])
def test_encode_is_the_inverse_of_decode(cql, raw, value, rendered):
    encoded = parse_type(cql, USER_TYPES, "ks").encode(value)
    if cql == "frozen<tuple<int, text, int>>":  # written without its trailing null: encoding writes it
        raw += i32(-1)
    assert encoded == raw


@pytest.mark.parametrize("cql, value", [
    ("int", 1 << 31), ("int", "x"), ("tinyint", True), ("text", 5), ("ascii", "é"), ("boolean", "maybe"),
    ("timeuuid", "00000000-0000-0000-0000-000000000001"), ("duration", 5), ("decimal", "NaN"),
    ("frozen<tuple<int, text>>", (1, "a", 2)), ("frozen<addr>", {"nope": 1}), ("vector<float, 3>", [1.0]),
])
def test_values_that_do_not_fit_raise_value_errors(cql, value):
    from schemas.cql import CqlValueError

    with pytest.raises(CqlValueError):
        parse_type(cql, USER_TYPES, "ks").encode(value)


@pytest.mark.parametrize("cql, size", [
    ("boolean", 1), ("int", 4), ("float", 4), ("bigint", 8), ("double", 8), ("timestamp", 8), ("uuid", 16),
    ("timeuuid", 16), ("vector<float, 3>", 12), ("vector<bigint, 2>", 16),
    ("text", None), ("date", None), ("time", None), ("smallint", None), ("tinyint", None), ("inet", None),
    ("varint", None), ("decimal", None), ("duration", None), ("counter", None), ("blob", None),
    ("vector<text, 2>", None), ("frozen<list<int>>", None), ("frozen<addr>", None),
])
def test_fixed_lengths_follow_value_length_if_fixed(cql, size):
    assert parse_type(cql, USER_TYPES, "ks").fixed_length == size


def test_float_specials_render_as_cqlsh_words():
    double = parse_type("double")
    assert [double.to_json(double.decode(struct.pack(">d", v))) for v in (math.inf, -math.inf)] == \
           ["Infinity", "-Infinity"]
    assert double.to_json(double.decode(struct.pack(">d", math.nan))) == "NaN"


def test_empty_values():
    assert parse_type("text").decode_or_empty(b"") == ""
    assert parse_type("blob").decode_or_empty(b"") == b""
    assert parse_type("int").decode_or_empty(b"") is None


def test_multi_cell_cells():
    list_type = parse_type("list<text>")
    assert list_type.multi_cell and list_type.fixed_length is None
    timeuuid = bytes.fromhex("657e52107cbb11ee9858c9aa1eb53e69")
    key, value = list_type.decode_cell(timeuuid, b"x")
    assert (str(key), value) == ("657e5210-7cbb-11ee-9858-c9aa1eb53e69", "x")
    set_type = parse_type("set<int>")
    assert set_type.decode_cell(i32(3), b"") == (3, None)
    assert set_type.assemble([(3, None), (4, None)]) == [3, 4]
    map_type = parse_type("map<text, int>")
    assert map_type.decode_cell(b"k", i32(9)) == ("k", 9)
    assert map_type.path_json("k") == "k"
    udt = parse_type("addr", USER_TYPES, "ks")
    assert udt.multi_cell
    assert udt.decode_cell(struct.pack(">h", 1), i32(5)) == ("zip", 5)
    assert udt.decode_path(struct.pack(">h", 0)) == "street"


@pytest.mark.parametrize("raw", [i32(2) + elements(i32(1)), i32(1) + elements(i32(1)) + b"x", i32(-3)])
def test_malformed_frozen_values_raise_value_errors(raw):
    with pytest.raises((ValueError, struct.error)):
        parse_type("frozen<list<int>>").decode(raw)


@pytest.mark.parametrize("raw, message", [
    (svint(2**31) + svint(0) + svint(0), "duration months 2147483648 outside the 32-bit range"),
    (svint(0) + svint(-2**31 - 1) + svint(0), "duration days -2147483649 outside the 32-bit range"),
])
def test_a_duration_part_beyond_32_bits_is_malformed(raw, message):
    """Cassandra's Duration holds months and days in 32 bits; a wider vint can only be damage."""
    with pytest.raises(ValueError, match=message):
        parse_type("duration").decode(raw)
    assert parse_type("duration").decode(svint(2**31 - 1) + svint(-2**31) + svint(2**62)) == (2**31 - 1, -2**31, 2**62)
