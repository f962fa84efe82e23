"""The generations JSON format: round trips and clear errors."""

import json

import pytest

from spark.streams import (
    Generation,
    Generations,
    InvalidGenerationsFile,
    build_topology_description,
    generations_from_json,
    generations_to_json,
    read_generations,
    write_generations,
)

SECOND = 1_000_000
T0 = 1_700_000_000 * SECOND
ENTRY = {"token_range_end": 1, "sharding_ignore_msb": 12}


@pytest.fixture
def generations() -> Generations:
    return Generations(
        [
            Generation(T0, build_topology_description({"a": [-100, 5000], "b": [0]}, shards=2, rand=1), T0 + 99),
            Generation(T0 + SECOND, build_topology_description({"a": [7]}, shards={"a": 3}, ignore_msb=0, rand=2)),
            Generation(T0 + 2 * SECOND),  # known by its timestamp only
        ]
    )


def test_round_trip_through_a_file(tmp_path, generations):
    path = tmp_path / "generations.json"
    write_generations(path, generations.generations)
    loaded = read_generations(path, leeway=7)
    assert loaded.generations == generations.generations
    assert loaded.leeway == 7


def test_layout(generations):
    data = generations_to_json(generations.generations)
    first, second, third = data["generations"]
    assert (first["timestamp"], first["expired"], second["expired"]) == (T0, T0 + 99, None)
    assert second["entries"] == [
        {
            "token_range_end": 7,
            "sharding_ignore_msb": 0,
            "streams": [s.hex() for s in generations.generations[1].description.streams],
        }
    ]
    assert third["entries"] is None
    assert json.loads(json.dumps(data)) == data


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "not a generations document"),
        ({}, "no 'generations' field"),
        ({"generations": [{"entries": None}]}, "no 'timestamp' field"),
        ({"generations": [{"timestamp": "1"}]}, "expected an integer"),
        ({"generations": [{"timestamp": True}]}, "expected an integer"),
        ({"generations": [{"timestamp": 1, "entries": [{"token_range_end": 1}]}]}, "no 'streams' field"),
        (
            {"generations": [{"timestamp": 1, "entries": [{**ENTRY, "streams": ["0x12"]}]}]},
            "16 bytes",
        ),
        ({"generations": [{"timestamp": 1, "entries": []}]}, "at least one token range"),
    ],
)
def test_invalid_documents(data, message):
    with pytest.raises(InvalidGenerationsFile, match=message):
        generations_from_json(data)


def test_unreadable_files(tmp_path):
    with pytest.raises(InvalidGenerationsFile, match="cannot read"):
        read_generations(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text('{"generations": [')
    with pytest.raises(InvalidGenerationsFile, match="is not JSON"):
        read_generations(broken)
