"""The changes a real Cassandra 5.0 node wrote (tests/unit/connector/commitlog/data/CommitLog-7-…, statements in
test_cassandra50_segment) to `ringtail_decoder_check.everything`, as the Spark job decodes them for a mirror,
and what `SELECT *` returned after them (the `layout` and `changes` fixtures of this package)."""
import json

from spark.delivery.events import decode_records
from spark.mirror.engine import Change
from spark.mirror.layout import MirrorLayout
from tests.unit.connector.commitlog.testdata import SCHEMA_50 as SCHEMA
from tests.unit.spark.delivery.decoding import framed_events, preloaded_cache, records

BEFORE_EXPIRY = 1795323700  # s: both TTLs (100 s and 600 s, written at 1795323688) still running
AFTER_EXPIRY = 1795324300


def segment_layout() -> MirrorLayout:
    table = SCHEMA.table_by_name("ringtail_decoder_check", "everything")
    return MirrorLayout.of_table(table, SCHEMA.types_of("ringtail_decoder_check"))


def segment_changes() -> list[Change]:
    schemas, payloads = framed_events()
    out = []
    for row in decode_records(records(payloads), preloaded_cache(schemas), cells=True).to_pylist():
        if row["table"] == "everything" and row["cells"] is not None:
            key = json.loads(row["key"])
            out.append(Change(row["partition_key"], [key["p1"], key["p2"]], json.loads(row["cells"])))
    return out


FIRST_ROW = {
    "p1": 1, "p2": "a", "c1": 10, "c2": "x", "s": "static!",
    "v_ascii": "asc", "v_bigint": -5, "v_blob": "0x00ff", "v_boolean": True, "v_date": 19724,
    "v_decimal": "-12.345", "v_double": 1.5, "v_duration": {"months": 14, "days": 3, "nanoseconds": 3723004005006},
    "v_float": 0.25, "v_inet": "10.0.0.1", "v_int": None, "v_smallint": -2, "v_text": "héllo",
    "v_time": 48654234000000, "v_timestamp": 1699285479123, "v_timeuuid": "c6c9faaa-e631-11f1-8986-02fc00000001",
    "v_tinyint": -1, "v_uuid": "3d4f0a6c-58c3-4c5e-9e0b-4b8f9e2a7f11", "v_varint": str(2**70),
    "v_vector": [1.0, 2.0, 3.0], "v_vtext": ["a", "bc"], "f_list": [1, 2], "f_set": ["a", "b"],
    "f_map": [["k", 1]], "f_tuple": [1, None], "f_udt": {"street": "Main", "zip": 12345},
    "l": ["fresh"],  # l = ['fresh'] deleted x, y and the appended z first
    "st": [4],  # st - {3}
    "m": [["n", 2]],  # m['n'] = 2, then DELETE m['k']
    "u": {"street": "S", "zip": 777},  # u = {street: 'S', zip: 1}, then u.zip = 777
}
NULLS = {name: None for name in FIRST_ROW if name not in ("p1", "p2", "c1", "c2", "s")}
