"""The sinks a subscription can deliver to, each by its settings model, and reading a sink's settings
from their text."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from .cassandra.settings import CassandraSettings
from .delta.settings import DeltaSettings
from .http.settings import HttpSettings
from .kafka.settings import KafkaSettings
from .mysql.settings import MySqlSettings
from .postgres.settings import PostgresSettings
from .contract import Sink
from .settings import SinkContext, SinkSettings, is_secret, without_password

# The sinks a subscription can deliver to.
SINKS: dict[str, type[SinkSettings]] = {s.kind: s for s in (DeltaSettings, PostgresSettings, MySqlSettings,
                                                            CassandraSettings, KafkaSettings, HttpSettings)}


class InvalidSinkSettings(ValueError):
    """Settings a sink cannot run with: names the setting and says why."""


def sink_settings(kind: str, config: Mapping[str, str]) -> SinkSettings:
    """The settings of sink `kind` read from their text; `InvalidSinkSettings` says which and why."""
    model = SINKS.get(kind)
    if model is None:
        raise InvalidSinkSettings(f"unknown sink {kind!r}; sinks: {', '.join(sorted(SINKS))}")
    try:
        return model.model_validate(dict(config))
    except ValidationError as exc:
        raise InvalidSinkSettings(_reason(kind, model, config, exc.errors()[0])) from None


def shown(kind: str, config: Mapping[str, str]) -> dict[str, str]:
    """A sink's settings as they may be printed: a secret one (a token) as ***, a DSN without its password."""
    model = SINKS.get(kind)
    fields = model.model_fields if model else {}
    secret = {f.alias or name for name, f in fields.items() if is_secret(f.annotation)}
    return {name: "***" if name in secret else without_password(value) for name, value in config.items()}


def _reason(kind: str, model: type[SinkSettings], config: Mapping[str, str], error: Mapping[str, Any]) -> str:
    name = str(error["loc"][0]) if error["loc"] else ""
    if error["type"] == "missing":
        missing = sorted(f.alias or n for n, f in model.model_fields.items() if f.is_required()
                         and (f.alias or n) not in config)
        return f"sink {kind} needs {', '.join(missing)}"
    if error["type"] == "extra_forbidden":
        known = ", ".join(sorted(f.alias or n for n, f in model.model_fields.items())) or "none"
        return f"sink {kind} has no setting {name!r} (settings: {known})"
    value = shown(kind, {name: str(config.get(name))})[name]  # as printed: a secret as ***, a DSN without password
    return f"sink {kind} setting {name} = {value!r}: {error['msg'].removeprefix('Value error, ')}"


def open_sink(spark: Any, kind: str, config: Mapping[str, str], context: SinkContext) -> Sink:
    """The sink `kind` with its settings as text (a subscription's `sink_config`), checked
    (`InvalidSinkSettings`)."""
    return sink_settings(kind, config).open(spark, context)
