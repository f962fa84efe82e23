"""The PostgreSQL sink's settings."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from ..layouts import MIRROR
from ..settings import Database, SinkContext, without_password

if TYPE_CHECKING:
    from ..contract import Sink


class PostgresSettings(Database, kind="postgres"):
    # libpq's URL or key=value form; TLS by its own parameters (sslmode=verify-full, sslrootcert, sslcert,
    # sslkey).
    dsn: str = Field(repr=False)
    schema_: str = Field("ringtail", alias="schema")  # (`schema` is taken by BaseModel)

    def connection(self) -> str:
        """The DSN to connect with, the password file's password added."""
        password = self.password()
        if password is None:
            return self.dsn
        from psycopg.conninfo import make_conninfo

        return make_conninfo(self.dsn, password=password)

    def open(self, spark: Any, context: SinkContext) -> Sink:
        dsn = self.connection()
        if self.layout == MIRROR:
            from .mirror import PostgresMirrorSink

            return PostgresMirrorSink(dsn, schema=self.schema_, app_id=context.app_id, cluster=context.cluster)
        if self.layout == "typed":
            from .typed import PostgresTypedSink

            return PostgresTypedSink(dsn, schema=self.schema_, app_id=context.app_id, cluster=context.cluster)
        from .log import PostgresSink

        return PostgresSink(dsn, schema=self.schema_, app_id=context.app_id)

    def target(self) -> str:
        return f"postgres:{without_password(self.dsn)}:{self.schema_}"
