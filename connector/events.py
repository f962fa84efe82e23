"""The reference reader's changes as events: each change of a table with CDC at its write time framed
for its table's topic, or — while the registry rejects the table's schema — as a dead letter; each
entry no schema decodes as a dead letter whole; the other changes left out. The native core frames
the changes it reads itself, and hands the entries it does not take to this writer."""
from __future__ import annotations

import logging

from connector.batch import Gathering
from connector.commitlog import Change, Undecodable
from connector.deadletters import Rejections, dead_letter, dead_letter_topic, undecodable_letter
from connector.metrics import Metrics
from connector.schema.live import LiveSchema
from schemas.avro import ChangeSerializer, SchemaRejected
from schemas.change import write_time

log = logging.getLogger("ringtail.connector")


class EventWriter:
    def __init__(self, serializer: ChangeSerializer, schema: LiveSchema, rejections: Rejections, metrics: Metrics,
                 topic_prefix: str, node: str) -> None:
        self.serializer, self.schema, self.rejections, self.metrics = serializer, schema, rejections, metrics
        self.dead_letters = dead_letter_topic(topic_prefix)
        self.node = node

    def add(self, item: Change | Undecodable, segment: str, gathering: Gathering) -> None:
        """`item`, read from `segment`, into `gathering`: its event, its dead letter, or left out."""
        if isinstance(item, Undecodable):
            gathering.event(item.position, *self._undecodable(item, segment), write_time=0, change=False)
        elif self.schema.captures(item):
            gathering.event(item.position, *self._event(item, segment), write_time=write_time(item))
        else:
            gathering.left_out(item.position)

    def _event(self, change: Change, segment: str) -> tuple[str, bytes, bytes]:
        """The change's event for its table's topic, or its dead letter while the registry rejects the
        table's schema."""
        table = change.table.qualified_name
        held = self.rejections.holding(table)
        if held is None:
            self.serializer.encoder.schema = self.schema.snapshot
            try:
                event = self.serializer.serialize(change, segment)
            except SchemaRejected as error:
                schema = self.serializer.encoder.table(change.table).value_schema
                self.rejections.rejected(table, error, schema)
                held = error, schema
            else:
                self.rejections.accepted(table)
                return event
        error, schema = held
        self.metrics.dead_letters.labels("schema_rejected").inc()
        key, value = dead_letter(change, self.schema.snapshot, segment, error, schema, self.node)
        return self.dead_letters, key, value

    def _undecodable(self, entry: Undecodable, segment: str) -> tuple[str, bytes, bytes]:
        """The dead letter of an entry no schema decodes: loud, counted, and nothing lost."""
        self.metrics.dead_letters.labels("undecodable").inc()
        log.error("cannot decode the entry at %s of %s: %s; it goes whole to %s, and reading goes on",
                  entry.position, segment, entry.error, self.dead_letters)
        return (self.dead_letters, *undecodable_letter(entry, segment, self.node))
