"""The Delta sink's settings."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from ..settings import LaidOut, SinkContext

if TYPE_CHECKING:
    from ..contract import Sink

# Tables whose typed logs or mirrors a batch writes at once (`DeltaSink._each_table`).
CONCURRENT_TABLES = 4


class DeltaSettings(LaidOut, kind="delta"):
    path: str
    concurrent_tables: int = Field(CONCURRENT_TABLES, ge=1)

    def open(self, spark: Any, context: SinkContext) -> Sink:
        from .sink import DeltaSink

        return DeltaSink(spark, self.path, context.app_id, layout=self.layout, cluster=context.cluster,
                         concurrent_tables=self.concurrent_tables)

    def target(self) -> str:
        return f"delta:{self.path}"
