"""`python -m connector dump` prints one JSON object per change."""
import json
import subprocess
import sys

import pytest

from connector.cli import main
from tests.support import unused_port
from tests.unit.connector.commitlog.testdata import REPO_ROOT, SEGMENT_40

STANDARD1 = ('CREATE TABLE "Keyspace1"."Standard1" (key ascii, col ascii, val blob, val0 blob, '
             'PRIMARY KEY ((key), col)) WITH ID = 657e5210-7cbb-11ee-9858-c9aa1eb53e69 AND cdc = true;')


@pytest.fixture(params=["native", "python"])
def decoder(request) -> list[str]:
    return ["--decoder", request.param]


def test_dump_prints_json_lines(tmp_path, capsys, decoder):
    schema = tmp_path / "schema.cql"
    schema.write_text(STANDARD1)
    assert main(["dump", str(SEGMENT_40), "--schema", str(schema), "--skip-unknown-tables", *decoder]) == 0
    out, err = capsys.readouterr()
    lines = [json.loads(line) for line in out.splitlines()]
    assert len(lines) == 355
    assert "skipped:" in err and "7ad54392-bcdd-35a6-8417-4e047860b377" in err
    smallest = next(line for line in lines if line["position"]["entry_offset"] == 19646)
    assert smallest == {
        "segment": str(SEGMENT_40),
        "position": {"segment_id": 1699285478684, "entry_offset": 19646, "update_index": 0, "row_index": 0},
        "keyspace": "Keyspace1", "table": "Standard1", "op": "insert",
        "partition_key": {"key": "old-style mapred"}, "clustering": ["name0"],
        "liveness": {"timestamp": 1699285480066000},
        "cells": {"val": {"value": "0x3637", "timestamp": 1699285480066000}},
    }


def test_limit_option(tmp_path, capsys, decoder):
    schema = tmp_path / "schema.cql"
    schema.write_text(STANDARD1)
    assert main(["dump", str(SEGMENT_40), "--schema", str(schema), "--limit", "1576",
                 "--skip-unknown-tables", *decoder]) == 0
    assert capsys.readouterr().out == ""  # the first two sections hold only system tables


def test_unknown_table_is_an_error_by_default(tmp_path, capsys, decoder):
    schema = tmp_path / "schema.cql"
    schema.write_text(STANDARD1)
    assert main(["dump", str(SEGMENT_40), "--schema", str(schema), *decoder]) == 2
    assert "unknown table id 7ad54392-bcdd-35a6-8417-4e047860b377" in capsys.readouterr().err


def test_both_decoders_dump_the_same_lines_then_the_same_damage(tmp_path, capsys):
    """A copy with a byte flipped half-way through the section of its 355 changes: every line before
    the damage, then one error line."""
    schema = tmp_path / "schema.cql"
    schema.write_text(STANDARD1)
    data = bytearray(SEGMENT_40.read_bytes())
    data[40_000] ^= 0xFF
    cut = tmp_path / SEGMENT_40.name
    cut.write_bytes(data)
    printed = {}
    for name in ("native", "python"):
        assert main(["dump", str(cut), "--schema", str(schema), "--skip-unknown-tables", "--decoder", name]) == 2
        out, err = capsys.readouterr()
        printed[name] = out, err.splitlines()[-1]
    assert printed["native"] == printed["python"]
    out, error = printed["native"]
    assert 100 < len(out.splitlines()) < 355
    assert error.startswith("error: ") and str(cut) in error


def test_cassandra_that_does_not_answer(capsys):
    port = unused_port()
    assert main(["dump", str(SEGMENT_40), "--cassandra", f"127.0.0.1:{port}"]) == 2
    assert f"cannot read the schema from Cassandra at 127.0.0.1:{port}" in capsys.readouterr().err


def test_bad_schema_file(tmp_path, capsys):
    schema = tmp_path / "schema.cql"
    schema.write_text("CREATE TABLE ks.t (k int PRIMARY KEY);")
    assert main(["dump", str(SEGMENT_40), "--schema", str(schema)]) == 2
    assert "no ID" in capsys.readouterr().err


def test_module_entry_point(tmp_path):
    schema = tmp_path / "schema.cql"
    schema.write_text(STANDARD1)
    result = subprocess.run([sys.executable, "-m", "connector", "dump", str(SEGMENT_40), "--schema", str(schema),
                             "--skip-unknown-tables"], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert len(result.stdout.splitlines()) == 355
