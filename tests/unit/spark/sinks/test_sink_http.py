"""The HTTP sink's posting rules against a real local HTTP server: chunks with stable idempotency keys,
retries with backoff on 5xx, timeouts and refused connections, and a 4xx failing the batch with the
receiver's answer."""
from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql import Row

from deploy.local.receiver import Receiver
from spark.sinks.contract import chunks
from spark.sinks.http.sink import HttpSink, HttpSinkError
from spark.sinks.json_rows import log_row_json
from spark.sinks.parts import part_digest
from tests.support import unused_port


@pytest.fixture
def receiver():
    running = Receiver()
    yield running
    running.close()


def sink(url: str, **options) -> HttpSink:
    return HttpSink(url, app_id="audit.1", **{"batch_size": 2, "timeout": 0.5, "backoff": 0.01, **options})


def test_a_batch_is_posted_in_chunks_each_with_its_key(receiver):
    sent = sink(receiver.url).poster.post_all("log-rows", ({"n": i} for i in range(5)), batch="7")
    assert sent == 5
    assert receiver.accepted() == {"audit.1:7:log-rows:0": [{"n": 0}, {"n": 1}],
                                   "audit.1:7:log-rows:1": [{"n": 2}, {"n": 3}],
                                   "audit.1:7:log-rows:2": [{"n": 4}]}
    assert receiver.requests[0]["headers"]["content-type"] == "application/json"


def test_5xx_and_a_slow_answer_are_retried_with_the_same_key(receiver):
    receiver.script = [(503, b"busy", 0.0), (500, b"oops", 0.0), (200, b"{}", 2.0)]  # the third times out
    sink(receiver.url).poster.post_all("log-rows", [{"n": 1}], batch="3")
    keys = [r["headers"]["idempotency-key"] for r in receiver.requests]
    assert keys == ["audit.1:3:log-rows:0"] * 4
    assert [r["status"] for r in receiver.requests] == [503, 500, 200, 200]


def test_a_4xx_fails_the_batch_with_the_receivers_answer(receiver):
    receiver.script = [(400, b'{"error": "qty must be positive"}', 0.0)]
    with pytest.raises(HttpSinkError, match=r"refused audit.1:4:log-rows:0 with 400: .*qty must be positive"):
        sink(receiver.url).poster.post_all("log-rows", [{"n": 1}], batch="4")
    assert len(receiver.requests) == 1  # not retried: the receiver said no


def test_a_receiver_that_stays_down_fails_the_batch_after_its_attempts():
    with pytest.raises(HttpSinkError, match=r"did not take audit.1:0:log-rows:0 after 3 attempts"):
        sink(f"http://127.0.0.1:{unused_port()}/x", attempts=3).poster.post_all("log-rows", [{"n": 1}], batch="0")


def test_a_bearer_token_is_sent(receiver):
    sink(receiver.url, token="s3cret").poster.post_all("log-rows", [{"n": 1}], batch="0")
    assert receiver.requests[0]["headers"]["authorization"] == "Bearer s3cret"


def test_log_rows_are_json_as_their_values_are():
    row = Row(keyspace="shop", key='{"id": 1}', columns={"tags": '["a","b"]', "qty": "5"},
              deleted_elements={"m": '[1]'}, partition_key=b"\x00\x01", write_time_us=7)
    assert log_row_json(row) == {"keyspace": "shop", "key": {"id": 1}, "columns": {"tags": ["a", "b"], "qty": 5},
                                 "deleted_elements": {"m": [1]}, "partition_key": "0x0001", "write_time_us": 7}


def test_chunks_keep_order_and_size():
    assert list(chunks(range(5), 2)) == [[0, 1], [2, 3], [4]]
    assert list(chunks([], 2)) == []


def part(keys: list[str]) -> list[pa.RecordBatch]:
    """A part of log rows (a few of their columns) as a task holds it, keyed by the JSON texts `keys`."""
    return [pa.RecordBatch.from_pydict({"keyspace": ["shop"] * len(keys), "key": keys,
                                        "write_time_us": list(range(len(keys))),
                                        "change_id": [f"change-{n}" for n in range(len(keys))]})]


def posted(n: int) -> bytes:
    return b'{"keyspace":"shop","key":{"id":%d},"write_time_us":%d,"change_id":"change-%d"}' % (n, n, n)


def test_a_part_of_a_batch_is_posted_under_its_content_so_a_replay_repeats_its_keys(receiver):
    poster = sink(receiver.url).poster
    keys = [f'{{"id":{n}}}' for n in range(3)]
    assert poster.post_log_part("7:abc", iter(part(keys))) == 3
    assert poster.post_log_part("7:abc", iter(part(keys))) == 3  # a replay of the same part
    assert poster.post_log_part("7:abc", iter(part(keys[:1]))) == 1  # another part of the batch
    assert poster.post_log_part("7:abc", iter(())) is None  # an empty partition posts nothing
    sent = [r["headers"]["idempotency-key"] for r in receiver.requests]
    first = part_digest([b"[" + posted(0) + b"," + posted(1) + b"]", b"[" + posted(2) + b"]"])
    second = part_digest([b"[" + posted(0) + b"]"])
    assert sent == [f"audit.1:7:abc:log-rows:{first}:0", f"audit.1:7:abc:log-rows:{first}:1"] * 2 + [
        f"audit.1:7:abc:log-rows:{second}:0"]
    assert receiver.accepted()[f"audit.1:7:abc:log-rows:{first}:1"] == [
        {"keyspace": "shop", "key": {"id": 2}, "write_time_us": 2, "change_id": "change-2"}]


def test_a_part_holding_a_text_that_is_not_json_fails_naming_the_change(receiver):
    with pytest.raises(HttpSinkError, match="change change-1 holds a value whose text is not JSON"):
        sink(receiver.url).poster.post_log_part("7:abc", iter(part(['{"a":1}', '{"a":{not json}'])))
    assert receiver.requests == []
