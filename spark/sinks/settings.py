"""What every sink's settings model is: frozen, typed, checking a subscription's settings when it is
created (`Subscription.check`) and building the sink when a job or a runner opens it (`open`). Each
target's model is in its package (`postgres/settings.py` …); `registry` names them.

A subscription keeps its sink's settings as text (`sink_config`, a map of strings in Cassandra); the
model reads that text again at every open, so what `create` accepted is what runs.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, get_args
from urllib.parse import quote, urlsplit

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, SecretStr, model_validator

from schemas.runtime.access import CassandraCluster, KafkaSecurity, RegistrySecurity, secret
from spark.streams.storage import Replication

from .layouts import IMAGE, MIRROR, ChangeLayout, Layout

if TYPE_CHECKING:
    from .contract import Sink
    from .images import ImagesAt


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


Flag = Annotated[bool, BeforeValidator(_flag)]
HttpUrl = Annotated[str, AfterValidator(_http_url)]


@dataclass(frozen=True)
class SinkContext:
    """What a sink takes from the process that opens it rather than from its own settings: `app_id` names
    its writes in the exactly-once bookkeeping; the Cassandra sink writes to `cluster` and `keyspace`,
    created with `replication` when missing, as ringtail's own keyspace is (Delta's typed layout and the
    mirrors read their tables' schemas there); the Kafka sink writes to the `kafka` cluster and its Avro
    schemas to the `registry`, unless its settings say otherwise. Each is reached with the process's own
    security settings."""

    app_id: str
    cluster: CassandraCluster
    keyspace: str
    kafka: str
    registry: str
    replication: Replication = None
    kafka_security: KafkaSecurity = KafkaSecurity()
    registry_security: RegistrySecurity = RegistrySecurity()


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

    def clear_secrets(self) -> list[str]:
        """The settings that hold a secret in clear (a token, a DSN's password). A subscription keeps its
        settings as text in ringtail_cdc, so it takes its secrets by reference (`…_file`) instead."""
        return [name for name, field in type(self).model_fields.items()
                if is_secret(field.annotation) and getattr(self, name) is not None]


class LaidOut(SinkSettings):
    """A sink of several layouts."""

    layout: Layout = "log"

    @property
    def mirrors(self) -> bool:
        return self.layout == MIRROR


class Imaging(SinkSettings):
    """A sink that sends each change (Kafka, HTTP): as the log, or as its images (`layout=image`), made from
    a mirror's state kept in Delta under `state_path` (a URI Spark writes to)."""

    layout: ChangeLayout = "log"
    state_path: str | None = None

    @model_validator(mode="after")
    def _state_path(self):
        if self.layout == IMAGE and not self.state_path:
            raise ValueError("the image layout takes a state_path (where its states are kept)")
        if self.layout != IMAGE and self.state_path:
            raise ValueError("state_path is the image layout's")
        return self

    @property
    def mirrors(self) -> bool:
        return self.layout == IMAGE  # images are whole rows: of every column and every change

    def images_at(self, spark: Any, context: SinkContext) -> ImagesAt | None:
        from .images import ImagesAt

        return None if self.layout != IMAGE else ImagesAt(spark, self.state_path, context.cluster)


class Database(LaidOut):
    """A SQL database's sink, reached by a `dsn` (each subclass declares it), its password in the DSN or
    — for a subscription, which stores its settings — in `password_file`."""

    dsn: str
    password_file: Path | None = None

    @model_validator(mode="after")
    def _one_password(self):
        if self.password_file is not None and has_password(self.dsn):
            raise ValueError("the DSN holds a password and password_file is set: give one")
        return self

    def clear_secrets(self) -> list[str]:
        return super().clear_secrets() + (["dsn"] if has_password(self.dsn) else [])

    def password(self) -> str | None:
        """The password file's password, read now (a rotated one is taken); None without a file."""
        return None if self.password_file is None else secret(None, self.password_file, "password")


def is_secret(annotation: Any) -> bool:
    return annotation is SecretStr or SecretStr in get_args(annotation)


def has_password(dsn: str) -> bool:
    """Whether `dsn` (a URL, or libpq's `key=value` form) holds a password."""
    return urlsplit(dsn).password is not None or "password=" in dsn


def with_password(dsn: str, password: str) -> str:
    """URL `dsn` with `password` (quoted) for its user."""
    parts = urlsplit(dsn)
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=f"{user}:{quote(password, safe='')}@{host}").geturl()


def without_password(dsn: str) -> str:
    """`dsn` with its password, if it names one, as ***."""
    parts = urlsplit(dsn)
    if parts.password is None:
        return dsn
    return parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@", 1)).geturl()
