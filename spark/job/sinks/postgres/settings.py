"""The PostgreSQL sink's settings."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from ..layouts import MIRROR
from ..settings import LaidOut, SinkContext, without_password

if TYPE_CHECKING:
    from .. import Sink


class PostgresSettings(LaidOut, kind="postgres"):
    dsn: str = Field(repr=False)  # it may hold a password
    schema_: str = Field("ringtail", alias="schema")  # (`schema` is taken by BaseModel)

    def open(self, spark: Any, context: SinkContext) -> Sink:
        if self.layout == MIRROR:
            from .mirror import PostgresMirrorSink

            return PostgresMirrorSink(self.dsn, schema=self.schema_, app_id=context.app_id, cluster=context.cluster)
        if self.layout == "typed":
            from .typed import PostgresTypedSink

            return PostgresTypedSink(self.dsn, schema=self.schema_, app_id=context.app_id, cluster=context.cluster)
        from .log import PostgresSink

        return PostgresSink(self.dsn, schema=self.schema_, app_id=context.app_id)

    def target(self) -> str:
        return f"postgres:{without_password(self.dsn)}:{self.schema_}"
