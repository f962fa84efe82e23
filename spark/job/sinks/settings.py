"""Each sink's settings: one frozen model per sink, which checks a subscription's settings when it is
created (`Subscription.check`) and builds the sink when a job or a runner opens it (`open`).

A subscription keeps its sink's settings as text (`sink_config`, a map of strings in Cassandra); the
model reads that text again at every open, so what `create` accepted is what runs. `SINKS` names the
sinks a subscription can deliver to.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal
from urllib.parse import urlsplit

from pydantic import (AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, PositiveFloat, PositiveInt, SecretStr,
                      ValidationError)

from spark.streams.storage import Replication

if TYPE_CHECKING:
    from . import Sink

MIRROR = "mirror"
Layout = Literal["log", "typed", MIRROR]  # the log, a typed log per table, or a mirror of each table
KafkaFormat = Literal["json", "avro"]  # the Kafka sink's record values


def _flag(value: Any) -> Any:
    # Stricter than pydantic's lax bool ("yes", "on", "1"): a setting reads true or false.
    if isinstance(value, str):
        if value.lower() not in ("true", "false"):
            raise ValueError("true or false")
        return value.lower() == "true"
    return value


def _http_url(text: str) -> str:
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("an http:// or https:// URL")
    return text


def _mysql_dsn(text: str) -> str:
    parts = urlsplit(text)
    if parts.scheme not in ("mysql", "mariadb") or not parts.hostname or not parts.path.strip("/"):
        raise ValueError("mysql://user[:password]@host[:port]/database")
    return text


def _hosts(value: Any) -> Any:
    return tuple(h.strip() for h in value.split(",") if h.strip()) if isinstance(value, str) else value


Flag = Annotated[bool, BeforeValidator(_flag)]
HttpUrl = Annotated[str, AfterValidator(_http_url)]


@dataclass(frozen=True)
class SinkContext:
    """What a sink takes from the process that opens it rather than from its own settings: `app_id` names
    its writes in the exactly-once bookkeeping; the Cassandra sink writes to `cluster` and `keyspace`,
    created with `replication` when missing, as ringtail's own keyspace is (Delta's typed layout and the
    mirrors read their tables' schemas there); the Kafka sink writes to the `kafka` cluster and its Avro
    schemas to the `registry`, unless its settings say otherwise."""

    app_id: str
    cluster: tuple[Sequence[str], int]
    keyspace: str
    kafka: str
    registry: str
    replication: Replication = None


class SinkSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: ClassVar[str]  # as a subscription names it: `class DeltaSettings(SinkSettings, kind="delta")`

    def __init_subclass__(cls, kind: str = "", **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if kind:
            cls.kind = kind

    def open(self, spark: Any, context: SinkContext) -> Sink:
        """The sink these settings describe."""
        raise NotImplementedError

    def target(self) -> str:
        """Where the sink writes, without credentials: sinks with the same target share the generations
        published to it."""
        raise NotImplementedError

    @property
    def mirrors(self) -> bool:
        """Whether the sink holds a mirror of the table (which takes no filter, columns or operations)."""
        return False


class _LaidOut(SinkSettings):
    """A sink of several layouts."""

    layout: Layout = "log"

    @property
    def mirrors(self) -> bool:
        return self.layout == MIRROR


class DeltaSettings(_LaidOut, kind="delta"):
    path: str

    def open(self, spark: Any, context: SinkContext) -> Sink:
        from .delta import DeltaSink

        return DeltaSink(spark, self.path, context.app_id, layout=self.layout, cluster=context.cluster)

    def target(self) -> str:
        return f"delta:{self.path}"


def _without_password(dsn: str) -> str:
    parts = urlsplit(dsn)
    if parts.password is None:
        return dsn
    return parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@", 1)).geturl()


class PostgresSettings(_LaidOut, kind="postgres"):
    dsn: str = Field(repr=False)  # it may hold a password
    schema_: str = Field("ringtail", alias="schema")  # (`schema` is taken by BaseModel)

    def open(self, spark: Any, context: SinkContext) -> Sink:
        if self.layout == MIRROR:
            from .postgres_mirror import PostgresMirrorSink

            return PostgresMirrorSink(self.dsn, schema=self.schema_, app_id=context.app_id, cluster=context.cluster)
        if self.layout == "typed":
            from .postgres_typed import PostgresTypedSink

            return PostgresTypedSink(self.dsn, schema=self.schema_, app_id=context.app_id, cluster=context.cluster)
        from .postgres import PostgresSink

        return PostgresSink(self.dsn, schema=self.schema_, app_id=context.app_id)

    def target(self) -> str:
        return f"postgres:{_without_password(self.dsn)}:{self.schema_}"


class MySqlSettings(_LaidOut, kind="mysql"):
    dsn: Annotated[str, AfterValidator(_mysql_dsn), Field(repr=False)]

    def open(self, spark: Any, context: SinkContext) -> Sink:
        if self.layout == MIRROR:
            from .mysql_mirror import MySqlMirrorSink

            return MySqlMirrorSink(self.dsn, app_id=context.app_id, cluster=context.cluster)
        if self.layout == "typed":
            from .mysql_typed import MySqlTypedSink

            return MySqlTypedSink(self.dsn, app_id=context.app_id, cluster=context.cluster)
        from .mysql import MySqlSink

        return MySqlSink(self.dsn, app_id=context.app_id)

    def target(self) -> str:
        return f"mysql:{_without_password(self.dsn)}"


class CassandraSettings(SinkSettings, kind="cassandra"):
    # Unset: the cluster ringtail reads its ring from, and its keyspace (`SinkContext`).
    hosts: Annotated[tuple[str, ...], BeforeValidator(_hosts), Field(min_length=1)] | None = None
    port: Annotated[int, Field(gt=0, lt=65536)] | None = None
    keyspace: str | None = None

    def open(self, spark: Any, context: SinkContext) -> Sink:
        from .cassandra import CassandraSink

        return CassandraSink(hosts=list(self.hosts or context.cluster[0]), port=self.port or context.cluster[1],
                             keyspace=self.keyspace or context.keyspace, replication=context.replication)

    def target(self) -> str:
        return f"cassandra:{','.join(self.hosts or ())}:{self.port or ''}:{self.keyspace or ''}"


class KafkaSettings(SinkSettings, kind="kafka"):
    topic: str
    bootstrap_servers: str | None = None  # unset: the cluster ringtail reads from
    partitions: PositiveInt = 3
    replication_factor: PositiveInt = 1
    format: KafkaFormat = "json"
    registry_url: HttpUrl | None = None  # unset: ringtail's registry
    transactions: Flag = True

    def open(self, spark: Any, context: SinkContext) -> Sink:
        from .kafka import KafkaSink

        return KafkaSink(self.bootstrap_servers or context.kafka, self.topic, app_id=context.app_id,
                         partitions=self.partitions, replication_factor=self.replication_factor, format=self.format,
                         registry_url=self.registry_url or context.registry, transactions=self.transactions)

    def target(self) -> str:
        return f"kafka:{self.bootstrap_servers or ''}:{self.topic}"


class HttpSettings(SinkSettings, kind="http"):
    url: HttpUrl
    batch_size: PositiveInt = 500
    timeout: PositiveFloat = 10.0
    token: SecretStr | None = None  # sent as a bearer token
    verify: Flag = True
    attempts: PositiveInt = 6

    def open(self, spark: Any, context: SinkContext) -> Sink:
        from .http import HttpSink

        return HttpSink(self.url, app_id=context.app_id, batch_size=self.batch_size, timeout=self.timeout,
                        token=self.token.get_secret_value() if self.token else None, verify=self.verify,
                        attempts=self.attempts)

    def target(self) -> str:
        return f"http:{self.url}"


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


def _reason(kind: str, model: type[SinkSettings], config: Mapping[str, str], error: Mapping[str, Any]) -> str:
    name = str(error["loc"][0]) if error["loc"] else ""
    if error["type"] == "missing":
        missing = sorted(f.alias or n for n, f in model.model_fields.items() if f.is_required()
                         and (f.alias or n) not in config)
        return f"sink {kind} needs {', '.join(missing)}"
    if error["type"] == "extra_forbidden":
        known = ", ".join(sorted(f.alias or n for n, f in model.model_fields.items())) or "none"
        return f"sink {kind} has no setting {name!r} (settings: {known})"
    shown = _without_password(str(config.get(name)))  # a DSN refused is shown, its password not
    return f"sink {kind} setting {name} = {shown!r}: {error['msg'].removeprefix('Value error, ')}"
