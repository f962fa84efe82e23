"""The frontier record: how far one node's connector has emitted, in that node's own time.

Each connector sends one, about every `frontier_interval`, to the topic `<prefix>.frontiers` (one
partition, compacted, keyed by the node's host id), as JSON:

    {"host_id": "<uuid>", "node": "<node_name>", "frontier_us": <µs since the epoch>,
     "bound_ms": <commit-log sync bound>, "offsets": {"<table topic>": {"<partition>": <offset>}}}

It promises: every write this node acknowledged before `frontier_us` (by its clock), and made durable
in its commit log within `bound_ms` of that, is in its table's topic at an offset below
`offsets[topic][partition]` (the end of the partition when the connector asked, after Kafka had
acknowledged those events). A reader that has read each named partition up to its offset has every
such write of this node, for the topics the record names. The connector side is
`connector.frontier`, the reader's `spark.delivery.resolved`.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass


def frontier_topic(prefix: str) -> str:
    return f"{prefix}.frontiers"


class BadFrontier(ValueError):
    """A frontier record that is not one: it is skipped, and the reason said."""


@dataclass(frozen=True)
class FrontierRecord:
    host_id: str
    node: str
    frontier_us: int
    bound_ms: int
    offsets: Mapping[str, Mapping[int, int]]  # table topic → partition → offset every promised event is below

    @property
    def key(self) -> bytes:
        return self.host_id.encode()

    def encode(self) -> bytes:
        return json.dumps({"host_id": self.host_id, "node": self.node, "frontier_us": self.frontier_us,
                           "bound_ms": self.bound_ms,
                           "offsets": {topic: {str(p): o for p, o in sorted(parts.items())}
                                       for topic, parts in sorted(self.offsets.items())}},
                          separators=(",", ":")).encode()

    @classmethod
    def decode(cls, data: bytes | None) -> FrontierRecord:
        try:
            value = json.loads(data)
            return cls(str(value["host_id"]), str(value["node"]), int(value["frontier_us"]), int(value["bound_ms"]),
                       {str(topic): {int(p): int(o) for p, o in parts.items()}
                        for topic, parts in value["offsets"].items()})
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise BadFrontier(f"not a frontier record ({type(exc).__name__}: {exc}): {(data or b'')[:200]!r}") from None
