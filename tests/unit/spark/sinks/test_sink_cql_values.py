"""LOG_ROW's JSON values to cassandra-driver values, for every CQL type, nested ones too."""
from __future__ import annotations

import datetime
import decimal
import json
import math
import struct
import uuid

import pytest
from cassandra import cqltypes, util

from schemas.avro.names import avro_name
from schemas.tables.model import UserType
from spark.sinks.cql_values import PairMap, UdtValue, field_indices, type_converter

KS = "ks"
UDTS = {
    "addr": UserType(KS, "addr", ("street", "zip", "Odd Name"), ("text", "int", "text")),
    "outer": UserType(KS, "outer", ("inner", "tags"), ("frozen<addr>", "frozen<list<text>>")),
}
TIMEUUID = "657e5210-7cbb-11ee-9858-c9aa1eb53e69"
UUID4 = "3d4f0a6c-58c3-4c5e-9e0b-4b8f9e2a7f11"


def convert(type_text: str, json_value):
    """Through JSON text, as the sink receives values."""
    return type_converter(type_text, UDTS, KS)(json.loads(json.dumps(json_value)))


@pytest.mark.parametrize("cql, value, expected", [
    ("ascii", "abc", "abc"),
    ("text", "zé \"q\"\n", "zé \"q\"\n"),
    ("varchar", "", ""),
    ("tinyint", -128, -128),
    ("smallint", 32767, 32767),
    ("int", -5, -5),
    ("bigint", -(2**63), -(2**63)),
    ("counter", 42, 42),
    ("boolean", True, True),
    ("boolean", False, False),
    ("float", 1.5, 1.5),
    ("double", -2.25, -2.25),
    ("double", 3, 3.0),
    ("blob", "0x00ff10", b"\x00\xff\x10"),
    ("blob", "0x", b""),
    ("uuid", UUID4, uuid.UUID(UUID4)),
    ("timeuuid", TIMEUUID, uuid.UUID(TIMEUUID)),
    ("varint", "-123456789012345678901234567890", -123456789012345678901234567890),
    ("decimal", "-12.345", decimal.Decimal("-12.345")),
    ("decimal", "1.50", decimal.Decimal("1.50")),
    ("decimal", "1E+3", decimal.Decimal("1E+3")),
    ("inet", "10.0.0.1", "10.0.0.1"),
    ("inet", "2001:db8::1", "2001:db8::1"),
    ("timestamp", 1_699_284_279_123, 1_699_284_279_123),
    ("timestamp", -62_135_596_800_001, -62_135_596_800_001),  # before year 1: still a plain count
])
def test_native_values(cql: str, value, expected) -> None:
    result = convert(cql, value)
    assert result == expected and type(result) is type(expected)


def test_decimal_keeps_its_scale() -> None:
    assert str(convert("decimal", "1.50")) == "1.50"
    assert convert("decimal", 2.5) == decimal.Decimal("2.5")


def test_varint_beyond_the_int_text_limit() -> None:
    digits = "7" * 5000
    assert convert("varint", digits) == int(decimal.Decimal(digits))


@pytest.mark.parametrize("text, check", [
    ("NaN", math.isnan), ("Infinity", lambda v: v == math.inf), ("-Infinity", lambda v: v == -math.inf),
])
def test_non_finite_floats_arrive_as_strings(text: str, check) -> None:
    assert check(convert("double", text)) and check(convert("float", text))


def test_timestamp_milliseconds_bind_exactly() -> None:
    millis = 1_699_284_279_123
    assert cqltypes.DateType.serialize(convert("timestamp", millis), 5) == struct.pack(">q", millis)
    assert convert("timestamp", "2023-11-06T15:24:39.123Z") == millis


def test_date_days_since_the_epoch_over_the_whole_range() -> None:
    for days in (0, 19_724, -1, -(2**31), 2**31 - 1):
        value = convert("date", days)
        assert isinstance(value, util.Date) and value.days_from_epoch == days
        assert cqltypes.SimpleDateType.serialize(value, 5) == struct.pack(">I", days + 2**31)
    assert convert("date", "2024-01-02").days_from_epoch == 19_724


def test_time_nanoseconds_since_midnight() -> None:
    nanos = 13 * 3_600_000_000_000 + 123_456_789
    value = convert("time", nanos)
    assert value == util.Time(nanos)
    assert cqltypes.TimeType.serialize(value, 5) == struct.pack(">q", nanos)
    assert convert("time", "13:00:00.123456789") == value


def test_duration_record() -> None:
    value = convert("duration", {"months": 14, "days": -3, "nanoseconds": 3_723_004_005_006})
    assert value == util.Duration(14, -3, 3_723_004_005_006)
    assert convert("duration", [1, 2, 3]) == util.Duration(1, 2, 3)


def test_null_stays_null_at_any_depth() -> None:
    assert convert("int", None) is None
    assert convert("frozen<tuple<int, text>>", [None, "a"]) == (None, "a")
    assert convert("frozen<addr>", {"street": None}) == (None, None, None)


def test_lists_sets_and_vectors_from_arrays() -> None:
    assert convert("frozen<list<int>>", [3, 1, 3]) == [3, 1, 3]
    assert convert("frozen<set<text>>", ["b", "a"]) == ["b", "a"]
    assert convert("frozen<list<frozen<set<blob>>>>", [["0x01"], []]) == [[b"\x01"], []]
    assert convert("vector<float, 3>", [1.0, 2.5, -1]) == [1.0, 2.5, -1.0]


