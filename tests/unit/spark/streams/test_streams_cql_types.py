"""Partition key serialization and token_of, against the reference vectors and the DataStax driver."""

import datetime as dt
import random
import uuid
from decimal import Decimal

import pytest
from cassandra import cqltypes
from cassandra.util import Date

from spark.streams import InvalidKeyValue, UnsupportedKeyType, compose, partition_key, serialize, token_of, tokens_of
from spark.streams.tokens import MIN_TOKEN
from tests.unit.spark.streams.vectors import DTEST_INT_TOKENS, REFERENCE_TOKENS


@pytest.mark.parametrize(("values", "types", "token"), REFERENCE_TOKENS)
def test_reference_tokens(values, types, token):
    assert token_of(values, types) == token


def test_dtest_int_tokens():
    assert [token_of([n], ["int"]) for n in range(1, 21)] == DTEST_INT_TOKENS
    assert tokens_of([[n] for n in range(1, 21)], ["int"]).tolist() == DTEST_INT_TOKENS


def test_composite_layout_from_the_reference():
    assert partition_key([7, 9], ["int", "int"]) == bytes.fromhex("0004000000070000040000000900")
    assert compose([b"", b"ab"]) == bytes.fromhex("0000000002616200")


@pytest.mark.parametrize(
    ("cql_type", "value", "expected"),
    [
        ("ascii", "abc", "616263"),
        ("bigint", -2, "fffffffffffffffe"),
        ("blob", "0xCAFE", "cafe"),
        ("blob", b"\x01\x02", "0102"),
        ("boolean", True, "01"),
        ("boolean", "false", "00"),
        ("date", dt.date(1970, 1, 2), "80000001"),
        ("date", "1969-12-31", "7fffffff"),
        ("date", -1, "7fffffff"),
        ("decimal", Decimal("1.50"), "00000002" "0096"),
        ("decimal", "-0.5", "00000001" "fb"),
        ("decimal", Decimal("1E+3"), "fffffffd" "01"),
        ("double", 1.5, "3ff8000000000000"),
        ("float", "1.5", "3fc00000"),
        ("inet", "127.0.0.1", "7f000001"),
        ("inet", "::1", "00000000000000000000000000000001"),
        ("int", "-7", "fffffff9"),
        ("smallint", 258, "0102"),
        ("text", "é", "c3a9"),
        ("varchar", "x", "78"),
        ("time", "01:02:03.000000004", f"{((3600 + 120 + 3) * 10**9 + 4):016x}"),
        ("time", dt.time(0, 0, 1), f"{10**9:016x}"),
        ("timestamp", 1_700_000_000_123, f"{1_700_000_000_123:016x}"),
        ("timestamp", dt.datetime(1970, 1, 1, 0, 0, 1), "00000000000003e8"),
        ("timestamp", "1970-01-01T00:00:01+01:00", f"{-3_599_000 % 2**64:016x}"),
        ("timeuuid", "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "6ba7b8109dad11d180b400c04fd430c8"),
        ("tinyint", -128, "80"),
        ("uuid", "00000000-0000-0000-0000-000000000001", "00000000000000000000000000000001"),
        ("varint", 0, "00"),
        ("varint", 127, "7f"),
        ("varint", 128, "0080"),
        ("varint", -128, "80"),
        ("varint", -129, "ff7f"),
        ("frozen<list<int>>", "0x000000010000000400000007", "000000010000000400000007"),
        ("tuple<int, text>", b"\x00", "00"),
        (" Frozen< set<text> > ", b"\x01", "01"),
    ],
)
def test_serialize(cql_type, value, expected):
    assert serialize(cql_type, value).hex() == expected


DRIVER_TYPES = {
    "ascii": cqltypes.AsciiType,
    "bigint": cqltypes.LongType,
    "blob": cqltypes.BytesType,
    "boolean": cqltypes.BooleanType,
    "date": cqltypes.SimpleDateType,
    "decimal": cqltypes.DecimalType,
    "double": cqltypes.DoubleType,
    "float": cqltypes.FloatType,
    "inet": cqltypes.InetAddressType,
    "int": cqltypes.Int32Type,
    "smallint": cqltypes.ShortType,
    "text": cqltypes.UTF8Type,
    "time": cqltypes.TimeType,
    "timestamp": cqltypes.DateType,
    "timeuuid": cqltypes.TimeUUIDType,
    "tinyint": cqltypes.ByteType,
    "uuid": cqltypes.UUIDType,
    "varint": cqltypes.IntegerType,
}


def _random_value(cql_type: str, rng: random.Random):
    """A value of ``cql_type`` and the form the driver serializes it from."""
    if cql_type in ("int", "bigint", "smallint", "tinyint"):
        bits = {"int": 32, "bigint": 64, "smallint": 16, "tinyint": 8}[cql_type]
        value = rng.randrange(-(2 ** (bits - 1)), 2 ** (bits - 1))
        return value, value
    if cql_type == "varint":
        value = rng.randrange(-(2**100), 2**100) >> rng.randrange(100)
        return value, value
    if cql_type == "decimal":
        value = Decimal(rng.randrange(-(10**12), 10**12)).scaleb(-rng.randrange(-5, 12))
        return value, value
    if cql_type in ("text", "ascii"):
        alphabet = "abcXYZ09 " if cql_type == "ascii" else "aé€😀\u0000z"
        value = "".join(rng.choice(alphabet) for _ in range(rng.randrange(20)))
        return value, value
    if cql_type == "blob":
        value = bytes(rng.randrange(256) for _ in range(rng.randrange(20)))
        return value, value
    if cql_type == "boolean":
        value = rng.random() < 0.5
        return value, value
    if cql_type in ("double", "float"):
        value = rng.uniform(-1e6, 1e6)
        return value, value
    if cql_type == "date":
        days = rng.randrange(-100_000, 100_000)
        return days, Date(days)
    if cql_type == "time":
        nanos = rng.randrange(86_400 * 10**9)
        return nanos, nanos
    if cql_type == "timestamp":
        millis = rng.randrange(-(2**40), 2**41)
        value = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=millis)
        return value, value
    if cql_type == "inet":
        value = str(uuid.UUID(int=rng.getrandbits(128))).replace("-", "")
        address = ":".join(value[i : i + 4] for i in range(0, 32, 4))
        return address, address
    if cql_type == "uuid":
        value = uuid.UUID(int=rng.getrandbits(128))
        return value, value
    value = uuid.uuid1(node=rng.getrandbits(48), clock_seq=rng.getrandbits(14))
    return value, value


