"""What a mirror needs of a base table: its key columns (clustering with their order), its other columns
with their CQL types and how each is stored (one cell, or one cell per element), and the columns it
dropped (with when: their older cells are dead). Plain data, picklable, built from the schema as
`system_schema` describes it.
"""
from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from schemas.cql import ListType, MapType, SetType, UserType, parse_type
from schemas.tables.model import ClusteringOrder, Table, UdtDefinition


# How a non-key column is stored: one cell, or one cell per element (multi-cell).
SINGLE, LIST, SET, MAP, UDT = "single", "list", "set", "map", "udt"

# A snapshot reads a non-frozen list's values without their timeuuids (CQL does not return them) and
# keys them itself, in list order, from 2010-01-01 (in a timeuuid's 100 ns ticks since 1582-10-15;
# Cassandra's prepends count down from it), with node 0 and clock sequence 0: Cassandra's own carry
# its host's node.
_READ_KEYS_FROM = (1262304000 * 10_000_000) + 0x01B21DD213814000
_READ_KEY_TAIL = "-8000-000000000000"


def read_list_key(index: int) -> str:
    """The key a snapshot gives the list element it read at `index`."""
    ticks = _READ_KEYS_FROM + index
    return str(uuid.UUID(fields=(ticks & 0xFFFFFFFF, (ticks >> 32) & 0xFFFF, ((ticks >> 48) & 0x0FFF) | 0x1000,
                                 0x80, 0, 0)))


def is_read_list_key(key: str) -> bool:
    """Whether a list element's key is one a snapshot gave (`read_list_key`), not Cassandra's timeuuid."""
    return key.endswith(_READ_KEY_TAIL)


class MirrorError(ValueError):
    """A table or a change a mirror cannot hold: says which and why."""


@dataclass(frozen=True)
class KeyColumn:
    name: str
    type: str  # CQL type text, as system_schema writes it
    descending: bool = False  # a clustering column declared DESC


@dataclass(frozen=True)
class DataColumn:
    name: str
    type: str
    static: bool
    storage: str  # SINGLE, LIST, SET, MAP or UDT


@dataclass(frozen=True)
class MirrorLayout:
    keyspace: str
    table: str
    partition_key: tuple[KeyColumn, ...]
    clustering: tuple[KeyColumn, ...]
    columns: tuple[DataColumn, ...]  # static and regular, by name
    dropped: tuple[tuple[str, int], ...] = ()  # (column, dropped at µs): cells written at or before are dead
    user_types: tuple[UdtDefinition, ...] = ()

    @property
    def qualified(self) -> str:
        return f"{self.keyspace}.{self.table}"

    @property
    def key_columns(self) -> tuple[KeyColumn, ...]:
        return self.partition_key + self.clustering

    @property
    def has_static(self) -> bool:
        return any(c.static for c in self.columns)

    def cql(self, type_text: str) -> Any:
        """A column's parsed CQL type, its UDTs resolved."""
        return parse_type(type_text, {u.name: u for u in self.user_types}, self.keyspace)

    def names(self) -> list[str]:
        """Every column of the base table, as `SELECT *` lists them: key columns first, then by name."""
        return [c.name for c in self.key_columns] + [c.name for c in self.columns]

    @classmethod
    def of_table(cls, table: Table, user_types: Mapping[str, Any]) -> MirrorLayout:
        udts = tuple(UdtDefinition(name, tuple(u.field_names), tuple(u.field_types))
                     for name, u in sorted(user_types.items()))
        by_name = {u.name: u for u in udts}
        data = sorted((*table.static_columns, *table.regular_columns), key=lambda c: c.name)
        types = [parse_type(c.type, by_name, table.keyspace) for c in data]  # no key column is a counter
        if any(t.counter for t in types):
            raise MirrorError(f"{table.qualified_name}: a counter table has no mirror (a counter's change"
                              " events carry the shard of the replica that counted, not the total)")
        columns = [DataColumn(c.name, c.type, c in table.static_columns, storage_of(t)) for c, t in zip(data, types)]
        return cls(
            table.keyspace, table.name,
            tuple(KeyColumn(c.name, c.type) for c in table.partition_key),
            tuple(KeyColumn(c.name, c.type, c.clustering_order is ClusteringOrder.DESC) for c in table.clustering),
            tuple(columns),
            tuple(sorted((d.name, d.dropped_time) for d in table.dropped_columns.values())),
            udts,
        )


def storage_of(cql: Any) -> str:
    """How a column of type `cql` is stored: SINGLE, or LIST, SET, MAP, UDT for a multi-cell one."""
    if not cql.multi_cell:
        return SINGLE
    if isinstance(cql, ListType):
        return LIST
    if isinstance(cql, SetType):
        return SET
    if isinstance(cql, MapType):
        return MAP
    if isinstance(cql, UserType):
        return UDT
    raise MirrorError(f"no mirror for multi-cell type {cql.cql}")