def test_logged_list_is_a_map_from_element_timeuuid() -> None:
    # ScyllaDB logs a non-frozen list<T> as frozen<map<timeuuid, T>>.
    other = "757e5210-7cbb-11ee-9858-c9aa1eb53e69"
    value = convert("frozen<map<timeuuid, frozen<addr>>>", {TIMEUUID: {"street": "a"}, other: {"zip": 1}})
    assert value == {uuid.UUID(TIMEUUID): ("a", None, None), uuid.UUID(other): (None, 1, None)}


def test_maps_from_pairs_and_from_objects() -> None:
    assert convert("frozen<map<int, text>>", [[2, "b"], [1, "a"]]) == {2: "b", 1: "a"}
    assert convert("frozen<map<text, int>>", {"x": 1}) == {"x": 1}
    assert convert("frozen<map<int, boolean>>", {"7": True}) == {7: True}  # object keys are JSON text
    assert convert("frozen<map<uuid, date>>", [[UUID4, 1]]) == {uuid.UUID(UUID4): util.Date(1)}
    assert convert("frozen<map<text, int>>", [{"key": "k", "value": 5}]) == {"k": 5}  # Avro entries


def test_map_with_unhashable_keys_keeps_pairs() -> None:
    value = convert("frozen<map<frozen<list<int>>, text>>", [[[2, 1], "x"], [[1], "y"]])
    assert isinstance(value, PairMap) and value.items() == [([2, 1], "x"), ([1], "y")] and len(value) == 2
    # Keys that hash once converted stay a dict.
    assert convert("frozen<map<frozen<tuple<int, text>>, int>>", [[[1, "a"], 2]]) == {(1, "a"): 2}


def test_tuples_pad_missing_trailing_elements() -> None:
    assert convert("frozen<tuple<int, text, blob>>", [1, "a", "0x02"]) == (1, "a", b"\x02")
    assert convert("frozen<tuple<int, text, blob>>", [1]) == (1, None, None)
    assert convert("frozen<tuple<int, text>>", {"field1": 4, "field2": "z"}) == (4, "z")
    with pytest.raises(ValueError):
        convert("frozen<tuple<int>>", [1, 2])


def test_udt_fields_by_name_in_field_order() -> None:
    value = convert("frozen<addr>", {"zip": 75001, "street": "rue", "Odd Name": "o"})
    assert isinstance(value, UdtValue) and value == ("rue", 75001, "o")
    partial = convert("addr", {"zip": 1})
    assert partial == (None, 1, None)
    assert partial[7] is None  # a field the type gained later reads as null
    # Rows carry CQL names (the job reads them from the events' `cql_name`): an Avro name is no field.
    with pytest.raises(KeyError):
        convert("frozen<addr>", {avro_name("Odd Name"): "a"})
    with pytest.raises(KeyError):
        convert("frozen<addr>", {"nope": 1})


def test_nested_udts_in_collections() -> None:
    value = convert("frozen<list<frozen<outer>>>", [{"inner": {"street": "s", "zip": 2}, "tags": ["a", "b"]}])
    assert value == [(("s", 2, None), ["a", "b"])]
    mapped = convert("frozen<map<frozen<addr>, int>>", [[{"street": "k"}, 1]])
    assert mapped == {("k", None, None): 1}


def test_udt_values_bind_through_the_driver() -> None:
    udt = cqltypes.UserType.make_udt_class(KS, "addr", ["street", "zip"], [cqltypes.UTF8Type, cqltypes.Int32Type])
    value = convert("frozen<addr>", {"zip": 3})
    assert udt.serialize(value, 5) == struct.pack(">i", -1) + struct.pack(">ii", 4, 3)
    # A UDT with a field the conversion did not know of: the extra field is null.
    wider = cqltypes.UserType.make_udt_class(KS, "addr", ["street", "zip", "Odd Name", "more"],
                                             [cqltypes.UTF8Type, cqltypes.Int32Type, cqltypes.UTF8Type,
                                              cqltypes.Int32Type])
    assert wider.serialize(value, 5).endswith(struct.pack(">i", -1) * 2)


@pytest.mark.parametrize("cql, value", [
    ("int", "x"), ("int", 1.5), ("int", True), ("text", 1), ("boolean", 1), ("blob", "0xzz"), ("uuid", "nope"),
    ("frozen<list<int>>", "abc"), ("frozen<addr>", [1, 2]), ("duration", {"months": 1}), ("double", [1]),
])
def test_wrong_values_raise(cql: str, value) -> None:
    with pytest.raises((TypeError, ValueError, KeyError)):
        convert(cql, value)


def test_deleted_udt_fields_as_indices() -> None:
    indices = field_indices(("street", "zip", "Odd Name"))
    assert indices(["zip", "Odd Name"]) == [1, 2]
    assert indices([0]) == [0]
    assert indices(None) is None
    with pytest.raises(KeyError):
        indices(["nope"])
    with pytest.raises(ValueError):
        indices([3])


def test_datetime_epoch_sanity() -> None:
    # The ISO form parses to the same instant as the millisecond count.
    moment = datetime.datetime(2023, 11, 6, 15, 24, 39, 123000, tzinfo=datetime.timezone.utc)
    assert convert("timestamp", moment.isoformat()) == 1_699_284_279_123
