"""CDC generations stored in Cassandra, in tables laid out as ScyllaDB's.

The ringtail keyspace (default ``ringtail_cdc``) holds:

``cdc_generation_descriptions_v2`` (internal)
    ``time timestamp``, ``range_end bigint``, ``streams frozen<list<blob>>``,
    ``ignore_msb tinyint``, ``num_ranges int static``; ``PRIMARY KEY (time, range_end)``.
    One row per token range, like ScyllaDB's ``cdc_generation_descriptions_v2`` but
    keyed by the generation timestamp. Streams are a list because Cassandra sorts set
    elements, which would lose the shard order.
``cdc_generation_timestamps``
    ``key text`` (always ``'timestamps'``), ``time timestamp`` clustered DESC, ``expired timestamp``.
``cdc_streams_descriptions_v2``
    ``time timestamp``, ``range_end bigint``, ``streams frozen<set<blob>>``; ``PRIMARY KEY (time, range_end)``.
``cdc_local``
    ``key text PRIMARY KEY``, ``streams_timestamp timestamp``; see :mod:`.rewrite`.

Publication follows ScyllaDB's order: a generation's ranges first, its timestamp
row last. Readers trust only generations whose timestamp row they see, so a
publication cut short is never read half-written.

This module needs cassandra-driver; the rest of the package does not.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

from cassandra import ConsistencyLevel
from cassandra.concurrent import execute_concurrent_with_args
from cassandra.query import UNSET_VALUE, PreparedStatement

from .errors import InvalidStoreSetting, InvalidTopology
from .generations import DEFAULT_LEEWAY, MICROS_PER_MILLI, Generation, Generations
from .stream_id import StreamId
from .topology import (
    DEFAULT_IGNORE_MSB,
    TokenRangeDescription,
    TopologyDescription,
    rebuild_topology_description,
)

DEFAULT_KEYSPACE = "ringtail_cdc"
log = logging.getLogger(__name__)
# A keyspace's replication map (`{class: NetworkTopologyStrategy, dc1: 3}`); None: `cluster_replication`.
Replication = Mapping[str, str | int] | None
# Copies of ringtail's own keyspace in each data centre, at most (fewer where it has fewer nodes).
DEFAULT_COPIES = 3
TIMESTAMPS_KEY = "timestamps"

DESCRIPTIONS_TABLE = "cdc_generation_descriptions_v2"
TIMESTAMPS_TABLE = "cdc_generation_timestamps"
STREAMS_TABLE = "cdc_streams_descriptions_v2"
LOCAL_TABLE = "cdc_local"

_SCHEMA = (
    f"""CREATE TABLE IF NOT EXISTS {{keyspace}}.{DESCRIPTIONS_TABLE} (
        time timestamp, range_end bigint, streams frozen<list<blob>>, ignore_msb tinyint,
        num_ranges int static, PRIMARY KEY (time, range_end))""",
    f"""CREATE TABLE IF NOT EXISTS {{keyspace}}.{TIMESTAMPS_TABLE} (
        key text, time timestamp, expired timestamp, PRIMARY KEY (key, time))
        WITH CLUSTERING ORDER BY (time DESC)""",
    f"""CREATE TABLE IF NOT EXISTS {{keyspace}}.{STREAMS_TABLE} (
        time timestamp, range_end bigint, streams frozen<set<blob>>, PRIMARY KEY (time, range_end))""",
    f"CREATE TABLE IF NOT EXISTS {{keyspace}}.{LOCAL_TABLE} (key text PRIMARY KEY, streams_timestamp timestamp)",
)
_INSERT_DESCRIPTION = (
    f"INSERT INTO {{keyspace}}.{DESCRIPTIONS_TABLE} (time, range_end, streams, ignore_msb, num_ranges)"
    " VALUES (?, ?, ?, ?, ?)"
)
_INSERT_STREAMS = f"INSERT INTO {{keyspace}}.{STREAMS_TABLE} (time, range_end, streams) VALUES (?, ?, ?)"
_INSERT_TIMESTAMP = f"INSERT INTO {{keyspace}}.{TIMESTAMPS_TABLE} (key, time, expired) VALUES (?, ?, ?)"
# toUnixTimestamp gives exact milliseconds; the driver's datetimes go through a float.
_SELECT_TIMESTAMPS = (
    "SELECT toUnixTimestamp(time) AS time, toUnixTimestamp(expired) AS expired"
    f" FROM {{keyspace}}.{TIMESTAMPS_TABLE} WHERE key = ?"
)
_SELECT_TIMESTAMP = f"SELECT time FROM {{keyspace}}.{TIMESTAMPS_TABLE} WHERE key = ? AND time = ?"
_SELECT_DESCRIPTION = (
    f"SELECT range_end, streams, ignore_msb, num_ranges FROM {{keyspace}}.{DESCRIPTIONS_TABLE} WHERE time = ?"
)
_SELECT_STREAMS = f"SELECT range_end, streams FROM {{keyspace}}.{STREAMS_TABLE} WHERE time = ?"

_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,47}")
_OPTION = re.compile(r"[A-Za-z0-9_.-]+")  # data centre names may hold dashes (us-east-1)


def replication_literal(replication: Mapping[str, str | int]) -> str:
    """A keyspace's replication map as CQL; only plain names and numbers go into the statement."""
    for name, value in replication.items():
        if not _OPTION.fullmatch(str(name)) or not _OPTION.fullmatch(str(value)):
            raise InvalidStoreSetting(f"replication option {name!r}: {value!r} is not a plain name or number")
    return "{" + ", ".join(f"'{name}': '{value}'" for name, value in replication.items()) + "}"


