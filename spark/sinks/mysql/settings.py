"""The MySQL (and MariaDB) sink's settings."""
from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field

from ..layouts import MIRROR
from ..settings import Database, SinkContext, with_password, without_password
from .connection import tls_options

if TYPE_CHECKING:
    from ..contract import Sink


def _mysql_dsn(text: str) -> str:
    parts = urlsplit(text)
    if parts.scheme not in ("mysql", "mariadb") or not parts.hostname or not parts.path.strip("/"):
        raise ValueError("mysql://user[:password]@host[:port]/database[?ssl_ca=…&ssl_verify_identity=true]")
    tls_options(parts.query)  # refused here, not at the first connection
    return text


class MySqlSettings(Database, kind="mysql"):
    # TLS by the DSN's parameters (`tls_options`).
    dsn: Annotated[str, AfterValidator(_mysql_dsn), Field(repr=False)]

    def open(self, spark: Any, context: SinkContext) -> Sink:
        password = self.password()
        dsn = self.dsn if password is None else with_password(self.dsn, password)
        if self.layout == MIRROR:
            from .mirror import MySqlMirrorSink

            return MySqlMirrorSink(dsn, app_id=context.app_id, cluster=context.cluster)
        if self.layout == "typed":
            from .typed import MySqlTypedSink

            return MySqlTypedSink(dsn, app_id=context.app_id, cluster=context.cluster)
        from .log import MySqlSink

        return MySqlSink(dsn, app_id=context.app_id)

    def target(self) -> str:
        return f"mysql:{without_password(self.dsn)}"
