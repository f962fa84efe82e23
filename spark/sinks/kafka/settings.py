"""The Kafka sink's settings."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import PositiveInt, model_validator

from ..layouts import IMAGE, KafkaFormat, KafkaLayout
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
    # `image`: each change as whole rows before and after it, on a topic per table `<topic>.<keyspace>.<table>`,
    # made from a mirror's state kept in Delta under `state_path` (a URI Spark writes to).
    layout: KafkaLayout = "log"
    state_path: str | None = None

    @model_validator(mode="after")
    def _images(self):
        if self.layout == IMAGE and (self.format != "avro" or not self.state_path):
            raise ValueError("the image layout takes format avro and a state_path (where its states are kept)")
        if self.layout != IMAGE and self.state_path:
            raise ValueError("state_path is the image layout's")
        return self

    @property
    def mirrors(self) -> bool:
        return self.layout == IMAGE  # images are whole rows: of every column and every change

    def open(self, spark: Any, context: SinkContext) -> Sink:
        from .images import ImagesAt
        from .sink import KafkaSink

        images = None if self.layout != IMAGE else ImagesAt(spark, self.state_path, context.cluster)
        return KafkaSink(self.bootstrap_servers or context.kafka, self.topic, app_id=context.app_id,
                         partitions=self.partitions, replication_factor=self.replication_factor, format=self.format,
                         registry_url=self.registry_url or context.registry, transactions=self.transactions,
                         security=context.kafka_security, registry_security=context.registry_security,
                         images=images)

    def target(self) -> str:
        return f"kafka:{self.bootstrap_servers or ''}:{self.topic}"
