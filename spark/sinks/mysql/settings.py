"""The MySQL (and MariaDB) sink's settings."""
from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import parse_qsl, urlsplit

from pydantic import AfterValidator, Field

from ..layouts import MIRROR
from ..settings import Database, SinkContext, with_password, without_password

if TYPE_CHECKING:
    from .. import Sink


_TLS_PARAMETERS = ("ssl_ca", "ssl_cert", "ssl_key", "ssl_verify_identity")


def tls_options(query: str) -> dict:
    """PyMySQL's TLS options from a DSN's parameters: `ssl_ca` (the server's authority: TLS on, the
    certificate verified, and its name too unless `ssl_verify_identity=false`), `ssl_cert` and `ssl_key`
    (a client certificate)."""
    given = dict(parse_qsl(query, keep_blank_values=True))
    unknown = set(given) - set(_TLS_PARAMETERS)
    if unknown:
        raise ValueError(f"DSN parameter(s) {', '.join(sorted(unknown))}: known are {', '.join(_TLS_PARAMETERS)}")
    options = {name: given[name] for name in ("ssl_ca", "ssl_cert", "ssl_key") if name in given}
    if "ssl_ca" in options:
        verify = given.get("ssl_verify_identity", "true").lower()
        if verify not in ("true", "false"):
            raise ValueError("DSN parameter ssl_verify_identity: true or false")
        options |= {"ssl_verify_cert": True, "ssl_verify_identity": verify == "true"}
    return options


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
