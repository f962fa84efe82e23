"""What the connector knows of the schema over time, beyond the cluster's current snapshot.

Segments are read behind the cluster: a change may be decoded long after its table was altered or
dropped. The history therefore keeps

- each table's `cdc` flag changes, each with the write time of the DDL that made it, so a change is
  captured by the flag in force when it was written (its write timestamp), not when it is read. They
  come from two sources: the snapshots (a flag seen to change is dated by its table row's write time)
  and the commit log itself, where every CREATE and ALTER writes the table's `system_schema.tables`
  row with its `cdc` flag and exact timestamp (`record_flag`), so flags changed faster than the
  snapshots follow are still exact;
- the last schema of dropped tables (and of their user types), for as long as segments written before
  the drop may still be unread; a column the commit log shows a dropped table had (added after the
  last snapshot that saw the table) is added to it (`with_retained_column`), and a table dropped
  before any snapshot saw it, built from its schema rows in the commit log, is kept the same way
  (`with_retained_table`); a user type the commit log shows with more fields than a dropped table
  kept replaces it (`with_retained_type`).

A history is immutable; `apply` returns the next one with the differences it found.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from functools import cached_property
from types import MappingProxyType
import bisect
from typing import Iterable, Mapping, NamedTuple

from schemas.tables.model import Column, SchemaSnapshot, Table, UserType

# Before any write: a table created with cdc = true captures every change it will ever hold, whatever
# write timestamps clients choose.
BEGINNING = -(1 << 63)


# What a DDL statement's timestamp can be behind the writes made just before it, in µs.
DDL_PRECISION = 1_000


class FlagChange(NamedTuple):
    at: int  # µs: changes written at or after it have `cdc`
    cdc: bool


@dataclass(frozen=True, slots=True)
class SchemaChange:
    """One difference between two snapshots: logged and counted when applied."""

    # table_created|table_altered|table_dropped|cdc_enabled|cdc_disabled|type_created|type_altered|type_dropped
    kind: str
    name: str  # keyspace.table or keyspace.type

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"


@dataclass(frozen=True, slots=True)
class RetainedTable:
    """A dropped table, kept while segments up to `until_segment` may hold its changes."""

    table: Table
    until_segment: int
    user_types: Mapping[str, UserType] = field(default_factory=dict)  # its keyspace's types at the drop


@dataclass(frozen=True, eq=False)
class SchemaHistory:
    current: SchemaSnapshot = field(default_factory=SchemaSnapshot)
    version: uuid.UUID | None = None  # the cluster's schema_version of `current`
    cdc_flags: Mapping[uuid.UUID, tuple[FlagChange, ...]] = field(default_factory=dict)  # sorted by time
    retained: Mapping[uuid.UUID, RetainedTable] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "cdc_flags", MappingProxyType(dict(self.cdc_flags)))
        object.__setattr__(self, "retained", MappingProxyType(dict(self.retained)))

    @classmethod
    def first(cls, snapshot: SchemaSnapshot, version: uuid.UUID | None = None) -> SchemaHistory:
        """A history that starts now: what cdc flags were before is unknown, so today's flag counts
        for every change already written."""
        flags = {t.id: (FlagChange(BEGINNING, True),) for t in snapshot.tables.values() if t.cdc}
        return cls(snapshot, version, flags)

    @cached_property
    def decoding(self) -> SchemaSnapshot:
        """The snapshot segments are decoded with: current tables and the retained dropped ones."""
        if not self.retained:
            return self.current
        tables = dict(self.current.tables)
        user_types = {ks: dict(types) for ks, types in self.current.user_types.items()}
        for table_id, kept in self.retained.items():
            tables.setdefault(table_id, kept.table)
            types = user_types.setdefault(kept.table.keyspace, {})
            for name, udt in kept.user_types.items():
                types.setdefault(name, udt)  # a type dropped after the table: the table still needs it
        return SchemaSnapshot(tables, user_types)

    @property
    def ever_cdc(self) -> bool:
        """Whether any known table has had cdc = true (an unknown table could then be a CDC one)."""
        return any(flag.cdc for flags in self.cdc_flags.values() for flag in flags)

    def ever_captured(self, table_id: uuid.UUID) -> bool:
        """Whether the table has had cdc = true at some time (a change of it may be CDC data)."""
        return any(flag.cdc for flag in self.cdc_flags.get(table_id, ()))

    def captures(self, table_id: uuid.UUID, write_time: int) -> bool:
        """Whether a change of the table written at `write_time` (µs) is CDC data. Cassandra dates DDL to
        the millisecond (µs = ms × 1,000) and clients date writes to the µs, so a write made just before
        the ALTER that turns cdc off, in the same millisecond, can carry the later timestamp: a change
        written less than a millisecond after cdc went off is captured, as kept beats lost."""
        flags = self.cdc_flags.get(table_id, ())
        return _in_force(flags, write_time) or _in_force(flags, write_time - DDL_PRECISION)

    def record_flag(self, table_id: uuid.UUID, cdc: bool, at: int) -> SchemaHistory:
        """A table's `cdc` flag as a DDL statement wrote it at `at` (µs), read from the commit log."""
        flags = self.cdc_flags.get(table_id, ())
        flag = FlagChange(at, cdc)
        if flag in flags:
            return self
        return SchemaHistory(self.current, self.version, {**self.cdc_flags, table_id: _merged(flags, flag)},
                             self.retained)

    def with_retained_table(self, table: Table, until_segment: int, user_types: Mapping[str, UserType]
                            ) -> SchemaHistory:
        """A table dropped before any snapshot saw it, kept as the dropped ones are."""
        kept = RetainedTable(table, until_segment, newest_types(self.current.types_of(table.keyspace), user_types))
        return SchemaHistory(self.current, self.version, self.cdc_flags, {**self.retained, table.id: kept})

    def with_retained_type(self, udt: UserType) -> SchemaHistory:
        """The dropped tables of the type's keyspace with the type as the commit log shows it, where
        they kept an older version (fewer fields: fields are only ever added)."""
        changed = {table_id: replace(kept, user_types=newest)
                   for table_id, kept in self.retained.items()
                   if kept.table.keyspace == udt.keyspace and udt.name in kept.user_types
                   and (newest := newest_types(kept.user_types, {udt.name: udt})) != dict(kept.user_types)}
        if not changed:
            return self
        return SchemaHistory(self.current, self.version, self.cdc_flags, {**self.retained, **changed})

    def with_retained_column(self, table_id: uuid.UUID, column: Column) -> SchemaHistory:
        """A dropped table with a column the commit log shows it had: added after the last snapshot
        that saw the table, so its last schema here lacked it."""
        kept = self.retained[table_id]
        table = kept.table
        patched = Table(table.keyspace, table.name, table.id, (*table.columns, column), table.cdc,
                        table.dropped_columns, table.altered_at)
        return SchemaHistory(self.current, self.version, self.cdc_flags,
                             {**self.retained, table_id: replace(kept, table=patched)})

    def apply(self, snapshot: SchemaSnapshot, version: uuid.UUID | None, newest_segment: int,
              now: int) -> tuple[SchemaHistory, list[SchemaChange]]:
        """The history after the cluster moved to `snapshot`.

        `newest_segment`: the newest segment id on disk; a table dropped now may have changes in it
        or any older one. `now` (µs) dates flag changes whose table row has no write time.
        """
        old, changes = self.current.tables, []
        flags = dict(self.cdc_flags)
        retained = dict(self.retained)
        tables = dict(snapshot.tables)
        for table_id, table in snapshot.tables.items():
            before = old.get(table_id)
            when = table.altered_at if table.altered_at is not None else now
            if before is None:
                changes.append(SchemaChange("table_created", table.qualified_name))
                if table.cdc:  # no change of it can be older than the table: all of them count
                    flags[table_id] = _merged(flags.get(table_id, ()), FlagChange(BEGINNING, True))
                continue
            same = _same_table(before, table)
            if not same:
                changes.append(SchemaChange("table_altered", table.qualified_name))
            if table.cdc != before.cdc:
                changes.append(SchemaChange("cdc_enabled" if table.cdc else "cdc_disabled", table.qualified_name))
                flags[table_id] = _merged(flags.get(table_id, ()), FlagChange(when, table.cdc))
            elif same and table.altered_at == before.altered_at:
                # Unchanged: the same object, so what was built for it (its encoder, its schema ids) is kept
                # through a refresh that another table's DDL caused.
                tables[table_id] = before
        for table_id, table in old.items():
            if table_id not in snapshot.tables:
                changes.append(SchemaChange("table_dropped", table.qualified_name))
                retained[table_id] = RetainedTable(table, newest_segment, self.current.types_of(table.keyspace))
        changes += _type_changes(self.current, snapshot)
        return SchemaHistory(SchemaSnapshot(tables, snapshot.user_types), version, flags, retained), changes

    def release(self, segment_id: int) -> SchemaHistory:
        """The history once every segment up to `segment_id` is delivered: dropped tables no unread
        segment can hold are forgotten."""
        kept = {i: r for i, r in self.retained.items() if r.until_segment > segment_id}
        if len(kept) == len(self.retained):
            return self
        live = set(self.current.tables) | set(kept)
        flags = {i: f for i, f in self.cdc_flags.items() if i in live}
        return SchemaHistory(self.current, self.version, flags, kept)


