"""What every sink's settings model is: frozen, typed, checking a subscription's settings when it is
created (`Subscription.check`) and building the sink when a job or a runner opens it (`open`). Each
target's model is in its package (`postgres/settings.py` …); `registry` names them.

A subscription keeps its sink's settings as text (`sink_config`, a map of strings in Cassandra); the
model reads that text again at every open, so what `create` accepted is what runs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict

from connector.access import CassandraCluster, KafkaSecurity, RegistrySecurity
from spark.streams.storage import Replication

from .layouts import MIRROR, Layout

if TYPE_CHECKING:
    from . import Sink


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


class LaidOut(SinkSettings):
    """A sink of several layouts."""

    layout: Layout = "log"

    @property
    def mirrors(self) -> bool:
        return self.layout == MIRROR


def without_password(dsn: str) -> str:
    """`dsn` with its password, if it names one, as ***."""
    parts = urlsplit(dsn)
    if parts.password is None:
        return dsn
    return parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@", 1)).geturl()