@pytest.mark.parametrize("cql_type", sorted(DRIVER_TYPES))
def test_serialize_matches_the_driver(cql_type):
    rng = random.Random(cql_type)
    for _ in range(200):
        ours, drivers = _random_value(cql_type, rng)
        assert serialize(cql_type, ours) == DRIVER_TYPES[cql_type].serialize(drivers, 4), ours


def test_composite_matches_driver_routing_key():
    rng = random.Random(7)
    for _ in range(200):
        components = [bytes(rng.randrange(256) for _ in range(rng.randrange(40))) for _ in range(rng.randrange(2, 5))]
        expected = b"".join(len(c).to_bytes(2, "big") + c + b"\x00" for c in components)
        assert compose(components) == expected


def test_empty_text_key_is_the_minimum_token():
    assert token_of([""], ["text"]) == MIN_TOKEN
    assert token_of(["", ""], ["text", "text"]) != MIN_TOKEN  # composite framing is never empty


@pytest.mark.parametrize("cql_type", ["duration", "counter", "list<int>", "map<int,int>", "set<text>", "myudt"])
def test_types_not_allowed_in_keys(cql_type):
    with pytest.raises(UnsupportedKeyType):
        serialize(cql_type, 1)


@pytest.mark.parametrize(
    ("cql_type", "value"),
    [
        ("int", 2**31),
        ("tinyint", -129),
        ("int", "seven"),
        ("int", True),
        ("int", 1.5),
        ("bigint", None),
        ("boolean", "yes"),
        ("ascii", "é"),
        ("text", b"bytes"),
        ("blob", "cafe"),
        ("blob", "0xZZ"),
        ("uuid", "not-a-uuid"),
        ("timeuuid", "00000000-0000-4000-8000-000000000000"),
        ("inet", "300.1.1.1"),
        ("date", "1970-13-01"),
        ("time", "25:00:00"),
        ("time", 86_400 * 10**9),
        ("timestamp", "yesterday"),
        ("decimal", "NaN"),
        ("decimal", "abc"),
        ("float", "x"),
    ],
)
def test_invalid_values(cql_type, value):
    with pytest.raises(InvalidKeyValue):
        serialize(cql_type, value)


def test_key_shape_errors():
    with pytest.raises(InvalidKeyValue):
        partition_key([1, 2], ["int"])
    with pytest.raises(InvalidKeyValue):
        partition_key([], [])
    with pytest.raises(InvalidKeyValue):
        compose([b"x" * 65536])
