"""Typed errors of the Avro event layer."""
from __future__ import annotations


class AvroError(Exception):
    """Base class: a change could not become (or be read back from) an Avro event."""


class NameClash(AvroError):
    """Two identifiers map to the same Avro name inside one record."""


class RegistryError(AvroError):
    """The schema registry failed (unreachable, unknown id, server error); worth a retry."""

    def __init__(self, subject: str | None, table: str | None, message: str) -> None:
        self.subject = subject
        self.table = table
        self.message = message
        where = ", ".join(part for part in (subject and f"subject {subject}", table and f"table {table}") if part)
        super().__init__(f"{where}: {message}" if where else message)


class UnknownSchemaId(RegistryError):
    """The registry has no schema with the id a payload names: that payload cannot be read."""


class SchemaRejected(RegistryError):
    """The registry refused a schema (incompatible with the subject's versions, or invalid).

    Retrying cannot help: the table's schema changed in a way the subject's compatibility
    level forbids, and an operator has to decide (new topic, compatibility level, ...).
    """


class MalformedPayload(AvroError):
    """Bytes that are not a Confluent-framed Avro payload."""
