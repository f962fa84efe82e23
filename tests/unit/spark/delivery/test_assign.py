"""Stream assignment of decoded rows, against the per-row library path."""
import datetime

import pyarrow as pa
import pytest

from spark import rows as R
from spark.delivery.assign import assign_batch
from spark.delivery.events import decode_records
from spark.streams.generations import Generation, Generations
from spark.streams.tokens import token_of_key
from spark.streams.topology import build_topology_description
from tests.unit.spark.delivery.decoding import framed_events, preloaded_cache, records

RING = {"n1": (-6_000_000_000_000_000_000, 10), "n2": (3_000_000_000_000_000_000,)}


def decoded_batch(kafka_time: datetime.datetime) -> pa.RecordBatch:
    schemas, payloads = framed_events()
    batch = records(payloads + [b"\x01broken"])
    batch = batch.set_column(3, "timestamp", pa.array([kafka_time] * batch.num_rows, pa.timestamp("us", tz="UTC")))
    return decode_records(batch, preloaded_cache(schemas))


@pytest.fixture(scope="module")
def generations():
    # The segment's writes span 1700000000000000 .. 1795323688…; a switch falls between them.
    old = Generation(1_600_000_000_000_000, build_topology_description(RING, shards=2, ignore_msb=12, rand=1))
    new = Generation(1_750_000_000_000_000, build_topology_description(RING, shards=3, ignore_msb=12, rand=2))
    return Generations([old, new])


def test_stream_ids_equal_the_library_per_row(generations):
    batch = decoded_batch(datetime.datetime(2027, 1, 1, tzinfo=datetime.timezone.utc))
    out = assign_batch(batch, generations, leeway_us=5_000_000, max_age_us=None).to_pylist()
    logged = [r for r in out if r["failure"] is None]
    assert len(logged) == len(out) - 1
    for row in logged:
        token = token_of_key(row["partition_key"])
        assert row["token"] == token
        assert row["cdc$stream_id"] == generations.get_stream(row["write_time_us"], token).value
        expected = generations.operating_at(row["write_time_us"]).timestamp
        assert row["generation"] == datetime.datetime.fromtimestamp(expected / 1e6, datetime.timezone.utc)
    assert {r["generation"].year for r in logged} == {2020, 2025}  # both generations in use
    assert out[-1]["failure"] == R.UNDECODABLE and out[-1]["cdc$stream_id"] is None


def test_writes_from_the_future_and_before_any_generation_are_dead_letters(generations):
    # Reached Kafka in 2025: the 2026 writes are more than the leeway ahead of it.
    batch = decoded_batch(datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc))
    late_start = Generations([Generation(1_750_000_000_000_000, generations.generations[1].description)])
    out = assign_batch(batch, late_start, leeway_us=5_000_000, max_age_us=None).to_pylist()
    reasons = {(r["write_time_us"] > 1_750_000_000_000_000, r["failure"]) for r in out[:-1]}
    assert reasons == {(True, R.FROM_THE_FUTURE), (False, R.NO_GENERATION)}
    assert all(r["cdc$stream_id"] is None and r["failure_detail"] for r in out)


def test_too_old_only_when_configured(generations):
    batch = decoded_batch(datetime.datetime(2027, 1, 1, tzinfo=datetime.timezone.utc))
    day = 86_400_000_000
    out = assign_batch(batch, generations, leeway_us=5_000_000, max_age_us=365 * day).to_pylist()
    assert {r["failure"] for r in out[:-1]} == {R.TOO_OLD, None}
    assert all(r["failure"] == R.TOO_OLD for r in out[:-1] if r["write_time_us"] < 1_750_000_000_000_000)


def test_a_mirror_keeps_every_row(generations):
    # The same rows as above, for a mirror: none rejected; those no generation covers have no stream id.
    batch = decoded_batch(datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc))
    late_start = Generations([Generation(1_750_000_000_000_000, generations.generations[1].description)])
    out = assign_batch(batch, late_start, leeway_us=5_000_000, max_age_us=None, reject_rows=False).to_pylist()
    assert [r["failure"] for r in out] == [None] * (len(out) - 1) + [R.UNDECODABLE]
    covered = [r["write_time_us"] > 1_750_000_000_000_000 for r in out[:-1]]
    assert any(covered) and not all(covered)
    assert [r["cdc$stream_id"] is not None for r in out[:-1]] == covered
    assert all(r["token"] == token_of_key(r["partition_key"]) for r in out[:-1])
