"""``python -m spark.streams`` run as a subprocess, as scripts will use it."""

import json
import subprocess
import sys

import pytest

from spark.streams import StreamId, build_topology_description, token_of


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "spark.streams", *args], capture_output=True, text=True, timeout=60
    )


def run_json(*args: str):
    completed = run(*args, "--json")
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


@pytest.mark.parametrize(
    ("args", "token"),
    [
        (["--type", "int", "1"], -4069959284402364209),
        (["--type", "text", "hello"], -3758069500696749310),
        (["--type", "text,int", "hello", "42"], 7666157718303755816),
        (["--type", "blob", "0x00"], 5048724184180415669),
        (["--type", "int", "-1"], 7297452126230313552),
        (["--type", "uuid", "00000000-0000-0000-0000-000000000000"], 5457549051747178710),
    ],
)
def test_token_json(args, token):
    assert run_json("token", *args) == {"token": token}


def test_token_composite_matches_library():
    assert run_json("token", "--type", "int,text", "7", "abc") == {"token": token_of([7, "abc"], ["int", "text"])}


def test_token_text_output():
    completed = run("token", "--type", "int", "1")
    assert completed.returncode == 0
    assert completed.stdout.strip() == "token: -4069959284402364209"


def test_token_errors_are_reported():
    completed = run("token", "--type", "duration", "1d", "--json")
    assert completed.returncode == 1
    assert json.loads(completed.stdout)["kind"] == "UnsupportedKeyType"
    completed = run("token", "--type", "int,int", "1")
    assert completed.returncode == 1
    assert "2 key columns" in completed.stderr


def test_stream_id_encode_and_decode():
    encoded = run_json("stream-id", "encode", "--token", "-5", "--index", "3", "--random", "12345")
    assert encoded == {
        "stream_id": "0xfffffffffffffffb000000c0e4000031",
        "token": -5,
        "index": 3,
        "version": 1,
        "random": 12345,
    }
    assert run_json("stream-id", "decode", encoded["stream_id"]) == encoded
    text = run("stream-id", "decode", "fffffffffffffffb000000c0e4000031").stdout
    assert "token=-5" in text and "index=3" in text


def test_stream_id_decode_rejects_unknown_versions():
    completed = run("stream-id", "decode", "0x365fd1a9ae34373954529ac8169dfb93", "--json")
    assert completed.returncode == 1
    assert json.loads(completed.stdout)["kind"] == "UnknownStreamIdVersion"


def test_generation_from_ring_file(tmp_path):
    ring_file = tmp_path / "ring.json"
    ring_file.write_text(json.dumps({"a": ["-100", "5000"], "b": {"tokens": [0], "shards": 3}}))
    result = run_json("generation", "--ring", str(ring_file), "--shards", "2", "--seed", "4", "--token", "1")
    expected = build_topology_description(
        {"a": [-100, 5000], "b": [0]}, shards={"a": 2, "b": 3}, ignore_msb=12, rand=4
    )
    assert [entry["token_range_end"] for entry in result["entries"]] == [-100, 0, 5000]
    assert [len(entry["streams"]) for entry in result["entries"]] == [2, 3, 2]
    assert [s["stream_id"] for e in result["entries"] for s in e["streams"]] == [s.hex() for s in expected.streams]
    assert result["lookups"] == [{"token": 1, "stream_id": expected.get_stream(1).hex()}]
    first = result["entries"][0]["streams"][0]
    assert StreamId.from_hex(first["stream_id"]).token == first["token"] == 5001


def test_generation_from_command_line_tokens():
    result = run_json("generation", "--node", "a=10", "--node", "b=-10", "--ignore-msb", "0", "--seed", "1")
    assert [(e["token_range_end"], e["sharding_ignore_msb"]) for e in result["entries"]] == [(-10, 0), (10, 0)]
    assert [e["streams"][0]["token"] for e in result["entries"]] == [11, -9]
    text = run("generation", "--node", "a=10", "--seed", "1").stdout
    assert text.startswith("range_end=10 ignore_msb=12") and "shard 0:" in text


def test_generation_needs_a_ring():
    completed = run("generation", "--json")
    assert completed.returncode == 2
    assert "--ring or --node" in completed.stderr
