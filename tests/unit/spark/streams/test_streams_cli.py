"""``python -m spark.streams`` run as a subprocess, as scripts will use it."""

import json
import re
import subprocess

import pytest

from spark.streams import (
    Generation,
    Generations,
    StreamId,
    build_topology_description,
    token_of,
    write_generations,
)
from tests.support import streams_cli as run, streams_cli_json as run_json

SECOND = 1_000_000
T0 = 1_700_000_000 * SECOND
T1 = T0 + 3600 * SECOND
STREAM_HEX = re.compile(r"0x[0-9a-f]{32}")


def assert_fails(completed: subprocess.CompletedProcess, message: str) -> None:
    assert completed.returncode == 2
    assert message in completed.stderr
    assert "Traceback" not in completed.stderr


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
    # Commas inside a type do not separate columns; frozen values are given serialized.
    nested = run_json("token", "--type", "int, frozen<map<int,text>>", "7", "0x00000000")
    assert nested == {"token": token_of([7, b"\0\0\0\0"], ["int", "frozen<map<int,text>>"])}


def test_json_flag_may_come_before_the_command():
    completed = run("--json", "token", "--type", "int", "1")
    assert json.loads(completed.stdout) == {"token": -4069959284402364209}


def test_token_text_output():
    completed = run("token", "--type", "int", "1")
    assert completed.returncode == 0
    assert completed.stdout.strip() == "token: -4069959284402364209"


def test_token_errors_are_reported():
    completed = run("token", "--type", "duration", "1d", "--json")
    assert_fails(completed, "not allowed in a partition key")
    assert json.loads(completed.stdout)["kind"] == "UnsupportedKeyType"
    assert_fails(run("token", "--type", "int,int", "1"), "2 key columns")
    assert_fails(run("token", "--type", "int,", "1"), "one CQL type per key column")
    assert_fails(run("token", "--type", "int", "x"), "not an integer")


def test_decode():
    assert run_json("decode", "0xfffffffffffffffb000000c0e4000031") == {
        "token": -5,
        "version": 1,
        "index": 3,
        "random": 12345,
    }
    assert run("decode", "fffffffffffffffb000000c0e4000031").stdout.strip() == "token=-5 version=1 index=3 random=12345"
    assert_fails(run("decode", "0x1234"), "16 bytes")
    assert_fails(run("decode", "0x365fd1a9ae34373954529ac8169dfb93"), "unknown CDC stream id version")


def test_stream_id_encode_and_decode():
    encoded = run_json("stream-id", "encode", "--token", "-5", "--index", "3", "--random", "12345")
    assert encoded == {
        "stream_id": "0xfffffffffffffffb000000c0e4000031",
        "token": -5,
        "version": 1,
        "index": 3,
        "random": 12345,
    }
    assert run_json("stream-id", "decode", encoded["stream_id"]) == encoded


def test_generation_from_tokens():
    result = run_json("generation", "--tokens", "-100,0,5000", "--shards", "2", "--ignore-msb", "12", "--seed", "4")
    expected = build_topology_description({"node": [-100, 0, 5000]}, shards=2, ignore_msb=12, rand=4)
    assert result == {
        "entries": [
            {"token_range_end": entry.token_range_end, "streams": [s.hex() for s in entry.streams]}
            for entry in expected.entries
        ]
    }
    unseeded = run_json("generation", "--tokens", "7", "--shards", "3", "--ignore-msb", "0")
    (entry,) = unseeded["entries"]
    assert entry["token_range_end"] == 7 and len(entry["streams"]) == 3
    assert all(STREAM_HEX.fullmatch(stream) for stream in entry["streams"])


def test_generation_from_ring_file(tmp_path):
    ring_file = tmp_path / "ring.json"
    ring_file.write_text(json.dumps({"a": ["-100", "5000"], "b": {"tokens": [0], "shards": 3}}))
    result = run_json("generation", "--ring", str(ring_file), "--shards", "2", "--seed", "4", "--token", "1")
    expected = build_topology_description(
        {"a": [-100, 5000], "b": [0]}, shards={"a": 2, "b": 3}, ignore_msb=12, rand=4
    )
    assert [entry["token_range_end"] for entry in result["entries"]] == [-100, 0, 5000]
    assert [len(entry["streams"]) for entry in result["entries"]] == [2, 3, 2]
    assert [s for e in result["entries"] for s in e["streams"]] == [s.hex() for s in expected.streams]
    assert result["lookups"] == [{"token": 1, "stream_id": expected.get_stream(1).hex()}]
    assert StreamId.from_hex(result["entries"][0]["streams"][0]).token == 5001


