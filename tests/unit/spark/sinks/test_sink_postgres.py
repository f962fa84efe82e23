"""PostgreSQL sink pieces that need no database: table layouts, statements, CSV for COPY, generation rows."""
from __future__ import annotations

import csv
import datetime
import io

import pyarrow as pa

from spark.rows import DEAD_LETTER, LOG_ROW
from spark.sinks.contract import generation_rows, utc_time
from spark.sinks.postgres.log import (
    DEAD_LETTER_COLUMNS,
    DEAD_LETTER_KEY,
    LOG_COLUMNS,
    LOG_KEY,
    Inserts,
    copy_statement,
    csv_chunk,
    ident,
    insert_statement,
    schema_statements,
    staging_statement,
)
from spark.streams import Generation, Generations, build_topology_description

UTC = datetime.timezone.utc


def test_tables_have_the_row_layouts_columns_under_the_same_names() -> None:
    assert [c.name for c in LOG_COLUMNS] == LOG_ROW.fieldNames()
    assert set(c.name for c in DEAD_LETTER_COLUMNS) == set(DEAD_LETTER.fieldNames())
    assert LOG_KEY == ("keyspace", "table", "cdc$stream_id", "cdc$time", "cdc$batch_seq_no")
    assert DEAD_LETTER_KEY == ("topic", "partition", "offset", "reason")


def test_column_types() -> None:
    types = {c.name: c.type for c in LOG_COLUMNS}
    assert types["cdc$stream_id"] == "bytea NOT NULL" and types["cdc$operation"] == "smallint NOT NULL"
    assert types["columns"] == "jsonb NOT NULL" and types["deleted_columns"] == "text[] NOT NULL"
    assert types["write_time"] == "timestamptz NOT NULL" and types["generation"] == "timestamptz"
    assert types["cdc$ttl"] == "bigint" and types["token"] == "bigint"


def test_schema_statements() -> None:
    statements = schema_statements('my "schema"')
    assert statements[0] == 'CREATE SCHEMA IF NOT EXISTS "my ""schema"""'
    log = statements[1]
    assert log.startswith('CREATE TABLE IF NOT EXISTS "my ""schema""".cdc_log ("keyspace" text NOT NULL')
    assert log.endswith('PRIMARY KEY ("keyspace", "table", "cdc$stream_id", "cdc$time", "cdc$batch_seq_no"))')
    assert 'offsets text, PRIMARY KEY (app_id, batch_id)' in statements[3]
    assert statements[4] == 'ALTER TABLE "my ""schema""".batches ADD COLUMN IF NOT EXISTS offsets text'
    # A ledger from before batches went in part by part holds finished batches only.
    assert statements[5] == ('ALTER TABLE "my ""schema""".batches ADD COLUMN IF NOT EXISTS done boolean NOT NULL'
                             ' DEFAULT true')
    assert "batch_parts (app_id text NOT NULL, batch_id bigint NOT NULL, part text NOT NULL" in statements[6]
    assert "PRIMARY KEY (app_id, batch_id, part)" in statements[6]
    assert "cdc_generation_timestamps (time timestamptz PRIMARY KEY, expired timestamptz)" in statements[7]
    assert "streams bytea[] NOT NULL, PRIMARY KEY (time, range_end)" in statements[8]
    assert "resolved_us bigint NOT NULL, PRIMARY KEY (app_id, keyspace_name, table_name)" in statements[9]
    assert '"my ""schema""".lenient_jsonb' in statements[10]
    assert 'FUNCTION "my ""schema""".json_value' in statements[11]
    assert '"my ""schema""".lenient_jsonb(v)' in statements[11]