def replication_of(centres: Iterable[str | None]) -> dict[str, str | int]:
    """`NetworkTopologyStrategy` with min(3, its nodes) copies in each data centre, given each node's data
    centre: one node gets one copy, a ring of three or more three, so one node down leaves a quorum."""
    nodes: dict[str, int] = {}
    for centre in filter(None, centres):  # a peer still joining may not name its data centre yet
        nodes[centre] = nodes.get(centre, 0) + 1
    if not nodes:
        raise InvalidStoreSetting("the cluster names no data centre: set the keyspace's replication")
    return {"class": "NetworkTopologyStrategy", **{c: min(DEFAULT_COPIES, n) for c, n in sorted(nodes.items())}}


def cluster_replication(session: Any) -> dict[str, str | int]:
    """`replication_of` the nodes of the session's cluster."""
    local = session.execute("SELECT data_center FROM system.local").one()
    peers = session.execute("SELECT data_center FROM system.peers")
    return replication_of([local.data_center, *(p.data_center for p in peers)])


def create_keyspace(session: Any, keyspace: str, replication: Replication) -> None:
    """Create `keyspace` when missing, with `replication` or else the cluster's (`cluster_replication`);
    an existing keyspace is left as it is."""
    if session.execute("SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = %s",
                       (keyspace,)).one() is not None:
        return
    chosen = replication if replication is not None else cluster_replication(session)
    session.execute(f"CREATE KEYSPACE IF NOT EXISTS {keyspace} WITH replication = {replication_literal(chosen)}")
    log.info("keyspace %s created with replication %s", keyspace, chosen)


def _millis(generation: Generation) -> int:
    """The generation timestamp as the tables hold it, in whole milliseconds."""
    if generation.timestamp % MICROS_PER_MILLI:
        raise InvalidTopology(f"generation timestamp {generation.timestamp} µs is not a whole millisecond")
    return generation.timestamp_ms


