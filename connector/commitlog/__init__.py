"""Commit log segment reader: descriptor, sync sections, entries, mutations, changes."""
from schemas.change import Bound, Cell, Change, ComplexColumn, DeletionTime, Liveness, Op, Position, Undecodable
from .descriptor import Descriptor, read_descriptor, segment_id_from_name
from .errors import (CommitLogError, CorruptSegment, CrcMismatch, EncryptedSegment, SchemaMismatch,
                     TruncatedSegment, UnknownTable, UnsupportedSegment, UnsupportedVersion)
from .reader import UNDECODABLE, SchemaMissPolicy, SegmentReader, skip_unknown_tables

__all__ = [
    "Bound", "Cell", "Change", "CommitLogError", "ComplexColumn", "CorruptSegment", "CrcMismatch",
    "DeletionTime", "Descriptor", "EncryptedSegment", "Liveness", "Op", "Position", "SchemaMismatch",
    "SchemaMissPolicy", "SegmentReader", "TruncatedSegment", "UNDECODABLE", "Undecodable", "UnknownTable",
    "UnsupportedSegment", "UnsupportedVersion", "read_descriptor", "segment_id_from_name",
]
