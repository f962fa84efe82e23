"""Reading the ring from system.local and system.peers (through a stand-in session), and ring files."""

import uuid
from types import SimpleNamespace

import pytest

from spark.streams import InvalidTopology, cluster_topology, read_ring, read_ring_file

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
