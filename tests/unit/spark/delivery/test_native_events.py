"""The native decoding of change events (`spark.delivery.native_events`, the Rust core's `events`) against
the reference (`spark.delivery.events`): for the events of every real segment in the repository and of
hand-built mutations of every cell kind and CQL type, for values Hypothesis chooses and for payloads
it damages, both give the same `DECODED` rows byte for byte, with and without a mirror's `cells` — or
both make the record a dead letter."""
import json
import math
import uuid

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from schemas.avro import TableEncoder
from schemas.avro.wire import frame
from schemas.tables import parse_ddl
from tests.unit.connector.commitlog.conftest import write_segment  # noqa: F401 (a fixture)
from tests.unit.connector.commitlog.mutations import SCHEMA as ROWS, SEGMENT_ID as ROWS_ID, sample_mutations
from tests.unit.connector.commitlog.native_oracle import reference_events
from tests.unit.connector.commitlog.segment_builder import segment
from tests.unit.connector.commitlog.testdata import (SCHEMA_40, SCHEMA_50, SCHEMA_50_NONE, SEGMENT_40, SEGMENT_50,
                                                    SEGMENT_50_NONE)
from tests.unit.spark.delivery.decoding import assert_same, records, value_schemas

EXAMPLES = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                            HealthCheck.function_scoped_fixture])
REAL = [(SEGMENT_50, SCHEMA_50), (SEGMENT_50_NONE, SCHEMA_50_NONE), (SEGMENT_40, SCHEMA_40)]
def batch_of(payloads: list[bytes | None]) -> pa.RecordBatch:
    return records(payloads)


@pytest.mark.parametrize("path, schema", REAL, ids=lambda v: getattr(v, "name", ""))
def test_events_of_real_segments(path, schema):
    events = reference_events(path, schema, skip_unknown=True)
    rows = assert_same(batch_of([value for *_, value in events]), value_schemas(schema))
    assert len(rows) >= len(events) and all(r["failure"] is None for r in rows)


@pytest.mark.parametrize("version", [7, 8])
def test_every_cell_kind_and_type(write_segment, version):
    path = write_segment(segment(ROWS_ID, [sample_mutations()], version=version), ROWS_ID, version)
    events = reference_events(path, ROWS)
    rows = assert_same(batch_of([value for *_, value in events]), value_schemas(ROWS))
    assert {r["cdc$operation"] for r in rows} >= {1, 2, 3, 4, 5, 8} or len(rows) >= 5


def test_refused_payloads_are_dead_letters_worded_alike():
    events = reference_events(SEGMENT_50, SCHEMA_50, skip_unknown=True)
    schemas = value_schemas(SCHEMA_50)
    good = events[1][-1]
    unknown = good[:1] + (999).to_bytes(4, "big") + good[5:]
    batch = batch_of([None, b"", b"\x00\x01", b"\x07" + good[1:], unknown, good + b"\x00\x00", good[:-3], good])
    # A record without a key (none the connector writes) keeps its missing key; a sliced batch reads alike.
    batch = batch.set_column(4, "key", pa.array([None] + [b"k"] * 7, pa.binary()))
    assert_same(batch.slice(2, 5), schemas)
    rows = assert_same(batch, schemas)
    assert [r["failure"] is not None for r in rows] == [True] * 7 + [False]
    assert rows[0]["raw_key"] is None and rows[1]["raw_key"] == b"k"
    assert rows[5]["failure_detail"] == "MalformedPayload: 2 bytes follow the datum"
    assert rows[3]["raw_value"] == b"\x07" + good[1:] and rows[3]["change_id"] == "undecodable:" \
        "ringtail.ringtail_decoder_check.everything:0:3"


@pytest.fixture(scope="module")
def damage_corpus(tmp_path_factory):
    """(payload, its schemas) of every event of the Cassandra 5.0 segment and of the hand-built mutations."""
    path = tmp_path_factory.mktemp("segments") / f"CommitLog-7-{ROWS_ID}.log"
    path.write_bytes(segment(ROWS_ID, [sample_mutations()], version=7))
    corpus = []
    for events, schema in ((reference_events(SEGMENT_50, SCHEMA_50, skip_unknown=True),
                            SCHEMA_50), (reference_events(path, ROWS), ROWS)):
        schemas = value_schemas(schema)
        corpus += [(value, schemas) for *_, value in events]
    return corpus


@EXAMPLES
@given(data=st.data())
def test_damaged_payloads(damage_corpus, data):
    """1-4 bytes of an event's Avro body changed: the same rows, or both refuse the record (found this
    way and matched to the reference: any non-zero byte is a true boolean, a negative union branch counts
    from the end, a varint may run past 10 bytes, an int is not range-checked)."""
    original, schemas = data.draw(st.sampled_from(damage_corpus))
    payload = bytearray(original)
    for _ in range(data.draw(st.integers(1, 4))):
        payload[data.draw(st.integers(5, len(payload) - 1))] = data.draw(st.integers(0, 255))
    assert_same(batch_of([bytes(payload)]), schemas)


