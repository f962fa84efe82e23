"""The statement form of the control verbs ("operate CDC with SQL"):

    CREATE SUBSCRIPTION name ON ks.table TO sink [WITH key = 'value', ...] [COLUMNS (c, ...)]
        [OPERATIONS (insert, update, delete)] [START 'now'|'earliest'|'snapshot'|'<timestamp>'] [WHERE <filter>]
    ALTER SUBSCRIPTION name [WITH key = 'value', ...] [WHERE <filter>] | ALTER SUBSCRIPTION name RESET TO '<start>'
    PAUSE SUBSCRIPTION name    RESUME SUBSCRIPTION name    DROP SUBSCRIPTION name
    SHOW SUBSCRIPTIONS [ON ks.table]

Keywords are case-insensitive; names are identifiers or "double quoted"; values are 'single quoted'
('' inside) or plain words and numbers. The filter is the rest of the statement, a Spark SQL boolean
expression (see model.py). A statement that does not parse raises StatementError with its position.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .model import Change

_TOKEN = re.compile(r"""\s*(?:(?P<word>[A-Za-z_][A-Za-z0-9_$-]*)|"(?P<quoted>(?:[^"]|"")*)"|"""
                    r"""'(?P<string>(?:[^']|'')*)'|(?P<number>-?\d+(?:\.\d+)?)|(?P<punct>[.,=();*])|(?P<bad>\S))""")


class StatementError(ValueError):
    """A statement that does not parse; `position` is the 1-based character where it goes wrong."""

    def __init__(self, message: str, statement: str, position: int) -> None:
        self.position = position
        super().__init__(f"{message} at character {position}: {statement[max(0, position - 1):][:40]!r}")


@dataclass(frozen=True)
class Statement:
    verb: str  # create, alter, reset, pause, resume, cancel, list
    name: str | None = None
    change: Change = field(default_factory=Change)
    table: str | None = None  # SHOW SUBSCRIPTIONS ON ks.table


@dataclass(frozen=True)
class _Token:
    kind: str
    text: str
    at: int  # 0-based offset in the statement


class _Parser:
    def __init__(self, statement: str) -> None:
        self.statement = statement
        self.tokens: list[_Token] = []
        for match in _TOKEN.finditer(statement):
            kind = match.lastgroup
            if kind == "bad":
                raise StatementError(f"unexpected {match.group(kind)!r}", statement, match.start(kind) + 1)
            text = match.group(kind)
            if kind == "string":
                text = text.replace("''", "'")
            elif kind == "quoted":
                text = text.replace('""', '"')
            self.tokens.append(_Token(kind, text, match.start(kind)))
            if kind == "word" and text.upper() == "WHERE":  # the filter, Spark SQL, is taken as written
                rest = statement[match.end():].strip().removesuffix(";").rstrip()
                if rest:
                    self.tokens.append(_Token("filter", rest, statement.index(rest, match.end())))
                break
        while self.tokens and self.tokens[-1].text == ";":
            self.tokens.pop()
        self.i = 0

    # -- tokens --------------------------------------------------------------------------------

    def fail(self, message: str, token: _Token | None = None) -> StatementError:
        at = token.at if token is not None else (self._peek().at if self._peek() else len(self.statement))
        return StatementError(message, self.statement, at + 1)

    def _peek(self) -> _Token | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def next(self, what: str) -> _Token:
        token = self._peek()
        if token is None:
            raise self.fail(f"expected {what}, the statement ends")
        self.i += 1
        return token

    def keyword(self, *words: str) -> str:
        token = self.next(" or ".join(words))
        if token.kind != "word" or token.text.upper() not in words:
            raise self.fail(f"expected {' or '.join(words)}", token)
        return token.text.upper()

    def at_keyword(self, *words: str) -> bool:
        token = self._peek()
        return token is not None and token.kind == "word" and token.text.upper() in words

    def punct(self, text: str) -> None:
        token = self.next(repr(text))
        if token.text != text or token.kind != "punct":
            raise self.fail(f"expected {text!r}", token)

    def name(self, what: str) -> str:
        token = self.next(what)
        if token.kind not in ("word", "quoted"):
            raise self.fail(f"expected {what}", token)
        return token.text

    def value(self) -> str:
        token = self.next("a value")
        if token.kind not in ("string", "word", "number"):
            raise self.fail("expected a value ('text', a word or a number)", token)
        return token.text

    def end(self) -> None:
        token = self._peek()
        if token is not None:
            raise self.fail("unexpected text after the statement", token)

    # -- clauses -------------------------------------------------------------------------------

    def table(self) -> str:
        keyspace = self.name("a keyspace name")
        self.punct(".")
        return f"{keyspace}.{self.name('a table name')}"

    def options(self) -> dict[str, str]:
        options = {}
        while True:
            key = self.name("an option name")
            self.punct("=")
            options[key] = self.value()
            if not (self._peek() and self._peek().text == ","):
                return options
            self.i += 1

    def names(self, what: str) -> tuple[str, ...]:
        self.punct("(")
        out = [self.name(what)]
        while self._peek() and self._peek().text == ",":
            self.i += 1
            out.append(self.name(what))
        self.punct(")")
        return tuple(out)

    def rest(self) -> str:
        """The filter: everything after WHERE, as written."""
        token = self.next("a filter expression")
        if token.kind != "filter":
            raise self.fail("expected a filter expression", token)
        return token.text

    # -- statements ----------------------------------------------------------------------------

    def parse(self) -> Statement:
        verb = self.keyword("CREATE", "ALTER", "PAUSE", "RESUME", "DROP", "SHOW")
        if verb == "SHOW":
            self.keyword("SUBSCRIPTIONS")
            table = None
            if self.at_keyword("ON"):
                self.i += 1
                table = self.table()
            self.end()
            return Statement("list", table=table)
        self.keyword("SUBSCRIPTION")
        name = self.name("a subscription name")
        if verb in ("PAUSE", "RESUME", "DROP"):
            self.end()
            return Statement({"PAUSE": "pause", "RESUME": "resume", "DROP": "cancel"}[verb], name)
        if verb == "ALTER" and self.at_keyword("RESET"):
            self.i += 1
            self.keyword("TO")
            start = self.value()
            self.end()
            return Statement("reset", name, Change(start=start))
        fields: dict = {}
        if verb == "CREATE":
            self.keyword("ON")
            fields["table"] = self.table()
            self.keyword("TO")
            fields["sink"] = self.name("a sink type")
        clauses = ("WITH", "WHERE") if verb == "ALTER" else ("WITH", "COLUMNS", "OPERATIONS", "START", "WHERE")
        while self._peek() is not None:
            clause = self.keyword(*clauses)
            if clause == "WITH":
                fields["sink_config"] = self.options()
            elif clause == "COLUMNS":
                fields["columns"] = self.names("a column name")
            elif clause == "OPERATIONS":
                fields["operations"] = tuple(op.lower() for op in self.names("an operation"))
            elif clause == "START":
                fields["start"] = self.value()
            else:
                fields["filter"] = self.rest()
        if verb == "ALTER" and not fields:
            raise self.fail("ALTER SUBSCRIPTION needs WITH, WHERE or RESET TO")
        return Statement(verb.lower(), name, Change(**fields))


def parse_statement(statement: str) -> Statement:
    return _Parser(statement).parse()
