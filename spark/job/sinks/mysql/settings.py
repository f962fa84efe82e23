"""The MySQL (and MariaDB) sink's settings."""
from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field

from ..layouts import MIRROR
from ..settings import LaidOut, SinkContext, without_password

if TYPE_CHECKING:
    from .. import Sink


def _mysql_dsn(text: str) -> str:
    parts = urlsplit(text)
    if parts.scheme not in ("mysql", "mariadb") or not parts.hostname or not parts.path.strip("/"):
        raise ValueError("mysql://user[:password]@host[:port]/database")
    return text


class MySqlSettings(LaidOut, kind="mysql"):
    dsn: Annotated[str, AfterValidator(_mysql_dsn), Field(repr=False)]

    def open(self, spark: Any, context: SinkContext) -> Sink:
        if self.layout == MIRROR:
            from .mirror import MySqlMirrorSink

            return MySqlMirrorSink(self.dsn, app_id=context.app_id, cluster=context.cluster)
        if self.layout == "typed":
            from .typed import MySqlTypedSink

            return MySqlTypedSink(self.dsn, app_id=context.app_id, cluster=context.cluster)
        from .log import MySqlSink

        return MySqlSink(self.dsn, app_id=context.app_id)

    def target(self) -> str:
        return f"mysql:{without_password(self.dsn)}"
