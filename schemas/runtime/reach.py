"""Whether Cassandra, Kafka and the schema registry take ringtail's credentials and certificates, and whether
Cassandra is of a series ringtail reads, asked once at a process's start: a refusal is not worth retrying,
so it stops the process with one line naming the service, its address and the cause (`AccessDenied`),
where an unreachable service is retried as before. Nothing here prints a secret: the causes are the
servers' and the clients' own messages, which name users and certificates, never passwords.
"""
from __future__ import annotations

import enum
import logging
import re
import ssl
import time
from collections.abc import Callable, Sequence

from schemas.runtime.access import CassandraSecurity, KafkaSecurity, RegistrySecurity


class Refusal(enum.Enum):
    CREDENTIALS = "authentication failed"
    CERTIFICATE = "TLS certificate not trusted"
    TLS = "TLS handshake failed"
    CLOSED = "TLS connection closed in the handshake"
    VERSION = "a version ringtail does not read"


# The Cassandra series whose commit logs and schema tables ringtail reads (README, Cassandra versions).
CASSANDRA_SERIES = ("4.0", "4.1", "5.0")


class AccessDenied(RuntimeError):
    """A service refused ringtail's credentials or certificates, or is one ringtail cannot use."""

    def __init__(self, service: str, address: str, refusal: Refusal, detail: str) -> None:
        super().__init__(f"{service} at {address}: {refusal.value}: {detail}")
        self.service, self.address, self.refusal = service, address, refusal


def check_cassandra(hosts: Sequence[str], port: int, security: CassandraSecurity | None) -> None:
    """Connect as `security` says; AccessDenied when every host refused the credentials or the TLS
    handshake, or the node that answered runs a series not in `CASSANDRA_SERIES` (a host that does not
    answer is not a refusal: the caller retries)."""
    from cassandra.cluster import NoHostAvailable

    from schemas.runtime.session import STATEMENTS_ONLY, connect

    driver_log = logging.getLogger("cassandra")
    level = driver_log.level
    driver_log.setLevel(logging.CRITICAL)  # its tracebacks of the same refusal would bury the one line
    try:
        for attempt in range(3):
            try:
                cluster, session = connect(list(hosts), port, security, connect_timeout=10, **STATEMENTS_ONLY)
            except NoHostAvailable as exc:
                refused = _cassandra_refusal(exc.errors)
                if refused is None:
                    return
                # TLS 1.3: a server refusing the client's certificate may close before its alert (which
                # says why) is read; asking again often reads it.
                if refused.refusal is Refusal.CLOSED and attempt < 2:
                    continue
                raise refused from None
            try:
                answer = session.execute("SELECT release_version FROM system.local")
                release = answer.one().release_version
            finally:
                cluster.shutdown()
            check_release(str(answer.response_future.coordinator_host), release)
            return
    finally:
        driver_log.setLevel(level)


def check_release(address: str, release: str) -> None:
    """AccessDenied naming `release` when it is not of a series ringtail reads."""
    if not release.startswith(tuple(f"{series}." for series in CASSANDRA_SERIES)):
        raise AccessDenied("Cassandra", address, Refusal.VERSION, f"it runs {release}; ringtail reads Cassandra "
                           f"{', '.join(CASSANDRA_SERIES)}")


def _cassandra_refusal(errors: dict) -> AccessDenied | None:
    """The refusal among the driver's errors by host, or None when none is one."""
    from cassandra import AuthenticationFailed

    for address, error in errors.items():
        text = str(error)
        if isinstance(error, AuthenticationFailed):
            message = re.search(r'message="([^"]*)"', text)
            return AccessDenied("Cassandra", str(address), Refusal.CREDENTIALS, message.group(1) if message else text)
        # The driver reports a refused certificate as a socket error carrying OpenSSL's text.
        if "CERTIFICATE_VERIFY_FAILED" in text:
            return AccessDenied("Cassandra", str(address), Refusal.CERTIFICATE, _verify_failure(text))
        if isinstance(error, ssl.SSLEOFError):
            return AccessDenied("Cassandra", str(address), Refusal.CLOSED, "the server may have refused the client "
                                "certificate, or require one")
        if isinstance(error, ssl.SSLError) or "SSL" in text:
            return AccessDenied("Cassandra", str(address), Refusal.TLS, _ssl_reason(text))
    return None


def check_access(settings, kafka: bool = True) -> None:
    """`check_cassandra`, and with `kafka` `check_kafka` and `check_registry`, on the cluster, brokers and
    registry a process's settings name (the connector's and the Spark processes' have the same fields)."""
    check_cassandra(settings.cassandra_hosts, settings.cassandra_port, settings.cassandra_security)
    if kafka:
        check_kafka(settings.kafka_bootstrap_servers, settings.kafka_security)
        check_registry(settings.registry_url, settings.registry_security)


_KAFKA_REFUSALS = {"_AUTHENTICATION": Refusal.CREDENTIALS, "_SSL": Refusal.TLS}


