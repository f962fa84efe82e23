"""Reading the ring from system.local and system.peers (through a stand-in session), and ring files."""

import uuid
from types import SimpleNamespace

import pytest

from spark.streams import InvalidTopology, cluster_topology, read_ring, read_ring_file
from spark.streams.ring import copies_per_change, replicas_of

LOCAL_ID = uuid.UUID(int=1)
PEER_ID = uuid.UUID(int=2)


class Rows(list):
    def __init__(self, rows, coordinator):
        super().__init__(rows)
        self.response_future = SimpleNamespace(coordinator_host=coordinator)

    def one(self):
        return self[0] if self else None


class Session:
    """Answers like one coordinator; records which host each query went to."""

    def __init__(self, local, peers):
        self.local, self.peers, self.hosts = local, peers, []

    def execute(self, query, host=None):
        self.hosts.append(host)
        rows = self.local if "system.local" in query else self.peers
        return Rows(rows, coordinator="node-1")


class SchemaSession(Session):
    """A ring of `nodes` whose schema holds `keyspaces` (name → replication) and `tables` ((keyspace, cdc))."""

    def __init__(self, nodes, keyspaces, tables):
        super().__init__([row("10.0.0.1", LOCAL_ID, {"0"})],
                         [row(f"10.0.0.{n}", uuid.UUID(int=n), {str(n)}) for n in range(2, nodes + 1)])
        self.keyspaces, self.tables = keyspaces, tables

    def execute(self, query, host=None):
        if "system_schema.keyspaces" in query:
            return Rows([SimpleNamespace(keyspace_name=k, replication=r) for k, r in self.keyspaces.items()], "node-1")
        if "system_schema.tables" in query:
            return Rows([SimpleNamespace(keyspace_name=k, cdc=cdc) for k, cdc in self.tables], "node-1")
        return super().execute(query, host)


def row(peer, host_id, tokens):
    return SimpleNamespace(peer=peer, host_id=host_id, tokens=tokens)


def test_every_node_with_tokens():
    session = Session(
        [row("10.0.0.1", LOCAL_ID, {"5", "-7"})],
        [
            row("10.0.0.2", PEER_ID, {"100"}),
            row("10.0.0.3", None, {"-100"}),  # no host id yet: named by address
            row("10.0.0.4", uuid.UUID(int=4), None),  # joining, no tokens
        ],
    )
    assert read_ring(session) == {str(LOCAL_ID): (-7, 5), str(PEER_ID): (100,), "10.0.0.3": (-100,)}
    # system.peers is read from the coordinator that answered for system.local.
    assert session.hosts == [None, "node-1"]


def test_cluster_topology_keys_settings_by_host_id():
    session = Session([row("10.0.0.1", LOCAL_ID, {"5", "-7"})], [row("10.0.0.2", PEER_ID, {"100"})])
    description = cluster_topology(session, shards={str(LOCAL_ID): 2, str(PEER_ID): 3}, rand=1)
    assert [e.token_range_end for e in description.entries] == [-7, 5, 100]
    assert [len(e.streams) for e in description.entries] == [2, 2, 3]


def test_a_ring_without_tokens():
    with pytest.raises(InvalidTopology, match="no vnode tokens"):
        read_ring(Session([row("10.0.0.1", LOCAL_ID, None)], []))


def test_ring_file(tmp_path):
    path = tmp_path / "ring.json"
    path.write_text('{"a": ["-100", 5000], "b": {"tokens": [0], "shards": 3, "ignore_msb": 0}}')
    parsed = read_ring_file(path)
    assert parsed.ring == {"a": [-100, 5000], "b": [0]}
    assert (parsed.shards, parsed.ignore_msb) == ({"b": 3}, {"b": 0})


@pytest.mark.parametrize(
    ("text", "message"), [("[1]", "expected node -> tokens"), ('{"a": ["x"]}', "expected"), ("{", "not JSON")]
)
def test_bad_ring_files(tmp_path, text, message):
    path = tmp_path / "ring.json"
    path.write_text(text)
    with pytest.raises(InvalidTopology, match=message):
        read_ring_file(path)


SIMPLE = "org.apache.cassandra.locator.SimpleStrategy"
NTS = "org.apache.cassandra.locator.NetworkTopologyStrategy"


def test_the_replicas_of_each_strategy():
    assert replicas_of({"class": SIMPLE, "replication_factor": "3"}) == 3
    assert replicas_of({"class": NTS, "dc1": "3", "dc2": "2"}) == 5  # every data centre's replicas log it
    assert replicas_of({"class": NTS, "dc1": "3/1"}) == 3  # transient replicas counted
    assert replicas_of({"class": "org.apache.cassandra.locator.LocalStrategy"}) == 1
    assert replicas_of({"class": NTS}) == 1


def test_copies_per_change_follow_the_keyspace_with_cdc_tables_that_has_most_replicas():
    keyspaces = {"shop": {"class": NTS, "dc1": "3"}, "wide": {"class": NTS, "dc1": "5"},
                 "one": {"class": SIMPLE, "replication_factor": "1"}, "system": {"class": "LocalStrategy"}}
    # `wide` has no CDC table: its replicas send no copies.
    tables = [("shop", True), ("shop", False), ("wide", False), ("one", True), ("system", False)]
    assert copies_per_change(SchemaSession(5, keyspaces, tables)) == 3
    assert copies_per_change(SchemaSession(2, keyspaces, tables)) == 2  # no more copies than nodes
    assert copies_per_change(SchemaSession(5, keyspaces, [("one", True)])) == 1
    assert copies_per_change(SchemaSession(3, keyspaces, [])) == 1
