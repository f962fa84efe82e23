"""Typed errors of the commit log reader.

Every error names the segment file and the byte position (a logical position for
compressed segments) so an operator can find the damage with a hex dump.
"""
from __future__ import annotations

import uuid


class CommitLogError(Exception):
    """Base class: something in a segment could not be read."""

    def __init__(self, segment: str, position: int, message: str) -> None:
        self.segment = str(segment)
        self.position = position
        self.detail = message
        super().__init__(f"{self.segment} @ {position}: {message}")


class CorruptSegment(CommitLogError):
    """Bytes inside the durable part of a segment do not follow the format."""


class CrcMismatch(CorruptSegment):
    """A header, sync marker or entry CRC does not match its bytes."""


class TruncatedSegment(CorruptSegment):
    """The file ends before the durable data it announces."""


class UnsupportedSegment(CommitLogError):
    """A well-formed segment this reader cannot decode."""


class UnsupportedVersion(UnsupportedSegment):
    """Descriptor version without a known messaging version."""


class EncryptedSegment(UnsupportedSegment):
    """Transparent data encryption is not supported."""


class UnknownTable(CommitLogError):
    """A partition update names a table id the schema snapshot does not know."""

    def __init__(self, segment: str, position: int, table_id: uuid.UUID) -> None:
        self.table_id = table_id
        super().__init__(segment, position, f"unknown table id {table_id}")


class SchemaMismatch(CommitLogError):
    """The schema snapshot does not fit the bytes of a (CRC-valid) mutation."""
