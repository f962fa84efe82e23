"""The Kafka sink's settings."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import PositiveInt, model_validator

from ..layouts import IMAGE, KafkaFormat
from ..settings import Flag, HttpUrl, Imaging, SinkContext

if TYPE_CHECKING:
    from ..contract import Sink


class KafkaSettings(Imaging, kind="kafka"):
    topic: str
    # Unset: the cluster ringtail reads from. The process's Kafka security settings apply either way.
    bootstrap_servers: str | None = None
    partitions: PositiveInt = 3
    replication_factor: PositiveInt = 1
    format: KafkaFormat = "json"
    registry_url: HttpUrl | None = None  # unset: ringtail's registry
    transactions: Flag = True
    # The image layout (`Imaging`) puts a table's images on a topic of its own, `<topic>.<keyspace>.<table>`.

    @model_validator(mode="after")
    def _avro_images(self):
        if self.layout == IMAGE and self.format != "avro":
            raise ValueError("the image layout takes format avro")
        return self

    def open(self, spark: Any, context: SinkContext) -> Sink:
        from .sink import KafkaSink

        return KafkaSink(self.bootstrap_servers or context.kafka, self.topic, app_id=context.app_id,
                         partitions=self.partitions, replication_factor=self.replication_factor, format=self.format,
                         registry_url=self.registry_url or context.registry, transactions=self.transactions,
                         security=context.kafka_security, registry_security=context.registry_security,
                         images=self.images_at(spark, context))

    def target(self) -> str:
        return f"kafka:{self.bootstrap_servers or ''}:{self.topic}"
