"""Result rows as the bytes Cassandra sent, for a session of the Python driver.

The snapshot decodes values with ringtail's own CQL type layer (`schemas.cql`), the one the
commit-log reader uses, so a row read by the snapshot and the same row read from the log give the
same values to the byte. The driver's protocol handler is its documented extension point for this
(`Session.client_protocol_handler`); only the rows of a result change: each value stays the
serialized bytes (None for null).
"""
from __future__ import annotations

from typing import Any

from cassandra.protocol import ResultMessage, _ProtocolHandler, read_int


class _RawRowsResult(ResultMessage):
    def recv_results_rows(self, f, protocol_version, user_type_map, result_metadata, column_encryption_policy):
        self.recv_results_metadata(f, user_type_map)
        column_metadata = self.column_metadata or result_metadata
        count = read_int(f)
        self.parsed_rows = [self.recv_row(f, len(column_metadata)) for _ in range(count)]
        self.column_names = [c[2] for c in column_metadata]
        self.column_types = [c[3] for c in column_metadata]


class RawRowsProtocolHandler(_ProtocolHandler):
    message_types_by_opcode = {**_ProtocolHandler.message_types_by_opcode, ResultMessage.opcode: _RawRowsResult}


def raw_rows(session: Any) -> Any:
    """`session`, answering queries with rows of serialized values (bytes or None), read by position."""
    session.client_protocol_handler = RawRowsProtocolHandler
    return session