def check_kafka(bootstrap_servers: str, security: KafkaSecurity, timeout: float = 15) -> None:
    """Ask the cluster for its metadata as `security` says; AccessDenied on a SASL or TLS refusal. A
    cluster that does not answer is not a refusal: the caller retries."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    refusals: list[AccessDenied] = []

    def on_error(error) -> None:
        if (refused := kafka_refusal(error)) is not None:
            refusals.append(refused)

    # librdkafka's own log lines of the refusal would bury the one line.
    admin = AdminClient({**security.librdkafka(bootstrap_servers), "log_level": 0, "error_cb": on_error})
    deadline = time.monotonic() + timeout
    while True:  # in short asks, so a refusal stops the wait at once
        try:
            admin.list_topics(timeout=max(0.1, min(1.0, deadline - time.monotonic())))
            return
        except KafkaException:
            admin.poll(0.1)  # serves the error callbacks
        if refusals:
            raise refusals[0]
        if time.monotonic() >= deadline:
            return


def kafka_refusal(error) -> AccessDenied | None:
    """A librdkafka client error (`error_cb`) as the refusal it is, or None for any other error."""
    refusal = _kafka_refusal_kind(error)
    if refusal is None:
        return None
    # librdkafka's text: "sasl_ssl://host:port/bootstrap: cause (after … in state …)".
    where, _, cause = error.str().partition(": ")
    address = re.sub(r"^\w+://|/\w+$", "", where)
    cause = re.sub(r" \(after \d+ms in state \w+.*\)$", "", cause)
    if refusal is Refusal.TLS and "certificate verify failed" in cause:
        refusal = Refusal.CERTIFICATE
    return AccessDenied("Kafka", address, refusal, cause)


def _kafka_refusal_kind(error) -> Refusal | None:
    refusal = _KAFKA_REFUSALS.get(error.name())
    # A broker refusing the client's certificate: TLS 1.3 completes the handshake first, and its alert
    # reaches librdkafka as a transport error ("ssl/tls alert bad certificate").
    if refusal is None and error.name() == "_TRANSPORT" and "SSL alert number" in error.str():
        refusal = Refusal.TLS
    return refusal


class RefusalWatch:
    """Refusals by Kafka of a running client (a password rotated, a certificate expired), for /ready: the
    newest is shown while librdkafka's reconnections keep meeting it, and for `keep` seconds after the
    last. The client keeps the credentials it was made with: a restart with the new secret resumes."""

    def __init__(self, keep: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.keep, self.clock = keep, clock
        self._last: tuple[float, str] | None = None

    def error(self, error) -> None:
        """librdkafka's `error_cb`."""
        if (refused := kafka_refusal(error)) is not None:
            self._last = (self.clock(), str(refused))

    def current(self) -> str | None:
        last = self._last
        if last is None or self.clock() - last[0] >= self.keep:
            return None
        return f"{last[1]} (the connector waits; restart it with valid credentials)"


def check_registry(url: str, security: RegistrySecurity) -> None:
    """List the registry's subjects as `security` says; AccessDenied on 401, 403 or a refused certificate
    (a registry that does not answer is not a refusal: the caller retries)."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    client = SchemaRegistryClient(security.client(url))  # a setting it refuses is an error of its own
    try:
        client.get_subjects()
    except SchemaRegistryError as exc:
        if exc.http_status_code in (401, 403):
            raise AccessDenied("the schema registry", url, Refusal.CREDENTIALS,
                               f"HTTP {exc.http_status_code}") from None
        # A TLS-terminating proxy in front of it (nginx) answers a missing or refused client certificate so.
        if exc.http_status_code == 400 and "certificate" in str(exc):
            title = re.search(r"<title>\s*([^<]*?)\s*</title>", str(exc))
            raise AccessDenied("the schema registry", url, Refusal.TLS,
                               title.group(1) if title else "HTTP 400") from None
    except Exception as exc:  # the HTTP client wraps TLS errors in its own
        if isinstance(exc, ssl.SSLError) or "CERTIFICATE_VERIFY_FAILED" in str(exc):
            raise AccessDenied("the schema registry", url, Refusal.CERTIFICATE, _verify_failure(str(exc))) from None


def _ssl_reason(text: str) -> str:
    """OpenSSL's reason in Python's text of an SSL error: "[SSL: SSLV3_ALERT_CERTIFICATE_EXPIRED] sslv3 alert
    certificate expired (_ssl.c:2580)" → "sslv3 alert certificate expired"."""
    return re.sub(r"^.*?\[SSL: \w+\] | \(_ssl\.c:\d+\)$", "", text).strip()


def _verify_failure(text: str) -> str:
    """OpenSSL's reason in Python's text of a failed verification ("unable to get local issuer certificate",
    "certificate has expired", "IP address mismatch")."""
    return text.split("certificate verify failed:", 1)[-1].split(" (_ssl")[0].strip()