def newest_types(*sources: Mapping[str, UserType]) -> dict[str, UserType]:
    """The user types of several sources by name, of each the version with the most fields (the
    newest: fields are only ever added)."""
    found: dict[str, UserType] = {}
    for types in sources:
        for name, udt in types.items():
            if name not in found or len(udt.field_types) > len(found[name].field_types):
                found[name] = udt
    return found


def _merged(flags: tuple[FlagChange, ...], flag: FlagChange) -> tuple[FlagChange, ...]:
    return tuple(sorted({*flags, flag}))


def _same_table(a: Table, b: Table) -> bool:
    """Same columns (a cdc flag change is reported on its own)."""
    return (a.keyspace, a.name, a.columns, dict(a.dropped_columns)) == (
        b.keyspace, b.name, b.columns, dict(b.dropped_columns))


def _types(snapshot: SchemaSnapshot) -> dict[tuple[str, str], UserType]:
    return {(ks, name): udt for ks, types in snapshot.user_types.items() for name, udt in types.items()}


def _type_changes(before: SchemaSnapshot, after: SchemaSnapshot) -> Iterable[SchemaChange]:
    old, new = _types(before), _types(after)
    for key, udt in new.items():
        if key not in old:
            yield SchemaChange("type_created", ".".join(key))
        elif old[key] != udt:
            yield SchemaChange("type_altered", ".".join(key))
    for key in old.keys() - new.keys():
        yield SchemaChange("type_dropped", ".".join(key))


def _in_force(flags: tuple[FlagChange, ...], write_time: int) -> bool:
    """The cdc flag in force at `write_time` (µs) among time-sorted `flags`."""
    i = bisect.bisect_right(flags, (write_time, True))  # (t, False) < (t, True): both count at t
    return i > 0 and flags[i - 1].cdc
