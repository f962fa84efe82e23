"""`log_row_texts` refusing a log row whose value's JSON text is not JSON as Python's `json.loads` reads it, in
the native core (`json_text` and `log_json` in the Rust crate) and in Python without it; held to `json.loads`
on real JSON (the Avro schemas ringtail registers, a log row's text) and on every one-byte change of it."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from spark.sinks.json_rows import NotJsonError, log_row_texts

SCHEMAS = sorted((Path(__file__).resolve().parents[4] / "schemas").glob("*.avsc"))
LOG_ROW = ('{"keyspace":"shop","table":"orders","cdc$stream_id":"0x01ab",'
           '"cdc$time":"8f0c5a3e-7cbb-11ee-9858-c9aa1eb53e69",'
           '"cdc$batch_seq_no":0,"cdc$operation":2,"cdc$ttl":null,"cdc$end_of_batch":true,"key":{"id":7},'
           '"columns":{"amount":-12.5e-3,"ratio":NaN,"big":Infinity,"small":-Infinity,'
           '"name":"O\'Brien \\"Bob\\"\\n é 😀",'
           '"items":{"757e5210-7cbb-11ee-9858-c9aa1eb53e69":5},"attrs":[["k",1],["l",null]],"lone":"\\ud800"},'
           '"deleted_columns":[],"deleted_elements":{},"write_time":"2026-11-28T10:00:00.000001Z"}')
EDGES = [
    "", " ", "0", "-0", "01", "1.", "1.e3", ".5", "1e", "1e+", "1E-7", "-", "--1", "+1", "1_000", "0x10",
    "NaN", "nan", "Infinity", "-Infinity", "+Infinity", "-NaN", "Inf", "true", "True", "null", "nul", "nulll",
    '""', '"', '"\\"', '"\\u12"', '"\\u12G4"', '"\\uD83D\\uDE00"', '"\\x41"', '"\\/"', '"a\tb"', '"a\x7fb"',
    "[]", "[ ]", "[,]", "[1,]", "[1 2]", "[[[]]]", "[[[]]", "{}", "{ }", '{"a"}', '{"a":}', '{"a":1,}', "{1:2}",
    '{"a" : 1 , "b" :[ ] }', "\t\n\r 1 \r\n\t", "1 2", "{}{}", "[1]x", '"é"', "é", "\u00a01", "[" * 40 + "]" * 40,
]


def verdicts(texts: list[str | None]) -> list[bool]:
    """Whether each text is JSON, as `json.loads` says."""
    def loads(text: str | None) -> bool:
        try:
            json.loads(text)
        except (TypeError, ValueError):
            return False
        return True
    return [loads(t) for t in texts]


def rows(keys: list[str | None], columns: list[dict[str, str | None]] | None = None) -> pa.RecordBatch:
    """Log rows (a few of their columns) keyed by the texts `keys`, with the maps of value texts `columns`."""
    columns = columns if columns is not None else [{} for _ in keys]
    return pa.RecordBatch.from_pydict({"key": keys, "columns": [list(c.items()) for c in columns],
                                       "change_id": [f"change-{n}" for n in range(len(keys))]},
                                      pa.schema([("key", pa.string()), ("columns", pa.map_(pa.string(), pa.string())),
                                                 ("change_id", pa.string())]))


def refused(batch: pa.RecordBatch) -> str | None:
    """The change `log_row_texts` names as holding a text that is not JSON; None when it makes every text."""
    try:
        log_row_texts(batch)
    except NotJsonError as exc:
        return exc.change_id
    return None


def checked(texts: list[str]) -> list[bool]:
    """Whether each text is JSON, as `log_row_texts` says of it as a row's key and as a value of its columns, a
    row at a time (each as a batch of one)."""
    batch = rows(["{}"] * len(texts), [{"v": t} for t in texts])
    as_value = [refused(batch.slice(i, 1)) is None for i in range(len(texts))]
    as_key = [refused(rows([t])) is None for t in texts]
    assert as_key == as_value
    return as_key


def one_byte_changes(text: str) -> list[str]:
    """`text` without each of its characters, and with a character that JSON's grammar turns on put before each."""
    inserted = '"\\{}[],:-.eE0 '
    return sorted({text[:i] + text[i + 1:] for i in range(len(text))}
                  | {text[:i] + c + text[i:] for i in range(len(text) + 1) for c in inserted})


def test_edge_cases_are_judged_as_json_loads_judges_them(json_texts_by):
    assert checked(EDGES) == verdicts(EDGES)


@pytest.mark.parametrize("source", ["log row", *(p.name for p in SCHEMAS)])
def test_real_json_and_every_one_byte_change_of_it_are_judged_as_json_loads_judges_them(json_texts_by, source):
    text = LOG_ROW if source == "log row" else (Path(SCHEMAS[0]).parent / source).read_text()
    texts = [text, *one_byte_changes(text if len(text) < 800 else text[:800])]
    assert checked(texts) == verdicts(texts)
    assert any(verdicts(texts)) and not all(verdicts(texts))


def test_the_first_row_not_json_is_named_by_its_change_and_a_null_text_is_null(json_texts_by):
    batch = rows(['{"a":1}', "[1]", '{"a":1}', "2", None], [{}, {"x": "1"}, {"x": "1", "y": "[1,]"}, {}, {"n": None}])
    assert refused(batch) == "change-2"
    assert refused(batch.slice(3)) is None
    assert refused(batch.slice(0, 2)) is None
    assert [json.loads(t) for t in log_row_texts(batch.slice(3)).to_pylist()] == [
        {"key": 2, "columns": {}, "change_id": "change-3"},
        {"key": None, "columns": {"n": None}, "change_id": "change-4"}]
    assert refused(batch.slice(0, 0)) is None
