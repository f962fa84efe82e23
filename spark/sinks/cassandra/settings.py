"""The Cassandra sink's settings."""
from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BeforeValidator, Field

from ..settings import SinkContext, SinkSettings

if TYPE_CHECKING:
    from ..contract import Sink


def _hosts(value: Any) -> Any:
    return tuple(h.strip() for h in value.split(",") if h.strip()) if isinstance(value, str) else value


class CassandraSettings(SinkSettings, kind="cassandra"):
    # Unset: the cluster ringtail reads its ring from, and its keyspace (`SinkContext`). The process's
    # Cassandra security settings apply either way.
    hosts: Annotated[tuple[str, ...], BeforeValidator(_hosts), Field(min_length=1)] | None = None
    port: Annotated[int, Field(gt=0, lt=65536)] | None = None
    keyspace: str | None = None

    def open(self, spark: Any, context: SinkContext) -> Sink:
        from .sink import CassandraSink

        return CassandraSink(hosts=list(self.hosts or context.cluster.hosts), port=self.port or context.cluster.port,
                             keyspace=self.keyspace or context.keyspace, replication=context.replication,
                             security=context.cluster.security, app_id=context.app_id)

    def target(self) -> str:
        return f"cassandra:{','.join(self.hosts or ())}:{self.port or ''}:{self.keyspace or ''}"
