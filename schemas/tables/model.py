"""Immutable schema snapshot: the tables and user types a segment is decoded with.

Types are kept as the CQL strings system_schema stores (`type` columns), so a loader
from system_schema, the DDL parser and tests build the same objects. Names are the
internal (case-preserved, unquoted) names.
"""
from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Iterable, Mapping, NamedTuple


class ColumnKind(enum.Enum):
    PARTITION_KEY = "partition_key"
    CLUSTERING = "clustering"
    STATIC = "static"
    REGULAR = "regular"


class ClusteringOrder(enum.Enum):
    ASC = "asc"
    DESC = "desc"
    NONE = "none"  # non-clustering columns


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str  # CQL type string, e.g. "frozen<list<int>>"
    kind: ColumnKind
    position: int = -1  # index in the partition key / clustering; -1 otherwise
    clustering_order: ClusteringOrder = ClusteringOrder.NONE


@dataclass(frozen=True, slots=True)
class DroppedColumn:
    name: str
    type: str  # the type the column had when it was dropped
    dropped_time: int  # microseconds since the epoch; cells written at or before it are dead
    kind: ColumnKind = ColumnKind.REGULAR


@dataclass(frozen=True, slots=True)
class UserType:
    keyspace: str
    name: str
    field_names: tuple[str, ...]
    field_types: tuple[str, ...]


class UdtDefinition(NamedTuple):
    """What the type parser needs of a UDT (as `UserType`), as plain tuples an executor unpickles cheaply."""

    name: str
    field_names: tuple[str, ...]
    field_types: tuple[str, ...]


def _frozen_map(items: Mapping | None) -> Mapping:
    return MappingProxyType(dict(items or {}))


@dataclass(frozen=True, eq=False)
class Table:
    keyspace: str
    name: str
    id: uuid.UUID
    columns: tuple[Column, ...]
    cdc: bool = False
    dropped_columns: Mapping[str, DroppedColumn] = field(default_factory=dict)
    # Write time (µs) of the table's schema row: when it was last created or altered.
    altered_at: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", tuple(self.columns))
        object.__setattr__(self, "dropped_columns", _frozen_map(self.dropped_columns))
        keys = [c.position for c in self.partition_key]
        if keys != list(range(len(keys))) or not keys:
            raise ValueError(f"{self.keyspace}.{self.name}: partition key positions must be 0..n-1")
        if [c.position for c in self.clustering] != list(range(len(self.clustering))):
            raise ValueError(f"{self.keyspace}.{self.name}: clustering positions must be 0..n-1")

    def _of_kind(self, kind: ColumnKind) -> tuple[Column, ...]:
        return tuple(sorted((c for c in self.columns if c.kind is kind), key=lambda c: (c.position, c.name)))

    @cached_property
    def partition_key(self) -> tuple[Column, ...]:
        return self._of_kind(ColumnKind.PARTITION_KEY)

    @cached_property
    def clustering(self) -> tuple[Column, ...]:
        return self._of_kind(ColumnKind.CLUSTERING)

    @cached_property
    def static_columns(self) -> tuple[Column, ...]:
        return self._of_kind(ColumnKind.STATIC)

    @cached_property
    def regular_columns(self) -> tuple[Column, ...]:
        return self._of_kind(ColumnKind.REGULAR)

    def column(self, name: str) -> Column | None:
        return next((c for c in self.columns if c.name == name), None)

    @property
    def qualified_name(self) -> str:
        return f"{self.keyspace}.{self.name}"


@dataclass(frozen=True, eq=False)
class SchemaSnapshot:
    """Tables by id and user types by keyspace and name."""

    tables: Mapping[uuid.UUID, Table] = field(default_factory=dict)
    user_types: Mapping[str, Mapping[str, UserType]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tables", _frozen_map(self.tables))
        object.__setattr__(self, "user_types",
                           _frozen_map({ks: _frozen_map(types) for ks, types in self.user_types.items()}))

    @classmethod
    def of(cls, tables: Iterable[Table], user_types: Iterable[UserType] = ()) -> SchemaSnapshot:
        by_keyspace: dict[str, dict[str, UserType]] = {}
        for udt in user_types:
            by_keyspace.setdefault(udt.keyspace, {})[udt.name] = udt
        return cls({t.id: t for t in tables}, by_keyspace)

    def table(self, table_id: uuid.UUID) -> Table | None:
        return self.tables.get(table_id)

    def tables_named(self, keyspace: str, name: str) -> list[Table]:
        """Every table of that name: one, or several while a dropped one is kept beside its successor."""
        return [t for t in self.tables.values() if t.keyspace == keyspace and t.name == name]

    def table_by_name(self, keyspace: str, name: str) -> Table | None:
        return next(iter(self.tables_named(keyspace, name)), None)

    def types_of(self, keyspace: str) -> Mapping[str, UserType]:
        return self.user_types.get(keyspace, MappingProxyType({}))
