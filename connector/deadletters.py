"""Dead letters: per-table isolation of schema rejections, and entries no schema decodes.

When the registry refuses a table's schema (a change its compatibility level forbids), that table's
changes go to the dead-letter topic `<topic_prefix>.dead_letters` as JSON — the reason, the rejected
schema, the change as `connector dump` prints it, its position — while every other table goes on.
Registration is tried again every `retry_interval` seconds; once the registry accepts the schema (an
operator changed the subject's compatibility level, say), the table's changes return to its topic.

An entry no schema decodes (`Undecodable`: its table created before reading began and dropped before
the connector ever saw it, or its columns not all known) goes to the same topic whole — the reason,
its position, the mutation's bytes in base64 — and the rest of its segment is read on.
"""
from __future__ import annotations

import base64
import json
import logging
import time
from typing import Callable

from connector.commitlog import Change, Undecodable, UnknownTable
from connector.commitlog.render import ChangeRenderer
from schemas.avro import SchemaRejected
from schemas.tables.model import SchemaSnapshot

log = logging.getLogger("ringtail.connector")


def dead_letter_topic(prefix: str) -> str:
    return f"{prefix}.dead_letters"


class Rejections:
    """Tables whose schema the registry refused, and when to ask again."""

    def __init__(self, retry_interval: float, clock: Callable[[], float] = time.monotonic,
                 on_change: Callable[[str, bool], None] | None = None) -> None:
        self.retry_interval = retry_interval
        self.clock = clock
        self.on_change = on_change  # (qualified table name, rejected now)
        self._tables: dict[str, tuple[float, SchemaRejected, dict | None]] = {}

    def holding(self, table: str) -> tuple[SchemaRejected, dict | None] | None:
        """The rejection to apply to `table`'s change without asking the registry, if it is not time to
        ask again."""
        entry = self._tables.get(table)
        if entry is None or self.clock() >= entry[0]:
            return None
        return entry[1], entry[2]

    def rejected(self, table: str, error: SchemaRejected, schema: dict | None) -> None:
        if table not in self._tables:
            log.error("the registry rejects the schema of %s: %s; its changes go to the dead-letter topic "
                      "until it accepts it (asked again every %.0f s)", table, error, self.retry_interval)
            if self.on_change is not None:
                self.on_change(table, True)
        self._tables[table] = (self.clock() + self.retry_interval, error, schema)

    def accepted(self, table: str) -> None:
        if self._tables.pop(table, None) is not None:
            log.info("the registry accepts the schema of %s again; its changes go to its topic", table)
            if self.on_change is not None:
                self.on_change(table, False)

    @property
    def tables(self) -> list[str]:
        return sorted(self._tables)


def dead_letter(change: Change, schema: SchemaSnapshot, segment: str, error: SchemaRejected,
                rejected_schema: dict | None, node: str) -> tuple[bytes, bytes]:
    """The key and JSON value of a change's dead letter."""
    value = {
        "reason": "schema_rejected",
        "error": str(error),
        "subject": error.subject,
        "table": change.table.qualified_name,
        "node": node,
        "segment": segment,
        "position": change.position._asdict(),
        "rejected_schema": rejected_schema,
        "change": ChangeRenderer(schema).render(change, segment),
    }
    return change.table.qualified_name.encode(), json.dumps(value, ensure_ascii=False, default=str).encode()


def undecodable_letter(entry: Undecodable, segment: str, node: str) -> tuple[bytes, bytes]:
    """The key (the entry's segment and offset) and JSON value of an undecodable entry's dead letter."""
    table_id = entry.error.table_id if isinstance(entry.error, UnknownTable) else None
    value = {
        "reason": "undecodable",
        "error": str(entry.error),
        "table_id": None if table_id is None else str(table_id),
        "node": node,
        "segment": segment,
        "position": entry.position._asdict(),
        "mutation": base64.b64encode(entry.mutation).decode(),
    }
    return f"{segment}:{entry.position.entry_offset}".encode(), json.dumps(value).encode()
