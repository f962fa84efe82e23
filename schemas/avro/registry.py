"""Schemas registered with a Confluent-compatible schema registry, and payloads framed with
their ids.

Subjects follow the TopicNameStrategy: `<topic>-key` and `<topic>-value`. Before a subject's
first registration from this process its compatibility level is set (BACKWARD by default:
consumers on the new schema read data written with the old one), so a table change the level
forbids is refused by the registry and raised as SchemaRejected.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from contextlib import contextmanager
from typing import TypeVar

import httpx
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from fastavro import parse_schema

from .errors import RegistryError, SchemaRejected, UnknownSchemaId
from .wire import frame, schema_id_of, unframe

_CONFLICT, _INVALID = 409, 422  # incompatible with the subject's versions (or a race, below); not a valid schema
_REJECTED = (_CONFLICT, _INVALID)
_NOT_FOUND = 404
# Attempts at configuring or registering a subject when the registry answers 409. One connector runs per
# node, and each sets up a new table's subject at the same moment as the others: some registries
# (Apicurio's Confluent API) answer all but the first "already exists", which asking again resolves. A
# schema the subject's compatibility refuses is refused at every attempt.
_CONFLICT_ATTEMPTS = 4
T = TypeVar("T")


def schema_text(schema: dict) -> str:
    """The text registered for a schema; stable, so equal schemas register once."""
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)


class SchemaRegistry:
    """Schema ids by (subject, schema) and parsed schemas by id, each asked of the registry once."""

    def __init__(self, client: SchemaRegistryClient, compatibility: str = "BACKWARD") -> None:
        self.client = client
        self.compatibility = compatibility
        self._ids: dict[tuple[str, str], int] = {}  # (subject, schema text) -> id
        self._configured: set[str] = set()
        self._parsed: dict[int, dict] = {}  # schema id -> fastavro parsed schema
        self._schemas: dict[int, dict] = {}  # schema id -> the schema as registered

    def register(self, subject: str, schema: dict, table: str) -> int:
        """The id of `schema` under `subject`, registering it on first use; `table` (its
        qualified name) is for errors."""
        text = schema_text(schema)
        schema_id = self._ids.get((subject, text))
        if schema_id is None:
            schema_id = self._register(subject, text, table)
            self._parsed.setdefault(schema_id, parse_schema(schema))
            self._ids[subject, text] = schema_id
        return schema_id

    def _register(self, subject: str, text: str, table: str) -> int:
        with _registry_errors(subject, table):
            if subject not in self._configured:
                _past_races(lambda: self.client.set_compatibility(subject, self.compatibility))
                self._configured.add(subject)
            return _past_races(lambda: self.client.register_schema(subject, Schema(text, "AVRO")))

    def schema(self, schema_id: int) -> dict:
        """The schema of an id as registered (with its `cql_*` attributes), fetched once."""
        schema = self._schemas.get(schema_id)
        if schema is None:
            with _registry_errors(None, None, schema_id):
                text = self.client.get_schema(schema_id).schema_str
            schema = self._schemas[schema_id] = json.loads(text)
        return schema

    def parsed_schema(self, schema_id: int) -> dict:
        """The parsed schema of an id."""
        parsed = self._parsed.get(schema_id)
        if parsed is None:
            parsed = self._parsed[schema_id] = parse_schema(self.schema(schema_id))
        return parsed

    def serialize(self, schema_id: int, datum) -> bytes:
        return frame(schema_id, self.parsed_schema(schema_id), datum)

    def deserialize(self, payload: bytes):
        return unframe(payload, self.parsed_schema(schema_id_of(payload)))


def _past_races(call: Callable[[], T]) -> T:
    """`call()`, made again while the registry answers 409 (see `_CONFLICT_ATTEMPTS`)."""
    for attempt in range(1, _CONFLICT_ATTEMPTS):
        try:
            return call()
        except SchemaRegistryError as exc:
            if exc.http_status_code != _CONFLICT:
                raise
            time.sleep(0.05 * attempt)
    return call()


@contextmanager
def _registry_errors(subject: str | None, table: str | None, schema_id: int | None = None):
    """Registry failures as typed errors naming the subject and table (or the schema id asked for)."""
    try:
        yield
    except SchemaRegistryError as exc:
        if schema_id is not None and exc.http_status_code == _NOT_FOUND:
            raise UnknownSchemaId(None, None, f"the registry has no schema with id {schema_id}") from exc
        error = SchemaRejected if exc.http_status_code in _REJECTED else RegistryError
        raise error(subject, table, exc.error_message) from exc
    except httpx.HTTPError as exc:
        raise RegistryError(subject, table, f"registry unreachable{_at(exc)}: {type(exc).__name__}: {exc}") from exc


def _at(exc: httpx.HTTPError) -> str:
    """Where the failed request went, as " at scheme://host:port/path" (no credentials, no query); empty
    for an error raised before any request."""
    try:
        url = exc.request.url
    except RuntimeError:  # an error raised before any request
        return ""
    return f" at {url.scheme}://{url.host}:{url.port or {'https': 443}.get(url.scheme, 80)}{url.path}"
