"""Build a schema snapshot from CQL DDL as `DESCRIBE ... WITH INTERNALS` prints it.

Understood: CREATE KEYSPACE, USE, CREATE TYPE, CREATE TABLE (with `ID = <uuid>`,
`cdc = true`, CLUSTERING ORDER BY; COMPACT STORAGE is accepted and ignored because 4.0+
tables no longer use it), and `ALTER TABLE ... DROP col [USING TIMESTAMP t]` /
`ALTER TABLE ... ADD col type`, the form DESCRIBE uses to show dropped columns. Other
statements (indexes, views, functions, roles) are skipped.
"""
from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from pathlib import Path

from .model import ClusteringOrder, Column, ColumnKind, DroppedColumn, SchemaSnapshot, Table, UserType


class DdlError(ValueError):
    """The DDL text cannot be turned into a schema snapshot."""


_TOKEN = re.compile(r"""
    (?P<space>\s+|--[^\n]*|//[^\n]*|/\*.*?\*/)
  | (?P<string>'(?:[^']|'')*')
  | (?P<dollar>\$\$.*?\$\$)
  | (?P<quoted>"(?:[^"]|"")*")
  | (?P<uuid>[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})
  | (?P<number>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
  | (?P<word>[A-Za-z_]\w*)
  | (?P<punct>[()<>,;.={}:\[\]+\-*?!])
""", re.VERBOSE | re.DOTALL)


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str
    text: str
    line: int

    @property
    def word(self) -> str:
        """Keyword-comparable text: upper case for bare words."""
        return self.text.upper() if self.kind == "word" else self.text

    @property
    def name(self) -> str:
        """Identifier as stored by Cassandra: quoted as written, bare ones lower-cased."""
        if self.kind == "quoted":
            return self.text[1:-1].replace('""', '"')
        if self.kind == "word":
            return self.text.lower()
        raise DdlError(f"line {self.line}: expected a name, found {self.text!r}")


def _tokenize(text: str) -> list[_Token]:
    tokens, pos, line = [], 0, 1
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise DdlError(f"line {line}: cannot read {text[pos:pos + 20]!r}")
        if match.lastgroup != "space":
            tokens.append(_Token(match.lastgroup, match.group(), line))
        line += match.group().count("\n")
        pos = match.end()
    return tokens


def _statements(tokens: list[_Token]) -> list[list[_Token]]:
    statements, current = [], []
    for token in tokens:
        if token.text == ";":
            if current:
                statements.append(current)
            current = []
        else:
            current.append(token)
    if current:
        statements.append(current)
    return statements


class _Statement:
    """Cursor over the tokens of one statement."""

    def __init__(self, tokens: list[_Token]) -> None:
        self.tokens = tokens
        self.i = 0

    def peek(self, *words: str) -> bool:
        return all(self.i + k < len(self.tokens) and self.tokens[self.i + k].word == w
                   for k, w in enumerate(words))

    def accept(self, *words: str) -> bool:
        if self.peek(*words):
            self.i += len(words)
            return True
        return False

    def next(self) -> _Token:
        if self.i >= len(self.tokens):
            last = self.tokens[-1]
            raise DdlError(f"line {last.line}: statement ends early after {last.text!r}")
        self.i += 1
        return self.tokens[self.i - 1]

    def expect(self, *words: str) -> None:
        for word in words:
            token = self.next()
            if token.word != word:
                raise DdlError(f"line {token.line}: expected {word!r}, found {token.text!r}")

    def at_end(self) -> bool:
        return self.i >= len(self.tokens)

    def names(self) -> list[str]:
        """One name, or a parenthesized list of names."""
        if not self.accept("("):
            return [self.next().name]
        names = [self.next().name]
        while self.accept(","):
            names.append(self.next().name)
        self.expect(")")
        return names

    def qualified_name(self, keyspace: str | None) -> tuple[str, str]:
        first = self.next().name
        if self.accept("."):
            return first, self.next().name
        if keyspace is None:
            raise DdlError(f"line {self.tokens[self.i - 1].line}: {first!r} has no keyspace and no USE precedes it")
        return keyspace, first

    def type_text(self) -> str:
        """Tokens of a CQL type up to a ',' or ')' at nesting depth 0, joined canonically."""
        parts, depth = [], 0
        while not self.at_end():
            token = self.tokens[self.i]
            if depth == 0 and (token.text in (",", ")") or token.word in ("STATIC", "PRIMARY")):
                break
            depth += {"<": 1, ">": -1}.get(token.text, 0)
            parts.append(", " if token.text == "," else token.text)
            self.i += 1
        if not parts:
            raise DdlError(f"line {self.tokens[self.i - 1].line}: missing type")
        return "".join(parts)

    def skip_value(self) -> None:
        """Skip one option value (possibly a {...} map or [...] list)."""
        depth = 0
        while not self.at_end():
            if depth == 0 and self.peek("AND"):
                return
            text = self.next().text
            depth += {"{": 1, "[": 1, "(": 1, "}": -1, "]": -1, ")": -1}.get(text, 0)


