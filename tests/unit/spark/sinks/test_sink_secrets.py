"""Sinks' secrets and TLS: passwords and tokens taken from files, TLS to MySQL by the DSN's parameters,
and the HTTP sink trusting the authority it is given — against a real local HTTPS server."""
from __future__ import annotations

import ssl
from urllib.parse import unquote, urlsplit

import pytest
from psycopg.conninfo import conninfo_to_dict
from pydantic import ValidationError

from deploy.local.receiver import Receiver
from deploy.local.secure import Secured
from schemas.runtime.access import CassandraCluster
from spark.sinks.http.settings import HttpSettings
from spark.sinks.http.sink import HttpSinkError
from spark.sinks.mysql.connection import tls_options
from spark.sinks.mysql.settings import MySqlSettings
from spark.sinks.postgres.settings import PostgresSettings
from spark.sinks.settings import SinkContext, with_password

CONTEXT = SinkContext(app_id="test", cluster=CassandraCluster(("127.0.0.1",)), keyspace="ringtail_cdc",
                      kafka="127.0.0.1:9092", registry="http://127.0.0.1:8081")


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    """An authority and a server certificate for 127.0.0.1, as the secured stack makes them."""
    secured = Secured(tmp_path_factory.mktemp("tls"), ["127.0.0.1"])
    secured.make()
    return secured


@pytest.fixture
def https_receiver(certificates):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificates.dir / "server.pem", certificates.dir / "server.key")
    running = Receiver(tls=context)
    yield running
    running.close()


def test_the_http_sink_trusts_the_authority_it_is_given_and_sends_the_token_of_its_file(
        https_receiver, certificates, tmp_path):
    (tmp_path / "token").write_text("t0ken\n")
    sink = HttpSettings(url=https_receiver.url, ca=certificates.ca, token_file=tmp_path / "token",
                        attempts=1).open(None, CONTEXT)
    assert sink.poster.post_all("log-rows", [{"n": 1}], batch="0") == 1
    assert https_receiver.requests[0]["headers"]["authorization"] == "Bearer t0ken"


def test_the_http_sink_refuses_a_receiver_whose_certificate_it_cannot_verify(https_receiver):
    sink = HttpSettings(url=https_receiver.url, attempts=1).open(None, CONTEXT)  # the system's authorities
    with pytest.raises(HttpSinkError, match="CERTIFICATE_VERIFY_FAILED"):
        sink.poster.post_all("log-rows", [{"n": 1}], batch="0")
    assert https_receiver.requests == []


@pytest.mark.parametrize("given, says", [
    ({"token": "x", "token_file": "/t"}, "token and token_file are both set"),
    ({"ca": "/ca.pem", "verify": "false"}, "ca is set but verify is false"),
])
def test_http_settings_that_contradict_themselves_are_refused(given, says):
    with pytest.raises(ValidationError, match=says):
        HttpSettings(url="https://example.org/in", **given)


def test_a_postgres_password_file_joins_the_dsn_when_the_sink_opens(tmp_path):
    (tmp_path / "pg").write_text("p@ss word\n")
    settings = PostgresSettings(dsn="postgresql://app@db:5432/shop?sslmode=verify-full&sslrootcert=/ca.pem",
                                password_file=tmp_path / "pg")
    assert settings.clear_secrets() == [] and "p@ss" not in settings.target()
    assert conninfo_to_dict(settings.connection()) == {
        "user": "app", "host": "db", "port": "5432", "dbname": "shop", "sslmode": "verify-full",
        "sslrootcert": "/ca.pem", "password": "p@ss word"}
    with pytest.raises(ValidationError, match="the DSN holds a password and password_file is set"):
        PostgresSettings(dsn="host=db password=pw", password_file=tmp_path / "pg")
    assert PostgresSettings(dsn="host=db user=app password=pw").clear_secrets() == ["dsn"]


def test_a_mysql_password_file_and_tls_by_the_dsn(tmp_path):
    dsn = with_password("mysql://app@db:3307/shop?ssl_ca=/ca.pem", "p@ss/w:rd")
    parts = urlsplit(dsn)
    assert unquote(parts.password) == "p@ss/w:rd" and (parts.hostname, parts.port) == ("db", 3307)
    assert tls_options(parts.query) == {"ssl_ca": "/ca.pem", "ssl_verify_cert": True, "ssl_verify_identity": True}
    assert tls_options("ssl_ca=/ca.pem&ssl_verify_identity=false")["ssl_verify_identity"] is False
    assert tls_options("") == {}
    with pytest.raises(ValidationError, match="DSN parameter.s. sslmode: known are ssl_ca"):
        MySqlSettings(dsn="mysql://app@db/shop?sslmode=required")
    assert MySqlSettings(dsn="mysql://app:pw@db/shop").clear_secrets() == ["dsn"]
    (tmp_path / "my").write_text("from-file")
    sink = MySqlSettings(dsn="mysql://app@db/shop", password_file=tmp_path / "my").open(None, CONTEXT)
    assert unquote(urlsplit(sink.dsn).password) == "from-file"
