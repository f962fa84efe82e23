"""What the generation store checks before any CQL is sent, and the rewrite's TTL horizon."""

import pytest

from spark.streams import Generation, InvalidStoreSetting, InvalidTopology, build_topology_description
from spark.streams.rewrite import first_live_generation
from spark.streams.storage import DEFAULT_KEYSPACE, GenerationStore, replication_literal, replication_of


@pytest.mark.parametrize("keyspace", ["", "1abc", "has-dash", "x" * 49, "ks; DROP"])
def test_keyspace_must_be_a_plain_identifier(keyspace):
    with pytest.raises(InvalidStoreSetting):
        GenerationStore(None, keyspace)


def testreplication_literal():
    assert replication_literal({"class": "SimpleStrategy", "replication_factor": 1}) == (
        "{'class': 'SimpleStrategy', 'replication_factor': '1'}"
    )
    assert replication_literal({"class": "NetworkTopologyStrategy", "dc1": 3}) == (
        "{'class': 'NetworkTopologyStrategy', 'dc1': '3'}"
    )
    with pytest.raises(InvalidStoreSetting):
        replication_literal({"class": "x'}; DROP KEYSPACE k; --"})


def test_generations_are_stored_in_whole_milliseconds():
    store = GenerationStore(None)
    with pytest.raises(InvalidTopology, match="whole millisecond"):
        store.publish(Generation(1_000_001, build_topology_description({"a": [1]}, rand=1)))


@pytest.mark.parametrize(
    ("timestamps", "horizon", "first"),
    [
        ([], 50, 0),
        ([10, 20, 30], 5, 0),  # all after the horizon
        ([10, 20, 30], 10, 0),  # generation 10 operates at the horizon
        ([10, 20, 30], 19, 0),
        ([10, 20, 30], 20, 1),  # 20 started at the horizon: rows of 10 are all older
        ([10, 20, 30], 25, 1),
        ([10, 20, 30], 1000, 2),  # the last generation is never too old
    ],
)
def test_first_live_generation(timestamps, horizon, first):
    assert first_live_generation(timestamps, horizon) == first


def test_defaults():
    assert DEFAULT_KEYSPACE == "ringtail_cdc" == GenerationStore(None).keyspace


def test_the_default_replication_is_three_copies_per_data_centre_or_as_many_as_it_has_nodes():
    assert replication_of(["dc1"]) == {"class": "NetworkTopologyStrategy", "dc1": 1}
    assert replication_of(["dc1", "dc1", None]) == {"class": "NetworkTopologyStrategy", "dc1": 2}
    assert replication_of(["eu-west-1"] * 5 + ["us-east-1"] * 2) == {
        "class": "NetworkTopologyStrategy", "eu-west-1": 3, "us-east-1": 2}
    assert replication_literal(replication_of(["us-east-1"])) \
        == "{'class': 'NetworkTopologyStrategy', 'us-east-1': '1'}"
    with pytest.raises(InvalidStoreSetting, match="no data centre"):
        replication_of([None])
