"""Rows into a MySQL / MariaDB table in one statement: `LOAD DATA LOCAL INFILE` of their text, or multi-row
inserts where the server takes no local file (MySQL 8's default, `local_infile=OFF`; said once per server
and process).

The text is LOAD DATA's own format: fields ended by tabs, rows by newlines, a backslash escaping those and
itself, `\\N` a null; binaries as hex, loaded through UNHEX. A row whose key is there already either
replaces it (`Target.replace`: a mirror's rows and states) or leaves it as it is (a log's copy of a change
from another replica).

A value that does not fit its column fails the load, naming the row: in strict mode the server refuses it
with `REPLACE`, but with `IGNORE` (and, as MySQL's manual says, with any `LOCAL` load, whose file the server
cannot stop midway) it only warns and goes on, so any warning but a skipped duplicate's fails the load too.
"""
from __future__ import annotations

import datetime as dt
import logging
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..contract import chunks
from .types import CHUNK, quote

log = logging.getLogger(__name__)

# What a server that takes no local file answers LOAD DATA LOCAL with: "command not allowed" (MySQL 5.7, older
# MariaDB), MySQL 8's "local data disabled", MariaDB's "local infile capability disabled", and the client's
# own refusal.
_LOCAL_REFUSED = (1148, 3948, 4166, 2068)
_refused: set[str] = set()  # servers (host:port) that took no local file, in this process
_DUPLICATE = 1062  # ER_DUP_ENTRY: a row left as it was
_WARNINGS_SHOWN = 65535  # the most a session keeps
_AT_ROW = re.compile(r"at row (\d+)")


def load_file(conn: Any, cursor: Any, statement: str, data: bytes) -> int | None:
    """`statement` (`LOAD DATA LOCAL INFILE %s …`) run on `data`, in the open transaction: its count of rows;
    None when the server takes no local file."""
    import pymysql

    server = f"{conn.host}:{conn.port}"
    if server in _refused:
        return None
    with tempfile.NamedTemporaryFile(suffix=".txt") as file:
        file.write(data)
        file.flush()
        try:
            return cursor.execute(statement, (file.name,))
        except pymysql.MySQLError as exc:
            if exc.args[0] not in _LOCAL_REFUSED:
                raise
            _refused.add(server)
            log.warning("%s takes no local file for LOAD DATA (%s): rows go in by multi-row inserts, slower;"
                        " local_infile=ON on the server lets them load", server, exc.args[1])
            return None


@dataclass(frozen=True)
class Target:
    """A table rows are loaded into: its columns in the order of a row's values, which of them hold bytes,
    and whether a row replaces the one of its key (else that one stays)."""

    table: str  # quoted, with its database
    columns: tuple[str, ...]
    binary: frozenset[str] = frozenset()
    replace: bool = False

    def load_statement(self) -> str:
        fields = [f"@v{i}" if name in self.binary else quote(name) for i, name in enumerate(self.columns)]
        unhex = [f"{quote(name)} = UNHEX(@v{i})" for i, name in enumerate(self.columns) if name in self.binary]
        return (f"LOAD DATA LOCAL INFILE %s {'REPLACE' if self.replace else 'IGNORE'} INTO TABLE {self.table}"
                f" CHARACTER SET utf8mb4 ({', '.join(fields)})" + (f" SET {', '.join(unhex)}" if unhex else ""))

    def insert_statement(self) -> str:
        names = ", ".join(map(quote, self.columns))
        values = ", ".join(["%s"] * len(self.columns))
        if self.replace:
            return f"REPLACE INTO {self.table} ({names}) VALUES ({values})"
        first = quote(self.columns[0])
        return f"INSERT INTO {self.table} ({names}) VALUES ({values}) ON DUPLICATE KEY UPDATE {first} = {first}"


def load_rows(conn: Any, cursor: Any, target: Target, rows: Sequence[Sequence[Any]],
              name_row: Callable[[int], str], error: type[ValueError]) -> int:
    """`rows` (each value as PyMySQL writes it) into `target`, in the open transaction; how many rows the
    server counts (a row kept as it was counts none, one replaced two). A value that does not fit raises
    `error`, the row named by `name_row(its position)`."""
    if not rows:
        return 0
    import pymysql

    if not target.replace:  # so that the warnings shown reach past every duplicate's, to a value that did not fit
        cursor.execute(f"SET SESSION max_error_count = {_WARNINGS_SHOWN}")
    try:
        count = load_file(conn, cursor, target.load_statement(), load_text(rows))
    except pymysql.err.DataError as exc:  # refused outright rather than warned of
        raise _unfit(error, target, exc.args[1], name_row) from exc
    if count is None:
        return sum(cursor.executemany(target.insert_statement(), chunk) for chunk in chunks(rows, CHUNK))
    # A row kept as it was is a duplicate's warning; any other warning is a value that did not fit.
    unfit = cursor.warning_count - (0 if target.replace else len(rows) - count)
    if unfit:
        cursor.execute("SHOW WARNINGS")  # the first `max_error_count` of them
        for _level, code, message in cursor.fetchall():
            if code != _DUPLICATE:
                raise _unfit(error, target, message, name_row)
        raise error(f"{unfit} value(s) of {len(rows)} rows do not fit {target.table}")
    return count


def _unfit(error: type[ValueError], target: Target, message: str, name_row: Callable[[int], str]) -> ValueError:
    """The error of a value that did not fit, from the server's message ("… at row N", N from 1)."""
    at = _AT_ROW.search(message)
    return error(f"{name_row(int(at.group(1)) - 1) if at else 'a row'} does not fit {target.table}: {message}")


def load_text(rows: Sequence[Sequence[Any]]) -> bytes:
    """`rows` in LOAD DATA's format (the module's)."""
    return "".join("\t".join(map(_text, row)) + "\n" for row in rows).encode()


def _text(value: Any) -> str:
    kind = type(value)
    if kind is str:
        return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
    if value is None:
        return "\\N"
    if kind is bool:
        return "1" if value else "0"
    if kind is int:
        return str(value)
    text = _TEXTS.get(kind)
    if text is None:  # a store column's conversion made a value no column type holds
        raise TypeError(f"no LOAD DATA text for a value of type {kind.__name__}")
    return text(value)


_TEXTS: dict[type, Callable[[Any], str]] = {
    float: repr,  # the shortest text that reads back as the same double
    bytes: bytes.hex,
    dt.datetime: lambda value: value.isoformat(" "),
    dt.date: dt.date.isoformat,
}
