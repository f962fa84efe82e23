"""How ringtail reaches a secured Cassandra, Kafka and schema registry: one frozen model per service, shared
by every process (connector, job, subscription runners, control CLIs), each turned into its client's own
options here and nowhere else: the Python driver's auth provider and SSL context, librdkafka's properties,
the Java Kafka client's properties (Spark's Kafka source and sink), the registry client's configuration.

A secret (password, key password) is given as the setting itself, from the settings file or an environment
variable (`RINGTAIL_CONNECTOR_CASSANDRA_SECURITY__PASSWORD`), or as a file holding it (`password_file`,
as Kubernetes mounts secrets), read each time a client is made, so a restart picks up a rotated one.
Secrets are `SecretStr`: a model printed, logged or dumped shows `**********`.
"""
from __future__ import annotations

import ssl
from pathlib import Path
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, SecretStr, model_validator


class AccessError(ValueError):
    """A security setting that cannot be used (a secret file that cannot be read, a certificate file
    missing); the message names the setting and the file, never a secret."""


def secret(value: SecretStr | None, file: Path | None, name: str) -> str | None:
    """The secret `name`, from its setting or from its file (trailing newline dropped); None when unset."""
    if value is not None:
        return value.get_secret_value()
    if file is None:
        return None
    try:
        return file.read_text().rstrip("\r\n")
    except OSError as exc:
        raise AccessError(f"cannot read {name}_file {file}: {exc.strerror}") from None


def _readable(path: Path | None, name: str) -> Path | None:
    if path is not None and not path.is_file():
        raise AccessError(f"{name} {path} is not a readable file")
    return path


class _Model(BaseModel):
    # A refused value is not echoed in the error: it may be a password.
    model_config = ConfigDict(frozen=True, extra="forbid", hide_input_in_errors=True)


class _Secrets(_Model):
    def revealed(self) -> dict:
        """The settings as JSON values with their secrets in clear, for handing them to a process that
        only takes text (a Spark data source's options, which Spark's redaction hides); `model_validate`
        reads them back."""
        return {name: value.get_secret_value() if isinstance(value, SecretStr) else
                str(value) if isinstance(value, Path) else value
                for name, value in self if value is not None}

    @model_validator(mode="after")
    def _one_source(self):
        for name in type(self).model_fields:
            if name.endswith("_file") and name[:-5] in type(self).model_fields:
                if getattr(self, name) is not None and getattr(self, name[:-5]) is not None:
                    raise ValueError(f"{name[:-5]} and {name} are both set: give one")
        return self


class _Tls(_Secrets):
    """A client's TLS files (PEM): the authority it trusts, and its own certificate for servers that
    require one."""

    # Unset: the system's trusted authorities; set, it alone is trusted.
    tls_ca: Path | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_key_password: SecretStr | None = None
    tls_key_password_file: Path | None = None
    # The server's certificate must name the address the client connects to.
    tls_verify_hostname: bool = True

    @model_validator(mode="after")
    def _key_pair(self):
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("tls_cert and tls_key go together")
        return self

    def _key_password(self) -> str | None:
        return secret(self.tls_key_password, self.tls_key_password_file, "tls_key_password")

    def _ssl_locations(self) -> dict:
        """The files as librdkafka and the registry client name them (`ssl.ca.location` …)."""
        config = {}
        if self.tls_ca:
            config["ssl.ca.location"] = str(_readable(self.tls_ca, "tls_ca"))
        if self.tls_cert:
            config |= {"ssl.certificate.location": str(_readable(self.tls_cert, "tls_cert")),
                       "ssl.key.location": str(_readable(self.tls_key, "tls_key"))}
            if (password := self._key_password()) is not None:
                config["ssl.key.password"] = password
        return config


class _Login(_Secrets):
    """A user name and its password."""

    username: str | None = None
    password: SecretStr | None = None
    password_file: Path | None = None

    @model_validator(mode="after")
    def _user(self):
        if (self.password is not None or self.password_file is not None) and not self.username:
            raise ValueError("a password is set without a username")
        return self

    def _password(self) -> str:
        return secret(self.password, self.password_file, "password") or ""


class CassandraSecurity(_Login, _Tls):
    """Password authentication and client TLS to Cassandra."""

    tls: bool = False

    def driver_options(self) -> dict:
        """`Cluster(...)` keyword arguments: `auth_provider` and `ssl_context`, as set."""
        options: dict = {}
        if self.username:
            from cassandra.auth import PlainTextAuthProvider

            options["auth_provider"] = PlainTextAuthProvider(self.username, self._password())
        if self.tls:
            options["ssl_context"] = tls_context(self.tls_ca, self.tls_cert, self.tls_key, self._key_password(),
                                                 self.tls_verify_hostname)
        return options


class CassandraCluster(NamedTuple):
    """Where a cluster is and how to reach it, as `schemas.runtime.session.connect(*cluster)` takes it."""

    hosts: tuple[str, ...]
    port: int = 9042
    security: CassandraSecurity | None = None


