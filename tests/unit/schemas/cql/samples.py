"""Serialized values of every CQL type, built by hand from Cassandra's serialization rules."""
import datetime
import decimal
import ipaddress
import struct
import uuid

from schemas.cql import Duration
from tests.unit.connector.commitlog.segment_builder import svint, uvint

UTC = datetime.timezone.utc
TIMEUUID = uuid.UUID("657e5210-7cbb-11ee-9858-c9aa1eb53e69")
UUID4 = uuid.UUID("3d4f0a6c-58c3-4c5e-9e0b-4b8f9e2a7f11")


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def elements(*blobs: bytes | None) -> bytes:
    """int32-length-prefixed blobs, -1 for null (frozen collections, tuples, UDTs)."""
    return b"".join(i32(-1) if b is None else i32(len(b)) + b for b in blobs)


UDT_FIELDS = {"addr": (("street", "zip"), ("text", "int"))}

# (CQL type, serialized value, Python value, JSON value)
SAMPLES = [
    ("ascii", b"abc", "abc", "abc"),
    ("bigint", struct.pack(">q", -5), -5, -5),
    ("blob", b"\x00\xff", b"\x00\xff", "0x00ff"),
    ("boolean", b"\x01", True, True),
    ("boolean", b"\x00", False, False),
    ("counter", struct.pack(">h", 1) + struct.pack(">h", -1) + TIMEUUID.bytes + struct.pack(">qq", 3, 42), 42, 42),
    ("date", struct.pack(">I", (1 << 31) + 19724), datetime.date(2024, 1, 2), "2024-01-02"),
    ("date", struct.pack(">I", 0), -(1 << 31), -(1 << 31)),  # outside Python's date range
    ("decimal", i32(3) + (-12345).to_bytes(2, "big", signed=True), decimal.Decimal("-12.345"), "-12.345"),
    ("double", struct.pack(">d", 1.5), 1.5, 1.5),
    ("duration", svint(14) + svint(3) + svint(3_723_004_005_006), Duration(14, 3, 3_723_004_005_006),
     "1y2mo3d1h2m3s4ms5us6ns"),
    ("duration", svint(0) + svint(-2) + svint(0), Duration(0, -2, 0), "-2d"),
    ("float", struct.pack(">f", 0.25), 0.25, 0.25),
    ("inet", bytes([10, 0, 0, 1]), ipaddress.ip_address("10.0.0.1"), "10.0.0.1"),
    ("inet", ipaddress.ip_address("2001:db8::1").packed, ipaddress.ip_address("2001:db8::1"), "2001:db8::1"),
    ("int", i32(-7), -7, -7),
    ("smallint", struct.pack(">h", -2), -2, -2),
    ("text", "héllo".encode(), "héllo", "héllo"),
    ("varchar", b"x", "x", "x"),
    ("time", struct.pack(">q", 48654234000000), 48654234000000, "13:30:54.234000000"),
    ("timestamp", struct.pack(">q", 1699285479123),
     datetime.datetime(2023, 11, 6, 15, 44, 39, 123000, tzinfo=UTC), "2023-11-06T15:44:39.123Z"),
    ("timestamp", struct.pack(">q", -(1 << 62)), -(1 << 62), -(1 << 62)),  # outside datetime's range
    ("timeuuid", TIMEUUID.bytes, TIMEUUID, str(TIMEUUID)),
    ("tinyint", b"\xff", -1, -1),
    ("uuid", UUID4.bytes, UUID4, str(UUID4)),
    ("varint", (2**70).to_bytes(9, "big", signed=True), 2**70, str(2**70)),  # the shortest form, as Java writes
    ("varint", b"\x80", -128, "-128"),
    ("vector<float, 3>", struct.pack(">fff", 1, 2, 3), [1.0, 2.0, 3.0], [1.0, 2.0, 3.0]),
    ("vector<text, 2>", uvint(1) + b"a" + uvint(2) + b"bc", ["a", "bc"], ["a", "bc"]),
    ("frozen<list<int>>", i32(2) + elements(i32(1), i32(2)), [1, 2], [1, 2]),
    ("frozen<set<text>>", i32(2) + elements(b"a", b"b"), ["a", "b"], ["a", "b"]),
    ("frozen<map<text, int>>", i32(1) + elements(b"k", i32(1)), {"k": 1}, {"k": 1}),
    ("frozen<map<int, frozen<list<int>>>>", i32(1) + elements(i32(5), i32(1) + elements(i32(9))),
     {5: [9]}, {"5": [9]}),
    ("frozen<map<frozen<list<int>>, text>>", i32(1) + elements(i32(1) + elements(i32(9)), b"v"),
     {(9,): "v"}, {"[9]": "v"}),
    # Keys holding collections inside tuples and UDTs: hashable stand-ins, rendered like the values.
    ("frozen<map<frozen<tuple<int, frozen<list<int>>>>, int>>",
     i32(1) + elements(elements(i32(1), i32(2) + elements(i32(7), i32(8))), i32(3)),
     {(1, (7, 8)): 3}, {"[1, [7, 8]]": 3}),
    ("frozen<map<frozen<tuple<text, frozen<map<int, frozen<set<int>>>>>>, int>>",
     i32(1) + elements(elements(b"a", i32(1) + elements(i32(4), i32(1) + elements(i32(5)))), i32(9)),
     {("a", ((4, (5,)),)): 9}, {'["a", {"4": [5]}]': 9}),
    ("frozen<map<frozen<tuple<int, text>>, int>>", i32(1) + elements(elements(i32(1), b"t"), i32(2)),
     {(1, "t"): 2}, {'[1, "t"]': 2}),
    ("frozen<tuple<int, text>>", elements(i32(1), None), (1, None), [1, None]),
    ("frozen<tuple<int, text, int>>", elements(i32(1), b"t"), (1, "t", None), [1, "t", None]),
    ("frozen<addr>", elements(b"Main", i32(12345)), {"street": "Main", "zip": 12345},
     {"street": "Main", "zip": 12345}),
]