class GenerationStore:
    """Generations of one ringtail keyspace, read and written through a cassandra-driver session."""

    def __init__(
        self,
        session: Any,
        keyspace: str = DEFAULT_KEYSPACE,
        *,
        consistency: int = ConsistencyLevel.QUORUM,
        concurrency: int = 32,
    ) -> None:
        if not _IDENTIFIER.fullmatch(keyspace):
            raise InvalidStoreSetting(f"keyspace name {keyspace!r} is not a CQL identifier of at most 48 characters")
        self.session = session
        self.keyspace = keyspace
        self.consistency = consistency
        self.concurrency = concurrency
        self._prepared: dict[str, PreparedStatement] = {}

    def create_schema(self, replication: Replication = None) -> None:
        """Create the keyspace, if missing (`create_keyspace`), and the tables; existing ones are left as they are."""
        create_keyspace(self.session, self.keyspace, replication)
        for statement in _SCHEMA:
            self.session.execute(statement.format(keyspace=self.keyspace))

    def _statement(self, cql: str) -> PreparedStatement:
        statement = self._prepared.get(cql)
        if statement is None:
            statement = self.session.prepare(cql.format(keyspace=self.keyspace))
            statement.consistency_level = self.consistency
            self._prepared[cql] = statement
        return statement

    def execute(self, cql: str, parameters: Iterable[Any] = ()) -> Any:
        """Run ``cql`` (``{keyspace}`` stands for this keyspace) as a prepared statement at the store's consistency."""
        return self.session.execute(self._statement(cql), tuple(parameters))

    def _execute_all(self, cql: str, rows: list[tuple]) -> None:
        execute_concurrent_with_args(
            self.session, self._statement(cql), rows, concurrency=self.concurrency, raise_on_first_error=True
        )

    def publish(self, generation: Generation) -> None:
        """Write a generation: its ranges to both description tables, then its timestamp row.

        Idempotent: publishing the same generation again rewrites the same cells.
        A different description already published at that timestamp is refused.
        """
        description = generation.topology()
        time = _millis(generation)
        if self.is_published(time):
            published = self.read_description(time)
            if published is not None and published != description:
                raise InvalidTopology(f"another generation is already published at {time} ms")
        entries = description.entries
        self._execute_all(
            _INSERT_DESCRIPTION,
            [
                (time, e.token_range_end, [s.value for s in e.streams], e.sharding_ignore_msb, len(entries))
                for e in entries
            ],
        )
        self._execute_all(_INSERT_STREAMS, [(time, e.token_range_end, {s.value for s in e.streams}) for e in entries])
        # Last: this row is what makes readers trust the rows above.
        expired = UNSET_VALUE if generation.expired is None else generation.expired // MICROS_PER_MILLI
        self.execute(_INSERT_TIMESTAMP, (TIMESTAMPS_KEY, time, expired))

    def is_published(self, time_ms: int) -> bool:
        return self.execute(_SELECT_TIMESTAMP, (TIMESTAMPS_KEY, time_ms)).one() is not None

    def read_internal_description(self, time_ms: int) -> TopologyDescription | None:
        """The description from the internal table, or None when its rows are missing or incomplete."""
        rows = list(self.execute(_SELECT_DESCRIPTION, (time_ms,)))
        if not rows or len(rows) != rows[0].num_ranges:
            return None
        return TopologyDescription(
            TokenRangeDescription(row.range_end, tuple(map(StreamId, row.streams)), row.ignore_msb) for row in rows
        )

    def read_description(self, time_ms: int, ignore_msb: int = DEFAULT_IGNORE_MSB) -> TopologyDescription | None:
        """The description of a published generation: the internal table's, else one rebuilt
        from ``cdc_streams_descriptions_v2`` with ``ignore_msb`` (that table does not keep it)."""
        description = self.read_internal_description(time_ms)
        if description is not None:
            return description
        rows = [(row.range_end, map(StreamId, row.streams)) for row in self.execute(_SELECT_STREAMS, (time_ms,))]
        return rebuild_topology_description(rows, ignore_msb) if rows else None

    def load(self, *, leeway: int = DEFAULT_LEEWAY, ignore_msb: int = DEFAULT_IGNORE_MSB) -> Generations:
        """Every generation whose timestamp row is visible; one whose ranges are missing is
        known by its timestamp only, so lookups in it fail as ScyllaDB's would."""
        return Generations(
            (
                Generation(
                    row.time * MICROS_PER_MILLI,
                    self.read_description(row.time, ignore_msb),
                    None if row.expired is None else row.expired * MICROS_PER_MILLI,
                )
                for row in self.execute(_SELECT_TIMESTAMPS, (TIMESTAMPS_KEY,))
            ),
            leeway=leeway,
        )
