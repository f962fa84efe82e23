"""The Delta sink's settings."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..settings import LaidOut, SinkContext

if TYPE_CHECKING:
    from ..contract import Sink


class DeltaSettings(LaidOut, kind="delta"):
    path: str

    def open(self, spark: Any, context: SinkContext) -> Sink:
        from .sink import DeltaSink

        return DeltaSink(spark, self.path, context.app_id, layout=self.layout, cluster=context.cluster)

    def target(self) -> str:
        return f"delta:{self.path}"