def test_generation_from_command_line_nodes():
    result = run_json("generation", "--node", "a=10", "--node", "b=-10", "--ignore-msb", "0", "--seed", "1")
    assert [e["token_range_end"] for e in result["entries"]] == [-10, 10]
    assert [StreamId.from_hex(e["streams"][0]).token for e in result["entries"]] == [11, -9]
    text = run("generation", "--node", "a=10", "--seed", "1").stdout
    assert text.startswith("range (10, 10] ignore_msb=12") and "shard 0:" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "--tokens, --node, --ring or --cassandra"),
        (["--tokens", "1,x"], "comma-separated integers"),
        (["--tokens", "1,1", "--node", "b=1"], "claimed by"),
        (["--tokens", "1", "--shards", "0"], "shard count"),
        (["--ring", "/no/such/ring.json"], "cannot read ring file"),
        (["--cassandra", "host:notaport"], "expected HOST[:PORT]"),
    ],
)
def test_generation_errors(args, message):
    assert_fails(run("generation", *args), message)


def test_generation_rejects_a_malformed_ring_file(tmp_path):
    ring_file = tmp_path / "ring.json"
    ring_file.write_text('{"a": {"shards": 2}}')
    assert_fails(run("generation", "--ring", str(ring_file)), "expected node -> tokens")
    ring_file.write_text("[1, 2")
    assert_fails(run("generation", "--ring", str(ring_file)), "is not JSON")


@pytest.fixture
def generations_file(tmp_path):
    old = build_topology_description({"a": [-100, 5000], "b": [0]}, shards=2, rand=1)
    new = build_topology_description({"a": [-100, 5000], "b": [0], "c": [2500]}, shards=2, rand=2)
    path = tmp_path / "generations.json"
    write_generations(path, Generations([Generation(T0, old), Generation(T1, new)]).generations)
    return path, old, new


def test_stream_switches_at_the_generation_timestamp(generations_file):
    path, old, new = generations_file
    token = token_of([7], ["int"])
    before = run_json("stream", "--ts", str(T1 - 1), "--generations", str(path), "--type", "int", "7")
    at = run_json("stream", "--ts", str(T1), "--generations", str(path), "--type", "int", "7")
    placement = old.place(token)
    assert before == {
        "token": token,
        "generation": T0,
        "range": {"start": placement.start, "end": placement.end},
        "index": placement.index,
        "shard": placement.shard,
        "stream_id": placement.stream.hex(),
    }
    assert at["generation"] == T1 and at["stream_id"] == new.get_stream(token).hex()
    text = run("stream", "--ts", str(T1), "--generations", str(path), "--type", "int", "7").stdout
    assert f"generation: {T1} (2023-11-14 23:13:20.000 UTC)" in text and new.get_stream(token).hex() in text


def test_stream_outcomes_are_typed(generations_file):
    path = str(generations_file[0])
    completed = run("stream", "--ts", str(T0 - 1), "--generations", path, "--type", "int", "7", "--json")
    assert_fails(completed, "could not find any CDC stream")
    assert json.loads(completed.stdout)["kind"] == "NoGenerationOperating"
    past = run("stream", "--ts", str(T0), "--now", str(T1 + SECOND), "--generations", path, "--type", "int", "7")
    assert_fails(past, "precedes the current generation")
    future = run("stream", "--ts", str(T1 + 6 * SECOND), "--now", str(T1), "--generations", path, "--type", "int", "7")
    assert_fails(future, "beyond now")
    accepted = run_json(
        "stream", "--ts", str(T1 + SECOND), "--now", str(T1), "--generations", path, "--type", "int", "7"
    )
    assert accepted["generation"] == T1


def test_stream_needs_one_source_and_a_readable_file(tmp_path):
    completed = run("stream", "--ts", "1", "--type", "int", "7")
    assert completed.returncode == 2 and "--generations" in completed.stderr
    bad = tmp_path / "bad.json"
    bad.write_text('{"generations": [{"timestamp": 1.5}]}')
    completed = run("stream", "--ts", "1", "--generations", str(bad), "--type", "int", "7")
    assert_fails(completed, "expected an integer, got 1.5")


def test_describe_file(generations_file):
    path, old, new = generations_file
    described = run_json("describe", "--generations", str(path))
    assert [g["timestamp"] for g in described["generations"]] == [T0, T1]
    assert described["generations"][1]["entries"][0] == {
        "token_range_end": new.entries[0].token_range_end,
        "sharding_ignore_msb": 12,
        "streams": [s.hex() for s in new.entries[0].streams],
    }
    text = run("describe", "--generations", str(path)).stdout
    assert f"generation {T0} (2023-11-14 22:13:20.000 UTC), until {T1}" in text
    assert f"generation {T1} (2023-11-14 23:13:20.000 UTC), onwards" in text
    assert "3 token ranges, 6 streams" in text and "4 token ranges, 8 streams" in text
    assert "range (5000, -100] vnode 0, ignore_msb 12" in text
    assert f"shard 1: {old.entries[0].streams[1].hex()}" in text


def test_describe_output_is_a_generations_file(generations_file, tmp_path):
    path = generations_file[0]
    copy = tmp_path / "copy.json"
    copy.write_text(run("describe", "--generations", str(path), "--json").stdout)
    assert run_json("describe", "--generations", str(copy)) == run_json("describe", "--generations", str(path))
