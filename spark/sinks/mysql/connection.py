"""A connection to MySQL or MariaDB from a sink's DSN, TLS by its parameters; what the settings check
and every layout connects with."""
from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from ..settings import without_password

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


def connect_dsn(dsn: str, local_infile: bool = False) -> Any:
    """A PyMySQL connection from `mysql://user[:password]@host[:port]/database[?ssl_ca=…]` (`tls_options`),
    in UTC, autocommit off; `local_infile`: it may send files for LOAD DATA LOCAL (the sink's own only: the
    server names the file, so only a trusted server is given such a connection)."""
    import pymysql

    parts = urlsplit(dsn)
    if parts.scheme not in ("mysql", "mariadb") or not parts.path.strip("/"):
        raise ValueError(f"DSN {without_password(dsn)!r}: give it as mysql://user[:password]@host[:port]/database")
    return pymysql.connect(host=parts.hostname or "127.0.0.1", port=parts.port or 3306,
                           user=unquote(parts.username or ""), password=unquote(parts.password or ""),
                           database=parts.path.strip("/"), charset="utf8mb4", autocommit=False,
                           init_command="SET time_zone = '+00:00'", connect_timeout=10, local_infile=local_infile,
                           **tls_options(parts.query))
