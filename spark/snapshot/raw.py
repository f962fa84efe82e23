"""Result rows as the bytes Cassandra sent, for a session of the Python driver.

The snapshot decodes values with ringtail's own CQL type layer (`schemas.cql`), the one the
commit-log reader uses, so a row read by the snapshot and the same row read from the log give the
same values to the byte. The driver's protocol handler is its documented extension point for this
(`Session.client_protocol_handler`); only the rows of a result change: a page's rows stay its rows
section as sent (`RowsSection`), which the native core reads whole, and Python row by row.
"""
from __future__ import annotations

import struct
from functools import cached_property
from typing import Any

from cassandra.protocol import ResultMessage, _ProtocolHandler
from cassandra.query import tuple_factory

_INT = struct.Struct(">i")
_NO_ROWS = _INT.pack(0)


class RowsSection:
    """A page's rows section: `count:int` then, row after row, each of `columns` values as `length:int`
    and that many bytes (a negative length: null)."""

    def __init__(self, columns: int, body: bytes) -> None:
        self.columns, self.body = columns, body

    def take(self) -> RowsSection:
        """This section's rows in a new section, this one left without any. The driver's response future holds
        its result in a reference cycle (with its timer) that only the cycle collector frees, which runs seldom
        while pages are read without Python objects per row: each page it held would stay in memory till then."""
        taken = RowsSection(self.columns, self.body)
        self.body = _NO_ROWS
        self.__dict__.pop("rows", None)
        return taken

    def __len__(self) -> int:
        return _INT.unpack_from(self.body)[0]

    def __iter__(self):
        return iter(self.rows)

    def __getitem__(self, index: int) -> tuple:
        return self.rows[index]

    @cached_property
    def rows(self) -> list[tuple[bytes | None, ...]]:
        """The rows, each a tuple of serialized values (bytes, or None for null), read by position."""
        body, p, rows = self.body, 4, []
        for _ in range(len(self)):
            row = []
            for _ in range(self.columns):
                (length,), p = _INT.unpack_from(body, p), p + 4
                if length < 0:
                    row.append(None)
                else:
                    if p + length > len(body):
                        raise ValueError(f"a value of {length} bytes overruns the rows section at byte {p}")
                    row.append(body[p:p + length])
                    p += length
            rows.append(tuple(row))
        if p != len(body):
            raise ValueError(f"{len(body) - p} bytes after the last row of the rows section")
        return rows


class _RawRowsResult(ResultMessage):
    def recv_results_rows(self, f, protocol_version, user_type_map, result_metadata, column_encryption_policy):
        self.recv_results_metadata(f, user_type_map)
        column_metadata = self.column_metadata or result_metadata
        self.parsed_rows = RowsSection(len(column_metadata), f.read())  # the section ends the message
        self.column_names = [c[2] for c in column_metadata]
        self.column_types = [c[3] for c in column_metadata]


class RawRowsProtocolHandler(_ProtocolHandler):
    message_types_by_opcode = {**_ProtocolHandler.message_types_by_opcode, ResultMessage.opcode: _RawRowsResult}


def raw_rows(session: Any) -> Any:
    """`session`, answering queries with rows of serialized values: a page's `current_rows` is its
    `RowsSection` when the session's row factory is `RAW_PAGES` (as the snapshot opens its sessions), else
    the rows the factory makes of the section's."""
    session.client_protocol_handler = RawRowsProtocolHandler
    return session


# The row factory of a session whose pages stay sections (`raw_rows`): the driver's named tuples would make a
# Python object of every row.
RAW_PAGES = tuple_factory
