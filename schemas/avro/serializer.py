"""Changes to what a Kafka producer sends: topic, key bytes and value bytes."""
from __future__ import annotations

import re
import uuid
from typing import TYPE_CHECKING, NamedTuple

from schemas.change import Change
from schemas.tables.model import Table

from .encoder import ChangeEncoder
from .table import TableEncoder

if TYPE_CHECKING:
    from .registry import SchemaRegistry


class Event(NamedTuple):
    topic: str
    key: bytes
    value: bytes


class Subjects(NamedTuple):
    encoder: TableEncoder
    topic: str
    key_id: int
    value_id: int


def topic_name(prefix: str, keyspace: str, table: str) -> str:
    """Debezium's topic naming: `<logical name>.<keyspace>.<table>`."""
    return f"{prefix}.{keyspace}.{table}"


def table_topics_pattern(prefix: str) -> str:
    """The topics of every table of one prefix (`topic_name`), as a regex."""
    return rf"{re.escape(prefix)}\.[^.]+\.[^.]+"


class ChangeSerializer:
    """Registers a table's schemas on its first change (and after it changes), then frames
    each change's key and value with their schema ids."""

    def __init__(self, encoder: ChangeEncoder, registry: SchemaRegistry) -> None:
        self.encoder = encoder
        self.registry = registry
        self._tables: dict[uuid.UUID, Subjects] = {}

    def serialize(self, change: Change, segment: str, ts_ms: int | None = None) -> Event:
        """The event of a change read from `segment`, processed at `ts_ms` (default: now)."""
        subjects = self.subjects(change.table)
        key, value = self.encoder.encode(change, segment, ts_ms)
        return Event(subjects.topic, self.registry.serialize(subjects.key_id, key),
                     self.registry.serialize(subjects.value_id, value))

    def subjects(self, table: Table) -> Subjects:
        """The table's topic and schema ids, its schemas registered on first use (and after they change)."""
        encoder = self.encoder.table(table)
        subjects = self._tables.get(table.id)
        if subjects is None or subjects.encoder is not encoder:
            subjects = self._tables[table.id] = self._register(encoder)
        return subjects

    def _register(self, encoder: TableEncoder) -> Subjects:
        table = encoder.table
        topic = topic_name(self.encoder.source.name, table.keyspace, table.name)
        key_id = self.registry.register(f"{topic}-key", encoder.key_schema, table.qualified_name)
        value_id = self.registry.register(f"{topic}-value", encoder.value_schema, table.qualified_name)
        return Subjects(encoder, topic, key_id, value_id)
