"""`first_not_json`: a batch's JSON texts checked as Python's `json.loads` reads them, in the native core
(`json_text` in the Rust crate) and in Python without it; held to `json.loads` on real JSON (the Avro
schemas ringtail registers, a log row's text) and on every one-byte change of it."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from spark.sinks import json_rows
from spark.sinks.json_rows import first_not_json

SCHEMAS = sorted((Path(__file__).resolve().parents[4] / "schemas").glob("*.avsc"))
LOG_ROW = ('{"keyspace":"shop","table":"orders","cdc$stream_id":"0x01ab","cdc$time":"8f0c5a3e-7cbb-11ee-9858-c9aa1eb53e69",'
           '"cdc$batch_seq_no":0,"cdc$operation":2,"cdc$ttl":null,"cdc$end_of_batch":true,"key":{"id":7},'
           '"columns":{"amount":-12.5e-3,"ratio":NaN,"big":Infinity,"small":-Infinity,"name":"O\'Brien \\"Bob\\"\\n é 😀",'
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


def checked(texts: list[str | None]) -> list[bool]:
    """Whether each text is JSON, as `first_not_json` says, a text at a time (each as a batch of one)."""
    column = pa.array(texts, pa.string())
    return [first_not_json(column.slice(i, 1)) is None for i in range(len(texts))]


def one_byte_changes(text: str) -> list[str]:
    """`text` without each of its characters, and with a character that JSON's grammar turns on put before each."""
    inserted = '"\\{}[],:-.eE0 '
    return sorted({text[:i] + text[i + 1:] for i in range(len(text))}
                  | {text[:i] + c + text[i:] for i in range(len(text) + 1) for c in inserted})


@pytest.fixture(params=["native", "python"])
def checker(request, monkeypatch):
    if request.param == "python":
        monkeypatch.setattr(json_rows, "_first_not_json", None)
    elif json_rows._first_not_json is None:
        pytest.fail("the native core is not built: `pip install -e .` builds it")
    return request.param


def test_edge_cases_are_judged_as_json_loads_judges_them(checker):
    assert checked(EDGES) == verdicts(EDGES)


@pytest.mark.parametrize("source", ["log row", *(p.name for p in SCHEMAS)])
def test_real_json_and_every_one_byte_change_of_it_are_judged_as_json_loads_judges_them(checker, source):
    text = LOG_ROW if source == "log row" else (Path(SCHEMAS[0]).parent / source).read_text()
    texts = [text, *one_byte_changes(text if len(text) < 800 else text[:800])]
    assert checked(texts) == verdicts(texts)
    assert any(verdicts(texts)) and not all(verdicts(texts))


def test_the_first_text_not_json_is_named_by_its_row_in_the_batch_and_a_null_is_not_json(checker):
    column = pa.array(['{"a":1}', "[1]", '{"a":1,}', "2", None], pa.string())
    assert first_not_json(column) == 2
    assert first_not_json(column.slice(3)) == 1
    assert first_not_json(column.slice(0, 2)) is None
    assert first_not_json(pa.array([], pa.string())) is None
