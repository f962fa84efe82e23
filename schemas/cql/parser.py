"""Parse CQL type strings as system_schema stores them into type objects.

Examples: `int`, `frozen<map<text, frozen<list<int>>>>`, `vector<float, 3>`, `address`
(a UDT of the keyspace), `'org.apache.cassandra.db.marshal.X'` (custom, unsupported).
Only the outermost collection or UDT can be multi-cell; everything nested is frozen.
"""
from __future__ import annotations

import re
from typing import Mapping, Protocol, Sequence

from .collections import ListType, MapType, SetType, TupleType, UserType, VectorType
from .native import NATIVE_TYPES
from .types import CqlType, CqlTypeError, UnsupportedType

_TOKEN = re.compile(r'\s*(?:(?P<word>[A-Za-z_][\w.]*)|"(?P<quoted>(?:[^"]|"")*)"|'
                    r"'(?P<custom>(?:[^']|'')*)'|(?P<number>\d+)|(?P<punct>[<>,])|(?P<bad>\S))")


class UserTypeDefinition(Protocol):
    """What the parser needs to know about a UDT (see schemas.tables.model.UserType)."""

    field_names: Sequence[str]
    field_types: Sequence[str]


def parse_type(text: str, user_types: Mapping[str, UserTypeDefinition] | None = None,
               keyspace: str = "") -> CqlType:
    """Parse `text`; UDT names are looked up in `user_types` (the keyspace's types by name)."""
    return _Parser(text, user_types or {}, keyspace, ()).parse()


def type_name(text: str) -> str:
    """The outermost type's name, lowercased (`list` of `list<frozen<address>>`), without resolving
    anything inside it; a quoted UDT name keeps its case."""
    match = _TOKEN.match(text.strip())
    if match is None or match.lastgroup not in ("word", "quoted"):
        raise CqlTypeError(f"type {text!r} does not start with a name")
    return match.group("quoted") if match.lastgroup == "quoted" else match.group("word").lower()


def type_arguments(text: str) -> list[str]:
    """The arguments of a parameterized type as written (quoted names kept), e.g. `K` and `V` of
    `map<K, V>`; [] for a type without any."""
    text = text.strip()
    parts, depth, start = [], 0, 0
    for match in _TOKEN.finditer(text):
        punct = match.group("punct")
        if match.lastgroup == "bad":
            raise CqlTypeError(f"unexpected {match.group('bad')!r} in type {text!r}")
        if punct == "<":
            depth += 1
            start = match.end() if depth == 1 else start
        elif punct == "," and depth == 1:
            parts.append(text[start:match.start()].strip())
            start = match.end()
        elif punct == ">":
            depth -= 1
            if depth == 0:
                return [*parts, text[start:match.start()].strip()]
    if depth:
        raise CqlTypeError(f"type {text!r} ends early")
    return parts


class _Parser:
    def __init__(self, text: str, user_types: Mapping[str, UserTypeDefinition], keyspace: str,
                 resolving: tuple[str, ...]) -> None:
        self.text = text
        self.tokens = self._tokenize(text)
        self.i = 0
        self.user_types = user_types
        self.keyspace = keyspace
        self.resolving = resolving  # UDT names being resolved, to reject cycles

    def _tokenize(self, text: str) -> list[tuple[str, str]]:
        tokens = []
        for match in _TOKEN.finditer(text.strip()):
            kind = match.lastgroup
            if kind == "bad":
                raise CqlTypeError(f"unexpected {match.group(kind)!r} in type {text!r}")
            tokens.append((kind, match.group(kind)))
        return tokens

    def parse(self, top: bool = True) -> CqlType:
        result = self._type(top)
        if self.i != len(self.tokens):
            raise CqlTypeError(f"trailing text in type {self.text!r}")
        return result

    def _next(self) -> tuple[str, str]:
        if self.i >= len(self.tokens):
            raise CqlTypeError(f"type {self.text!r} ends early")
        token = self.tokens[self.i]
        self.i += 1
        return token

    def _expect(self, punct: str) -> None:
        if self._next() != ("punct", punct):
            raise CqlTypeError(f"expected {punct!r} in type {self.text!r}")

    def _type(self, top: bool, frozen: bool = False) -> CqlType:
        kind, value = self._next()
        if kind == "custom":
            raise UnsupportedType(f"custom type {value!r} is not supported")
        if kind == "quoted":
            return self._user_type(value.replace('""', '"'), frozen or not top)
        if kind != "word":
            raise CqlTypeError(f"unexpected {value!r} in type {self.text!r}")
        name = value.lower()
        multi_cell_frozen = frozen or not top  # nested collections are always frozen
        if name == "frozen":
            self._expect("<")
            inner = self._type(top, frozen=True)
            self._expect(">")
            return inner
        if name in ("list", "set"):
            self._expect("<")
            element = self._type(top=False)
            self._expect(">")
            return (ListType if name == "list" else SetType)(element, multi_cell_frozen)
        if name == "map":
            self._expect("<")
            key = self._type(top=False)
            self._expect(",")
            value_type = self._type(top=False)
            self._expect(">")
            return MapType(key, value_type, multi_cell_frozen)
        if name == "tuple":
            self._expect("<")
            elements = [self._type(top=False)]
            while self._peek(","):
                elements.append(self._type(top=False))
            self._expect(">")
            return TupleType(elements)
        if name == "vector":
            self._expect("<")
            element = self._type(top=False)
            self._expect(",")
            kind, dimension = self._next()
            if kind != "number" or int(dimension) < 1:
                raise CqlTypeError(f"bad vector dimension in type {self.text!r}")
            self._expect(">")
            return VectorType(element, int(dimension))
        if name in NATIVE_TYPES:
            return NATIVE_TYPES[name]
        return self._user_type(value, multi_cell_frozen)

    def _peek(self, punct: str) -> bool:
        if self.i < len(self.tokens) and self.tokens[self.i] == ("punct", punct):
            self.i += 1
            return True
        return False

    def _user_type(self, name: str, frozen: bool) -> UserType:
        keyspace, _, short = name.rpartition(".")
        if keyspace and keyspace != self.keyspace:
            raise CqlTypeError(f"type {name!r} belongs to another keyspace than {self.keyspace!r}")
        definition = self.user_types.get(short)
        if definition is None:
            raise CqlTypeError(f"unknown type {short!r} in keyspace {self.keyspace!r}")
        if short in self.resolving:
            raise CqlTypeError(f"type {short!r} refers to itself")
        # Fields are never multi-cell, even when written without frozen<>.
        field_types = [_Parser(t, self.user_types, self.keyspace, self.resolving + (short,)).parse(top=False)
                       for t in definition.field_types]
        return UserType(self.keyspace, short, list(definition.field_names), field_types, frozen)
