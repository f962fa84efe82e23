"""The Kafka sink's settings."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import PositiveInt

from ..layouts import KafkaFormat
from ..settings import Flag, HttpUrl, SinkContext, SinkSettings

if TYPE_CHECKING:
    from ..contract import Sink


class KafkaSettings(SinkSettings, kind="kafka"):
    topic: str
    # Unset: the cluster ringtail reads from. The process's Kafka security settings apply either way.
    bootstrap_servers: str | None = None
    partitions: PositiveInt = 3
    replication_factor: PositiveInt = 1
    format: KafkaFormat = "json"
    registry_url: HttpUrl | None = None  # unset: ringtail's registry
    transactions: Flag = True

    def open(self, spark: Any, context: SinkContext) -> Sink:
        from .sink import KafkaSink

        return KafkaSink(self.bootstrap_servers or context.kafka, self.topic, app_id=context.app_id,
                         partitions=self.partitions, replication_factor=self.replication_factor, format=self.format,
                         registry_url=self.registry_url or context.registry, transactions=self.transactions,
                         security=context.kafka_security, registry_security=context.registry_security)

    def target(self) -> str:
        return f"kafka:{self.bootstrap_servers or ''}:{self.topic}"
