"""Stream ids from a live ring: the generation built from the node's own tokens, and a change's stream
that of its token's vnode. A suite (`tests/integration/suites`): run on the main node by
`test_streams_ring.py`, on the older series by `test_cassandra_versions.py`."""

from __future__ import annotations

import random

import numpy as np

from spark.streams import Generations, cluster_topology, read_ring, tokens_of
from spark.streams.ring import copies_per_change
from spark.streams.tokens import MAX_TOKEN, MIN_TOKEN

NUM_TOKENS = 16  # the stack's cassandra.yaml


class StreamsOfTheRing:
    """The ring of the module's node (through `cql`)."""

    def test_ring_has_every_vnode_token_of_the_node(self, cql) -> None:
        ring = read_ring(cql)
        local = cql.execute("SELECT host_id, tokens FROM system.local").one()
        assert list(ring) == [str(local.host_id)]
        (tokens,) = ring.values()
        assert len(tokens) == NUM_TOKENS
        assert tokens == tuple(sorted(int(token) for token in local.tokens))
        setting = cql.execute("SELECT value FROM system_views.settings WHERE name = 'num_tokens'").one()
        assert int(setting.value) == NUM_TOKENS
        # The driver learns the ring on its own, from the same node's metadata.
        driver_tokens = {token.value for token in cql.cluster.metadata.token_map.ring}
        assert set(tokens) == driver_tokens

    def test_generation_from_the_live_ring_covers_the_whole_ring(self, cql) -> None:
        ring = read_ring(cql)
        description = cluster_topology(cql, rand=1)
        ends = [entry.token_range_end for entry in description.entries]
        assert ends == sorted(token for tokens in ring.values() for token in tokens)
        # Ranges chain end to start round the ring, so together they hold every token exactly once.
        ranges = [description.token_range(index) for index in range(len(description))]
        assert all(start == previous_end for (start, _), (_, previous_end) in zip(ranges, ranges[-1:] + ranges[:-1]))
        assert sum((end - start) % 2**64 for start, end in ranges) == 2**64
        assert {entry.sharding_ignore_msb for entry in description.entries} == {12}
        assert [len(entry.streams) for entry in description.entries] == [1] * NUM_TOKENS

        rng = random.Random(3)
        tokens = [rng.randrange(MIN_TOKEN + 1, MAX_TOKEN + 1) for _ in range(5000)] + [MIN_TOKEN + 1, MAX_TOKEN]
        tokens += ends + [end + 1 for end in ends if end < MAX_TOKEN]
        for token in tokens:
            placement = description.place(token)
            start, end = placement.start, placement.end
            inside = (lambda t: start < t <= end) if start < end else (lambda t: t > start or t <= end)
            assert inside(token) and inside(placement.stream.token)

    def test_keys_written_to_the_node_land_on_streams_of_their_vnode(self, cql, keyspace: str) -> None:
        cql.execute(f"CREATE TABLE {keyspace}.t (k int PRIMARY KEY)")
        insert = cql.prepare(f"INSERT INTO {keyspace}.t (k) VALUES (?)")
        for k in range(200):
            cql.execute(insert, (k,))
        rows = list(cql.execute(f"SELECT k, token(k) AS tok FROM {keyspace}.t"))
        description = cluster_topology(cql, shards=4, rand=2)
        tokens = np.array([row.tok for row in rows])
        assert tokens.tolist() == tokens_of([[row.k] for row in rows], ["int"]).tolist()
        for row, stream in zip(rows, description.get_streams(tokens)):
            placement = description.place(row.tok)
            assert stream == placement.stream and len(description.entries[placement.index].streams) == 4
            assert description.index_of(stream.token) == placement.index  # the same vnode

    def test_an_unchanged_live_ring_makes_no_new_generation(self, cql) -> None:
        generations = Generations()
        first = generations.add_for_ring(read_ring(cql), 1_700_000_000_000_000, rand=1)
        assert len(first.description) == NUM_TOKENS
        assert generations.add_for_ring(read_ring(cql), 1_700_000_100_000_000, rand=2) is None

    def test_a_single_node_sends_one_copy_of_each_change(self, cql, keyspace: str) -> None:
        cql.execute(f"CREATE TABLE {keyspace}.t (k int PRIMARY KEY) WITH cdc = true")
        assert copies_per_change(cql) == 1
