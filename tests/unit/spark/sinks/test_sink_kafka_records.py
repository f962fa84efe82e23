"""The Kafka sink's records as the executors encode them and the driver reads them back (Arrow streams)."""
import pyarrow as pa
import pytest

from spark import rows as R
from spark.sinks.kafka.records import RECORDS, _chunks
from spark.sinks.kafka.sink import KafkaSinkError, _json_chunk


def log_batch(texts: list[str]) -> pa.RecordBatch:
    n = len(texts)
    return pa.RecordBatch.from_pydict({"partition_key": [bytes([i]) for i in range(n)], "text": texts,
                                       "change_id": [f"change-{i}" for i in range(n)], R.LATE: [i % 2 == 1
                                                                                               for i in range(n)]})


def test_json_log_rows_are_shipped_as_one_arrow_stream_a_batch_in_their_order():
    texts = ['{"a":1}', '{"b":"é"}', "[]"]
    (chunk,) = [c for out in _chunks(_json_chunk, iter([log_batch(texts)])) for c in out.column("chunk").to_pylist()]
    table = pa.ipc.open_stream(chunk).read_all()
    assert table.schema == RECORDS
    assert table.to_pylist() == [{"key": bytes([i]), "value": t.encode(), "change_id": f"change-{i}", "late": i == 1}
                                 for i, t in enumerate(texts)]


def test_a_log_row_whose_text_is_not_json_fails_the_batch_naming_its_change():
    with pytest.raises(KafkaSinkError, match="change change-1 holds a value whose text is not JSON"):
        _json_chunk(log_batch(['{"a":1}', '{"b":']))