def tls_context(ca: Path | None, cert: Path | None, key: Path | None, key_password: str | None,
                verify_hostname: bool) -> ssl.SSLContext:
    """A client SSL context trusting `ca` alone (else the system's authorities), with a client certificate
    when given; the peer's certificate is always verified, its name unless `verify_hostname` is off."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # TLS 1.2 at least, certificates required
    try:
        if ca is not None:
            context.load_verify_locations(cafile=str(_readable(ca, "tls_ca")))
        else:
            context.load_default_certs(ssl.Purpose.SERVER_AUTH)
        if cert is not None:
            context.load_cert_chain(str(_readable(cert, "tls_cert")), str(_readable(key, "tls_key")),
                                    password=key_password)
    except ssl.SSLError as exc:
        raise AccessError(f"cannot load the TLS files ({ca or ''} {cert or ''}): {exc.reason or exc}") from None
    context.check_hostname = verify_hostname
    return context


KafkaProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]

_JAAS_MODULE = {"PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
                "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
                "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule"}


class KafkaSecurity(_Tls):
    """SASL and TLS to Kafka, for every client ringtail makes: the connector's producer and admin client,
    the offset look-ups, Spark's Kafka source, the Kafka sink."""

    protocol: KafkaProtocol = "PLAINTEXT"
    sasl_mechanism: SaslMechanism | None = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    sasl_password_file: Path | None = None
    # Any other client property, passed as it is: to librdkafka (Python clients) and to the Java client
    # (Spark's Kafka source and sink, without their `kafka.` prefix). Security settings above win.
    properties: dict[str, str | int | float | bool] = {}
    java_properties: dict[str, str | int | float | bool] = {}

    @model_validator(mode="after")
    def _consistent(self):
        sasl = self.protocol.startswith("SASL_")
        if sasl and (self.sasl_mechanism is None or not self.sasl_username):
            raise ValueError(f"security protocol {self.protocol} needs sasl_mechanism and sasl_username")
        if not sasl and self.sasl_mechanism is not None:
            raise ValueError(f"sasl_mechanism is set but the security protocol {self.protocol} has no SASL")
        return self

    @property
    def tls(self) -> bool:
        return self.protocol.endswith("SSL")

    def _password(self) -> str:
        return secret(self.sasl_password, self.sasl_password_file, "sasl_password") or ""

    def librdkafka(self, bootstrap_servers: str) -> dict:
        """A confluent-kafka client's configuration for `bootstrap_servers`."""
        config: dict = {**self.properties, "bootstrap.servers": bootstrap_servers, "security.protocol": self.protocol}
        if self.sasl_mechanism:
            config |= {"sasl.mechanism": self.sasl_mechanism, "sasl.username": self.sasl_username,
                       "sasl.password": self._password()}
        if self.tls:
            config["ssl.endpoint.identification.algorithm"] = "https" if self.tls_verify_hostname else "none"
            config |= self._ssl_locations()
        return config

    def java(self, bootstrap_servers: str) -> dict[str, str]:
        """The Java client's properties for `bootstrap_servers` (Spark takes them prefixed `kafka.`).
        Certificates are read as PEM (Kafka 2.7+), so no Java keystore is needed."""
        config = {**{k: str(v) for k, v in self.java_properties.items()},
                  "bootstrap.servers": bootstrap_servers, "security.protocol": self.protocol}
        if self.sasl_mechanism:
            config |= {"sasl.mechanism": self.sasl_mechanism,
                       "sasl.jaas.config": f'{_JAAS_MODULE[self.sasl_mechanism]} required '
                                           f'username="{_jaas(self.sasl_username)}" '
                                           f'password="{_jaas(self._password())}";'}
        if self.tls:
            config["ssl.endpoint.identification.algorithm"] = "https" if self.tls_verify_hostname else ""
            if self.tls_ca:
                config |= {"ssl.truststore.type": "PEM",
                           "ssl.truststore.location": str(_readable(self.tls_ca, "tls_ca"))}
            if self.tls_cert:
                config |= {"ssl.keystore.type": "PEM",
                           "ssl.keystore.certificate.chain": _readable(self.tls_cert, "tls_cert").read_text(),
                           "ssl.keystore.key": _readable(self.tls_key, "tls_key").read_text()}
                if (password := self._key_password()) is not None:
                    config["ssl.key.password"] = password
        return config


def _jaas(value: str | None) -> str:
    """`value` quoted for a JAAS option."""
    return (value or "").replace("\\", "\\\\").replace('"', '\\"')


# Seconds one registry request may take. Unset, the client (httpx) waits for an answer for ever: a registry
# that accepts a connection and never answers stopped the connector, or a micro-batch, without a word.
# A request that times out is tried again by the client, then raised (RegistryError) and retried by the caller.
REGISTRY_TIMEOUT = 10.0


class RegistrySecurity(_Login, _Tls):
    """Basic authentication and TLS to the schema registry (its client always verifies the registry's
    name: `tls_verify_hostname` cannot be turned off)."""

    @model_validator(mode="after")
    def _names_verified(self):
        if not self.tls_verify_hostname:
            raise ValueError("the registry client always verifies the registry's name")
        return self

    def client(self, url: str, timeout: float = REGISTRY_TIMEOUT) -> dict:
        """`SchemaRegistryClient`'s configuration for `url`, each request given at most `timeout` seconds."""
        config: dict = {"url": url, "timeout": timeout}
        if self.username:
            config["basic.auth.user.info"] = f"{self.username}:{self._password()}"
        return config | self._ssl_locations()
