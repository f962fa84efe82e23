"""Log rows and dead letters as Avro records (the Kafka sink's `format=avro`)."""
from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from fastavro import parse_schema
from pyspark.sql import Row
from pyspark.sql.types import BooleanType, IntegerType, MapType, StructField, StructType

from schemas.avro.wire import frame, unframe
from spark import rows as R
from spark.sinks.kafka.avro_rows import AvroLogRows, avro_datum, record_schema
from spark.sinks.kafka.records import RECORDS

UTC = dt.timezone.utc
WRITTEN = dt.datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)


def log_row(**changes) -> Row:
    values = {
        "keyspace": "shop", "table": "orders", "cdc$stream_id": bytes(range(16)),
        "cdc$time": "a8f2b5e0-0000-1000-8000-000000000001", "cdc$batch_seq_no": 0,
        "cdc$operation": R.ROW_UPDATE, "cdc$ttl": None, "cdc$end_of_batch": True, "key": '{"id":7}',
        "columns": {"qty": "5", "note": '"x"'}, "deleted_columns": ["gone"], "deleted_elements": {"tags": '["a"]'},
        "write_time": WRITTEN, "write_time_us": 1_772_366_400_123_456, "partition_key": b"\x00\x00\x00\x07",
        "token": -42, "generation": dt.datetime(2026, 1, 1, tzinfo=UTC), "change_id": "ab" * 16,
        "kafka_time": WRITTEN, "source": Row(node="n1", segment_id=1, entry_offset=2, update_index=0, row_index=0,
                                             topic="ringtail.shop.orders", partition=1, offset=99, schema_id=3),
    }
    values.update(changes)
    return Row(**{f.name: values[f.name] for f in R.LOG_ROW.fields})


def test_the_log_row_record_follows_the_spark_layout():
    schema = record_schema(R.LOG_ROW, "LogRow")
    parse_schema(schema)
    names = [f["name"] for f in schema["fields"]]
    assert names == [f.name.replace("$", "_") for f in R.LOG_ROW.fields]
    renamed = {f["name"]: f["cql_name"] for f in schema["fields"] if "cql_name" in f}
    assert renamed["cdc_stream_id"] == "cdc$stream_id" and set(renamed) == {n for n in names if n.startswith("cdc_")}
    by_name = {f["name"]: f for f in schema["fields"]}
    assert by_name["keyspace"]["type"] == "string"  # not nullable in the layout: no union
    assert by_name["cdc_ttl"]["type"] == ["null", "long"] and by_name["cdc_ttl"]["default"] is None
    assert by_name["write_time"]["type"] == {"type": "long", "logicalType": "timestamp-micros"}


def test_log_rows_go_through_the_wire_unchanged():
    """As the executors encode them: from the Arrow batch the sink's task is given."""
    parsed = parse_schema(record_schema(R.LOG_ROW, "LogRow"))
    rows = [log_row(), log_row(**{"cdc$stream_id": None, "token": None, "generation": None, "cdc$ttl": 60,
                                  "columns": {}, "deleted_columns": [], "deleted_elements": {}}),
            log_row(columns={"note": '"é\\u0000"', "": "null"}, key='{"id":"ü"}', change_id="cd" * 16)]
    layout = StructType([*R.LOG_ROW.fields, StructField(R.LATE, BooleanType(), False)])
    batch = pa.RecordBatch.from_pylist([{**r.asDict(recursive=True), R.LATE: i == 1} for i, r in enumerate(rows)],
                                       schema=R.arrow_schema(layout))
    records = AvroLogRows(12, parsed)(batch)
    assert records.schema == RECORDS
    assert records.column("key").to_pylist() == [r.partition_key for r in rows]
    assert records.column("change_id").to_pylist() == [r.change_id for r in rows]
    assert records.column("late").to_pylist() == [False, True, False]
    for row, value in zip(rows, records.column("value").to_pylist()):
        expected = {name.replace("$", "_"): value for name, value in row.asDict(recursive=True).items()}
        assert unframe(value, parsed) == expected


def test_a_dead_letter_goes_through_the_wire_unchanged():
    parsed = parse_schema(record_schema(R.DEAD_LETTER, "DeadLetter"))
    row = Row(reason=R.UNDECODABLE, detail="MalformedPayload: magic byte 1", topic="t", partition=0, offset=5,
              kafka_time=WRITTEN, key=None, value=b"\x01junk", keyspace=None, table=None, write_time_us=None,
              change_id="undecodable:t:0:5")
    assert unframe(frame(1, parsed, avro_datum(row)), parsed) == row.asDict()


def test_a_layout_avro_cannot_hold_is_refused():
    with pytest.raises(TypeError, match="m: an Avro map needs string keys"):
        record_schema(StructType([StructField("m", MapType(IntegerType(), IntegerType()))]), "Bad")
