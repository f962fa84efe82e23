"""A micro-batch as the job hands it to a sink, built from rows given in the test (the sink tests' input)."""
from __future__ import annotations

import json

from pyspark.sql import functions as F

from spark.rows import DEAD_LETTER, LATE, LOG_ROW, ROW_INSERT
from spark.sinks.contract import MicroBatch
from tests.support import micros, timeuuid

WRITE_US = 1_699_284_279_123_456
STREAM_A = bytes.fromhex("7fffffffffffffff0000000000000011")
PLANNED_MS = 1_699_284_300_000  # batch n is planned at this time plus n ms
# Column values of every shape a JSON text takes (Python's own NaN and infinities too).
ODD_COLUMNS = {
    "name": json.dumps("O'Brien, \"Bob\"\nline two\t\\ é 😀 \u0001"), "items": json.dumps({"k": [1, 2]}),
    "score": "NaN", "ratios": "[1.5, NaN, -Infinity]", "nul": json.dumps("a\x00b"), "empty": '""',
    "none": "null", 'we"ird\\name': json.dumps(1), "big": "123456789012345678901234567890",
    "fraction": "1.50",
}


def micro_batch(spark, batch_id: int, rows: list[tuple], letters: list[tuple] = (),
                offsets: str | None = None, late: bool = False) -> MicroBatch:
    """`offsets`: the batch's offset digest, by default one per batch id (as one checkpoint gives);
    `late`: every row read late, as the replica-copy step marks it."""
    logged = spark.createDataFrame(rows, LOG_ROW).withColumn(LATE, F.lit(late))
    return MicroBatch(batch_id, logged, spark.createDataFrame(list(letters), DEAD_LETTER),
                      lambda: len(letters), offsets or f"offsets-of-{batch_id}", PLANNED_MS + batch_id)


def log_row(n: int, *, seq: int = 0, operation: int = ROW_INSERT, stream: bytes = STREAM_A, node: str = "n1",
            columns: dict[str, str] | None = None, deleted: list[str] | None = None,
            elements: dict[str, str] | None = None, ttl: int | None = None) -> tuple:
    write_us = WRITE_US + n
    row = {
        "keyspace": "shop", "table": "orders", "cdc$stream_id": stream, "cdc$time": timeuuid(write_us, n),
        "cdc$batch_seq_no": seq, "cdc$operation": operation, "cdc$ttl": ttl, "cdc$end_of_batch": True,
        "key": json.dumps({"id": n, "region": "eu"}),
        "columns": columns if columns is not None else {"name": json.dumps(f"order {n}")},
        "deleted_columns": deleted or [], "deleted_elements": elements or {},
        "write_time": micros(write_us), "write_time_us": write_us,
        "partition_key": n.to_bytes(4, "big"), "token": -9_000_000_000_000_000_000 + n,
        "generation": micros(1_699_000_000_000_000), "change_id": f"change-{n}",
        "kafka_time": micros(write_us + 2_000), "source": {
            "node": node, "segment_id": 1_699_000_000_001, "entry_offset": 4096 + n, "update_index": 0,
            "row_index": seq, "topic": "ringtail.shop.orders", "partition": 0, "offset": 100 + n, "schema_id": 3},
    }
    return tuple(row[name] for name in LOG_ROW.fieldNames())
