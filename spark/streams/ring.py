"""Vnode rings: from a live cluster's ``system.local`` and ``system.peers``, or from a JSON file.

Any object with the cassandra-driver ``Session.execute`` signature will do, so this
module needs no driver import of its own.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import InvalidTopology
from .topology import DEFAULT_IGNORE_MSB, TopologyDescription, build_topology_description

_LOCAL = "SELECT broadcast_address AS peer, host_id, tokens FROM system.local"
_PEERS = "SELECT peer, host_id, tokens FROM system.peers"


def read_ring(session: Any) -> dict[str, tuple[int, ...]]:
    """Host id → sorted vnode tokens of every node that owns tokens.

    Both tables are read from one coordinator: each node's ``system.local`` is itself
    and its ``system.peers`` every other node, so mixing two nodes' answers would
    count one node twice and miss another.
    """
    local = session.execute(_LOCAL)
    coordinator = local.response_future.coordinator_host
    peers = session.execute(_PEERS, host=coordinator)
    ring: dict[str, tuple[int, ...]] = {}
    for row in [local.one(), *peers]:
        if not row.tokens:
            continue  # a joining node, or a peer entry left behind, owns no tokens
        node = str(row.host_id if row.host_id is not None else row.peer)
        ring[node] = tuple(sorted(int(token) for token in row.tokens))
    if not ring:
        raise InvalidTopology("the cluster reports no vnode tokens in system.local or system.peers")
    return ring


def replicas_of(replication: Mapping[str, str]) -> int:
    """How many nodes write each change of a keyspace of `replication` (its `system_schema` map) to their
    commit log: a SimpleStrategy's factor, a NetworkTopologyStrategy's copies in every data centre together;
    a transient factor (`3/1`) counts its transient replicas too. Another strategy counts 1."""
    strategy = str(replication.get("class", "")).rsplit(".", 1)[-1]
    if strategy == "SimpleStrategy":
        factors = [replication.get("replication_factor", "1")]
    elif strategy == "NetworkTopologyStrategy":
        factors = [value for name, value in replication.items() if name != "class"]
    else:
        return 1
    return max(1, sum(int(str(factor).split("/")[0]) for factor in factors))


def copies_per_change(session: Any) -> int:
    """How many copies of a change reach Kafka at most, one from each replica's connector: the replicas of
    the keyspace with CDC tables that has most, no more than the ring has nodes; 1 with no CDC table."""
    captured = {row.keyspace_name for row in session.execute("SELECT keyspace_name, cdc FROM system_schema.tables")
                if row.cdc}
    replicas = [replicas_of(row.replication) for row in
                session.execute("SELECT keyspace_name, replication FROM system_schema.keyspaces")
                if row.keyspace_name in captured]
    return min(max(replicas, default=1), len(read_ring(session)))


def cluster_topology(
    session: Any,
    *,
    shards: int | Mapping[str, int] = 1,
    ignore_msb: int | Mapping[str, int] = DEFAULT_IGNORE_MSB,
    rand: random.Random | int | None = None,
) -> TopologyDescription:
    """The topology description of the live ring; per-node settings are keyed by host id."""
    return build_topology_description(read_ring(session), shards=shards, ignore_msb=ignore_msb, rand=rand)


@dataclass
class RingFile:
    """A ring with optional per-node sharding, as :func:`read_ring_file` finds it."""

    ring: dict[str, list[int]]
    shards: dict[str, int] = field(default_factory=dict)
    ignore_msb: dict[str, int] = field(default_factory=dict)


def read_ring_file(path: Path | str) -> RingFile:
    """``{"node": [tokens]}`` or ``{"node": {"tokens": [...], "shards": n, "ignore_msb": m}}``.

    Tokens may be strings, as ``system.peers`` holds them.
    """
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise InvalidTopology(f"cannot read ring file {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise InvalidTopology(f"ring file {path} is not JSON: {exc}") from exc
    parsed = RingFile({})
    try:
        for node, spec in data.items():
            if isinstance(spec, dict):
                parsed.ring[node] = [int(token) for token in spec["tokens"]]
                if "shards" in spec:
                    parsed.shards[node] = int(spec["shards"])
                if "ignore_msb" in spec:
                    parsed.ignore_msb[node] = int(spec["ignore_msb"])
            else:
                parsed.ring[node] = [int(token) for token in spec]
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise InvalidTopology(f"ring file {path}: expected node -> tokens, got an error at {exc!r}") from exc
    return parsed