VALUES = parse_ddl("""
CREATE TABLE ks.v (k int, c text, f float, d double, t text, b blob, n bigint, vi varint,
    l list<double>, s set<text>, m map<text, float>, mb map<blob, text>, fm frozen<map<blob, text>>,
    tu frozen<tuple<double, text, blob>>,
    PRIMARY KEY (k, c)) WITH ID = 2a7b3c4d-0000-11ee-8000-000000000001;
""")


def _cell(value, ttl: int = 0) -> dict:
    return {"value": value, "timestamp": 1_700_000_000_000_001, "ttl": ttl,
            "local_deletion_time": 1_800_000_000 if ttl else None, "tombstone": False}


def _elements(pairs, ttl: int) -> list[dict]:
    return [{"key": k, **({} if v is None else {"value": v}), "timestamp": 7, "ttl": ttl,
             "local_deletion_time": 9 if ttl else None} for k, v in pairs]


def values_event(f, d, t, b, n, vi, c, ttl, doubles_, keys, removed) -> bytes:
    """A framed insert into ks.v with these values in its columns, collections and tuple."""
    schema = TableEncoder(next(iter(VALUES.tables.values())), {}).value_schema

    def multi(added, gone):
        return {"deletion": None, "added": added,
                "removed": [{"key": k, "timestamp": 8, "local_deletion_time": 10} for k in gone]}
    after = {
        "k": 1, "c": c, "f": _cell(f, ttl), "d": _cell(d), "t": _cell(t), "b": _cell(b), "n": _cell(n),
        "vi": _cell(str(vi)),
        "l": multi(_elements([(str(uuid.UUID(int=i + 1)), v) for i, v in enumerate(doubles_)], ttl), []),
        "s": multi(_elements([(k, None) for k in keys], 0), removed),
        "m": multi(_elements([(k, f) for k in keys], ttl), removed),
        "mb": multi(_elements([(b, t)], 0), [b]), "fm": _cell([{"key": b, "value": t}]),
        "tu": _cell({"field1": d, "field2": t, "field3": b}),
    }
    value = {"op": "c", "kind": "insert", "ts_ms": 1, "after": after, "static": False,
             "source": {"version": "1", "connector": "cassandra", "name": "ringtail", "cluster": "c", "node": t,
                        "keyspace": "ks", "table": "v", "file": "CommitLog-7-1.log",
                        "position": {"segment_id": 1, "entry_offset": 2, "update_index": 0, "row_index": 0},
                        "ts_ms": 1_700_000_000_000, "ts_us": 1_700_000_000_000_001,
                        "partition_key": b"\x00\x00\x00\x01"},
             "liveness": {"timestamp": 1_700_000_000_000_001, "ttl": ttl, "local_deletion_time": 5 if ttl else None},
             "deletion": None, "range": None}
    return frame(7, fastavro.parse_schema(schema), value), schema


@EXAMPLES
# Doubles halfway between two shortest digit strings: Python's repr takes the even one.
@example(f=0.0, d=562949953421312.25, t="", b=b"", n=0, vi=0, c="", ttl=0,
         doubles_=[562949953421312.75, -562949953421312.25, 281474976710656.0625], keys=[], removed=[])
@given(f=st.floats(width=32), d=st.floats(), t=st.text(max_size=12), b=st.binary(max_size=8),
       n=st.integers(-2**63, 2**63 - 1), vi=st.integers(-10**30, 10**30), c=st.text(max_size=12),
       ttl=st.integers(0, 2**31 - 1), doubles_=st.lists(st.floats(), max_size=3),
       keys=st.lists(st.text(max_size=12), max_size=3), removed=st.lists(st.text(max_size=12), max_size=2))
def test_values_as_json(f, d, t, b, n, vi, c, ttl, doubles_, keys, removed):
    """Any float, text, bytes and integer: written as Python's `json` writes them."""
    payload, schema = values_event(f, d, t, b, n, vi, c, ttl, doubles_, keys, removed)
    rows = assert_same(batch_of([payload]), {7: schema})
    assert rows[0]["failure"] is None
    if not math.isnan(d):
        assert json.loads(dict(rows[0]["columns"])["d"]) == d


@pytest.mark.parametrize("d, text", [
    (1e16, "1e+16"), (1e15, "1000000000000000.0"), (1.2345678901234568e+17, "1.2345678901234568e+17"),
    (0.0001, "0.0001"), (0.00001, "1e-05"), (1.5e-300, "1.5e-300"), (5e-324, "5e-324"), (-0.0, "-0.0"),
    (float("nan"), "NaN"), (float("-inf"), "-Infinity"), (2.5, "2.5")])
def test_float_forms(d, text):
    """The forms of `repr` at its edges: where exponents start, subnormals, signed zero, NaN."""
    payload, schema = values_event(0.1, d, 'q"\\\n\x01\x7fé\U0001F600', b"", 0, 0, "", 0, [], [], [])
    rows = assert_same(batch_of([payload]), {7: schema})
    columns = dict(rows[0]["columns"])
    assert columns["d"] == text
    assert columns["f"] == "0.10000000149011612"  # a float is read as the double of its 32 bits
    assert columns["t"] == '"q\\"\\\\\\n\\u0001\x7fé\U0001F600"'
