"""The Delta sink's settings."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from ..settings import LaidOut, SinkContext

if TYPE_CHECKING:
    from ..contract import Sink


class DeltaSettings(LaidOut, kind="delta"):
    path: str
    # Tables whose typed logs or mirrors a batch writes at once; unset: the sink's default.
    concurrent_tables: int | None = Field(None, ge=1)

    def open(self, spark: Any, context: SinkContext) -> Sink:
        from .sink import DeltaSink

        given = {} if self.concurrent_tables is None else {"concurrent_tables": self.concurrent_tables}
        return DeltaSink(spark, self.path, context.app_id, layout=self.layout, cluster=context.cluster, **given)

    def target(self) -> str:
        return f"delta:{self.path}"