class _Builder:
    def __init__(self) -> None:
        self.keyspace: str | None = None
        self.tables: dict[tuple[str, str], Table] = {}
        self.types: list[UserType] = []

    def statement(self, s: _Statement) -> None:
        if s.accept("USE"):
            self.keyspace = s.next().name
        elif s.accept("CREATE", "TYPE"):
            self.create_type(s)
        elif s.accept("CREATE", "TABLE") or s.accept("CREATE", "COLUMNFAMILY"):
            self.create_table(s)
        elif s.accept("ALTER", "TABLE"):
            self.alter_table(s)
        # CREATE KEYSPACE needs nothing: keyspaces are named by their types and tables.

    def create_type(self, s: _Statement) -> None:
        s.accept("IF", "NOT", "EXISTS")
        keyspace, name = s.qualified_name(self.keyspace)
        s.expect("(")
        names, types = [], []
        while not s.accept(")"):
            names.append(s.next().name)
            types.append(s.type_text())
            s.accept(",")
        self.types.append(UserType(keyspace, name, tuple(names), tuple(types)))

    def create_table(self, s: _Statement) -> None:
        s.accept("IF", "NOT", "EXISTS")
        keyspace, name = s.qualified_name(self.keyspace)
        s.expect("(")
        columns: dict[str, tuple[str, bool]] = {}
        partition_key: list[str] = []
        clustering: list[str] = []
        while not s.accept(")"):
            if s.accept("PRIMARY", "KEY"):
                partition_key, clustering = self.primary_key(s)
            else:
                column = s.next().name
                columns[column] = (s.type_text(), s.accept("STATIC"))
                if s.accept("PRIMARY", "KEY"):
                    partition_key, clustering = [column], []
            s.accept(",")
        table_id, cdc, descending = None, False, set()
        if s.accept("WITH"):
            while not s.at_end():
                if s.accept("CLUSTERING", "ORDER", "BY"):
                    descending = self.clustering_order(s)
                elif s.accept("COMPACT", "STORAGE"):
                    pass
                else:
                    option = s.next().word
                    s.expect("=")
                    if option == "ID":
                        table_id = uuid.UUID(s.next().text)
                    elif option == "CDC":
                        cdc = s.next().word == "TRUE"
                    else:
                        s.skip_value()
                s.accept("AND")
        if table_id is None:
            raise DdlError(f"table {keyspace}.{name} has no ID; use DESCRIBE ... WITH INTERNALS output")
        if not partition_key:
            raise DdlError(f"table {keyspace}.{name} has no PRIMARY KEY")
        missing = [c for c in partition_key + clustering if c not in columns]
        if missing:
            raise DdlError(f"table {keyspace}.{name}: key columns {missing} are not defined")
        table_columns = [self.column(c, columns[c], partition_key, clustering, descending) for c in columns]
        self.tables[(keyspace, name)] = Table(keyspace, name, table_id, tuple(table_columns), cdc)

    @staticmethod
    def column(name: str, spec: tuple[str, bool], partition_key: list[str], clustering: list[str],
               descending: set[str]) -> Column:
        type_text, static = spec
        if name in partition_key:
            return Column(name, type_text, ColumnKind.PARTITION_KEY, partition_key.index(name))
        if name in clustering:
            order = ClusteringOrder.DESC if name in descending else ClusteringOrder.ASC
            return Column(name, type_text, ColumnKind.CLUSTERING, clustering.index(name), order)
        return Column(name, type_text, ColumnKind.STATIC if static else ColumnKind.REGULAR)

    @staticmethod
    def primary_key(s: _Statement) -> tuple[list[str], list[str]]:
        s.expect("(")
        partition_key = s.names()
        clustering = []
        while s.accept(","):
            clustering.append(s.next().name)
        s.expect(")")
        return partition_key, clustering

    @staticmethod
    def clustering_order(s: _Statement) -> set[str]:
        s.expect("(")
        descending = set()
        while not s.accept(")"):
            column = s.next().name
            if s.accept("DESC"):
                descending.add(column)
            else:
                s.accept("ASC")
            s.accept(",")
        return descending

    def alter_table(self, s: _Statement) -> None:
        keyspace, name = s.qualified_name(self.keyspace)
        table = self.tables.get((keyspace, name))
        if table is None:
            raise DdlError(f"ALTER TABLE of unknown table {keyspace}.{name}")
        if s.accept("DROP"):
            names = s.names()
            timestamp = int(s.next().text) if s.accept("USING", "TIMESTAMP") else 0
            self.tables[(keyspace, name)] = self.drop(table, names, timestamp)
        elif s.accept("ADD"):
            column = s.next().name
            added = Column(column, s.type_text(), ColumnKind.STATIC if s.accept("STATIC") else ColumnKind.REGULAR)
            self.tables[(keyspace, name)] = Table(table.keyspace, table.name, table.id, table.columns + (added,),
                                                  table.cdc, table.dropped_columns)

    @staticmethod
    def drop(table: Table, names: list[str], timestamp: int) -> Table:
        dropped = dict(table.dropped_columns)
        for column_name in names:
            column = table.column(column_name)
            if column is None:
                raise DdlError(f"{table.qualified_name}: cannot drop unknown column {column_name!r}")
            dropped[column_name] = DroppedColumn(column_name, column.type, timestamp, column.kind)
        columns = tuple(c for c in table.columns if c.name not in names)
        return Table(table.keyspace, table.name, table.id, columns, table.cdc, dropped)


def parse_ddl(text: str) -> SchemaSnapshot:
    """Schema snapshot of the tables and types defined in `text`."""
    builder = _Builder()
    for tokens in _statements(_tokenize(text)):
        builder.statement(_Statement(tokens))
    return SchemaSnapshot.of(builder.tables.values(), builder.types)


def parse_ddl_file(path: str | Path) -> SchemaSnapshot:
    return parse_ddl(Path(path).read_text(encoding="utf-8"))