def test_staging_copy_and_insert_statements() -> None:
    assert staging_statement("stage", DEAD_LETTER_COLUMNS[:2]) == (
        'CREATE TEMPORARY TABLE "stage" ("topic" text, "partition" integer) ON COMMIT DROP')
    assert copy_statement("stage", DEAD_LETTER_COLUMNS[:2]) == (
        'COPY "stage" ("topic", "partition") FROM STDIN (FORMAT csv)')
    insert = insert_statement("rt", "dead_letters", "stage", DEAD_LETTER_COLUMNS, ("app_id", "batch_id"))
    assert insert.endswith('%s, %s FROM "stage" s ON CONFLICT DO NOTHING')
    assert "(timestamptz 'epoch' + s.\"kafka_time\" * interval '1 microsecond')" in insert
    log = insert_statement("rt", "cdc_log", "stage", LOG_COLUMNS)
    assert "%s" not in log and '"rt".json_value(s."key")' in log and "lenient_jsonb" not in log
    assert "json_each_text((s.\"columns\")::json)" in log
    lenient = insert_statement("rt", "cdc_log", "stage", LOG_COLUMNS, lenient=True)
    assert lenient == log.replace('"rt".json_value(', '"rt".lenient_jsonb(')


def test_a_part_of_plain_rows_is_tried_by_casts_first_then_value_by_value() -> None:
    staging = staging_statement("stage", LOG_COLUMNS)
    assert '"columns" text, "columns$plain" text' in staging and '"deleted_elements$plain" text' in staging
    assert copy_statement("stage", LOG_COLUMNS).count("$plain") == 2
    inserts = Inserts.of("rt", "cdc_log", "stage", LOG_COLUMNS)
    assert 'SELECT s."keyspace"' in inserts.plain and "json_value" not in inserts.plain
    assert '(s."key")::jsonb, (s."columns$plain")::jsonb, (s."deleted_columns")::text[],' \
           ' (s."deleted_elements$plain")::jsonb' in inserts.plain
    assert inserts.in_turn(True) == [inserts.plain, inserts.usual, inserts.lenient]
    assert inserts.in_turn(False) == [inserts.usual, inserts.lenient]
    letters = Inserts.of("rt", "dead_letters", "stage", DEAD_LETTER_COLUMNS, ("app_id", "batch_id"))
    assert letters.plain is None and letters.in_turn(True) == [letters.usual, letters.lenient]


def test_csv_for_copy_tells_null_from_empty_and_keeps_any_text() -> None:
    texts = ['a"b', "x\ny\r\n", None, "", "tab\t", "back\\slash", "é,ü", "\\x00ff"]
    batch = pa.RecordBatch.from_pydict({
        "s": texts,
        "n": pa.array([1, None, -3, 4, 5, 6, 7, -(2**63)], pa.int64()),
        "b": [True, False, None, True, True, True, True, False],
        "t": pa.array([-128, 0, 1, 2, 3, 4, 5, 127], pa.int8()),
    })
    data = csv_chunk(batch)
    assert b'\n,"-3",,"1"\n' in data  # nulls are bare; everything else quoted
    assert b'\n"","4",' in data  # the empty string stays a string
    parsed = list(csv.reader(io.StringIO(data.decode(), newline="")))
    assert [r[0] for r in parsed] == [t or "" for t in texts]
    assert parsed[7][1] == str(-(2**63)) and parsed[0][2] == "true"


def test_generation_rows_in_shard_order() -> None:
    description = build_topology_description({"n1": (-100, 100), "n2": (0,)}, shards=3, rand=7)
    timestamp = 1_700_000_000_000_000
    generations = Generations([
        Generation(timestamp, description, expired=timestamp + 5_000),
        Generation(timestamp + 3_600_000_000),  # timestamp only: nothing to publish
    ])
    timestamps, streams = generation_rows(generations)
    time = datetime.datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)
    assert timestamps == [(time, time + datetime.timedelta(milliseconds=5))]
    assert [(t, end) for t, end, _ in streams] == [(time, e.token_range_end) for e in description.entries]
    assert [s for _, _, s in streams] == [[s.value for s in e.streams] for e in description.entries]


def test_utc_time_is_exact() -> None:
    assert utc_time(1) == datetime.datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=UTC)
    assert utc_time(-1) == datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    assert utc_time(None) is None
    assert ident('a"b') == '"a""b"'
