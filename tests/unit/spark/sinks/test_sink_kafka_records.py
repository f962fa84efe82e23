"""The Kafka sink's records as the executors encode them and the driver reads them back (Arrow streams)."""
import json

import pyarrow as pa
import pytest

from spark import rows as R
from spark.sinks.kafka.records import RECORDS, _chunks
from spark.sinks.kafka.sink import KafkaSinkError, _json_chunk


def log_batch(keys: list[str]) -> pa.RecordBatch:
    """Log rows (a few of their columns, and whether each was read late) keyed by the JSON texts `keys`."""
    n = len(keys)
    return pa.RecordBatch.from_pydict({"table": ["é"] * n, "key": keys, "partition_key": [bytes([i]) for i in range(n)],
                                       "change_id": [f"change-{i}" for i in range(n)],
                                       R.LATE: [i % 2 == 1 for i in range(n)]})


def test_json_log_rows_are_shipped_as_one_arrow_stream_a_batch_in_their_order_without_the_late_flag():
    keys = ['{"a": 1}', '{"b":"é"}', "[]"]
    (chunk,) = [c for out in _chunks(_json_chunk, iter([log_batch(keys)])) for c in out.column("chunk").to_pylist()]
    table = pa.ipc.open_stream(chunk).read_all()
    assert table.schema == RECORDS
    assert [{**r, "value": json.loads(r["value"])} for r in table.to_pylist()] == [
        {"key": bytes([i]), "value": {"table": "é", "key": json.loads(k), "partition_key": f"0x0{i}",
                                      "change_id": f"change-{i}"}, "change_id": f"change-{i}", "late": i == 1}
        for i, k in enumerate(keys)]


def test_a_log_row_whose_text_is_not_json_fails_the_batch_naming_its_change():
    with pytest.raises(KafkaSinkError, match="change change-1 holds a value whose text is not JSON"):
        _json_chunk(log_batch(['{"a":1}', '{"b":']))
