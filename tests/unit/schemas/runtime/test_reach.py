"""Refusals read from librdkafka's own errors (their text as librdkafka words it, copied from a secured
broker's answers), a running client's refusal shown for as long as it lasts, and an expired server
certificate met by every client ringtail makes (a local TLS endpoint presents it)."""
import socket
import ssl
import threading

import pytest
from confluent_kafka import KafkaError

from schemas.runtime.access import CassandraSecurity, KafkaSecurity, RegistrySecurity
from schemas.runtime.reach import AccessDenied, Refusal, RefusalWatch, check_cassandra, check_kafka, check_registry, \
    check_release, kafka_refusal
from deploy.local.secure import Secured

WRONG_PASSWORD = KafkaError(KafkaError._AUTHENTICATION, (
    "sasl_ssl://127.0.0.21:9092/bootstrap: SASL authentication error: Authentication failed during authentication "
    "due to invalid credentials with SASL mechanism SCRAM-SHA-512 (after 314ms in state AUTH_REQ)"))
UNTRUSTED = KafkaError(KafkaError._SSL, (
    "sasl_ssl://127.0.0.21:9092/1: SSL handshake failed: error:0A000086:SSL routines::certificate verify failed: "
    "broker certificate could not be verified (after 12ms in state SSL_HANDSHAKE, 4 identical error(s) suppressed)"))
CLIENT_CERTIFICATE_REFUSED = KafkaError(KafkaError._TRANSPORT, (
    "sasl_ssl://127.0.0.31:9092/bootstrap: Receive failed: error:0A000412:SSL routines::ssl/tls alert bad "
    "certificate: SSL alert number 42 (after 1ms in state APIVERSION_QUERY)"))
DOWN = KafkaError(KafkaError._TRANSPORT, "sasl_ssl://127.0.0.21:9999/bootstrap: Connect to ipv4#127.0.0.21:9999 "
                                         "failed: Connection refused (after 0ms in state CONNECT)")


def test_librdkafka_errors_name_the_broker_and_the_cause_of_a_refusal():
    refused = kafka_refusal(WRONG_PASSWORD)
    assert (refused.service, refused.address, refused.refusal) == ("Kafka", "127.0.0.21:9092", Refusal.CREDENTIALS)
    assert str(refused) == ("Kafka at 127.0.0.21:9092: authentication failed: SASL authentication error: "
                            "Authentication failed during authentication due to invalid credentials with SASL "
                            "mechanism SCRAM-SHA-512")
    untrusted = kafka_refusal(UNTRUSTED)
    assert untrusted.refusal is Refusal.CERTIFICATE and untrusted.address == "127.0.0.21:9092"
    assert str(untrusted).endswith("broker certificate could not be verified")
    assert kafka_refusal(DOWN) is None  # a broker down is retried, not refused
    # TLS 1.3: the broker's alert refusing the client's certificate comes after the handshake.
    no_client_certificate = kafka_refusal(CLIENT_CERTIFICATE_REFUSED)
    assert no_client_certificate.refusal is Refusal.TLS and no_client_certificate.address == "127.0.0.31:9092"
    assert str(no_client_certificate).endswith("ssl/tls alert bad certificate: SSL alert number 42")


def test_a_refusal_of_a_running_client_shows_while_it_lasts():
    now = [100.0]
    watch = RefusalWatch(keep=60, clock=lambda: now[0])
    watch.error(DOWN)
    assert watch.current() is None
    watch.error(WRONG_PASSWORD)
    assert watch.current().startswith("Kafka at 127.0.0.21:9092: authentication failed")
    assert watch.current().endswith("restart it with valid credentials)")
    now[0] += 45
    watch.error(WRONG_PASSWORD)  # librdkafka reconnects, and is refused again
    now[0] += 45
    assert watch.current() is not None
    now[0] += 15  # no refusal for 60 s: the credentials work again
    assert watch.current() is None


@pytest.fixture(scope="module")
def expired_endpoint(tmp_path_factory):
    """A TLS endpoint on 127.0.0.1 presenting a certificate, signed by an authority the clients trust,
    that expired a day ago; it speaks no protocol after the handshake (none gets that far)."""
    authority = Secured(tmp_path_factory.mktemp("expired"), ["127.0.0.1"])
    authority.make()
    key, cert = authority.sign("expired", "/CN=expired", "subjectAltName=IP:127.0.0.1\n", days=-1)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            try:
                with context.wrap_socket(connection, server_side=True):
                    pass
            except (ssl.SSLError, OSError):
                pass  # the client refused the certificate

    threading.Thread(target=serve, daemon=True).start()
    yield listener.getsockname()[1], authority.ca
    listener.close()


def test_an_expired_server_certificate_is_refused_by_every_client_naming_the_address(expired_endpoint):
    port, ca = expired_endpoint
    with pytest.raises(AccessDenied) as registry:
        check_registry(f"https://127.0.0.1:{port}", RegistrySecurity(tls_ca=ca))
    assert str(registry.value) == (f"the schema registry at https://127.0.0.1:{port}: TLS certificate not trusted: "
                                   "certificate has expired")
    with pytest.raises(AccessDenied) as cassandra:
        check_cassandra(["127.0.0.1"], port, CassandraSecurity(tls=True, tls_ca=ca))
    assert str(cassandra.value) == (f"Cassandra at 127.0.0.1:{port}: TLS certificate not trusted:"
                                    " certificate has expired")
    with pytest.raises(AccessDenied) as kafka:  # librdkafka does not say why it could not verify
        check_kafka(f"127.0.0.1:{port}", KafkaSecurity(protocol="SSL", tls_ca=ca), timeout=5)
    assert kafka.value.refusal is Refusal.CERTIFICATE and kafka.value.address == f"127.0.0.1:{port}"


def test_a_cassandra_of_a_series_ringtail_does_not_read_is_refused_naming_its_release():
    for release in ("4.0.19", "4.1.10", "5.0.8"):
        check_release("10.0.0.1:9042", release)
    for release in ("3.11.17", "5.1.0", "4.10.1"):
        with pytest.raises(AccessDenied) as refused:
            check_release("10.0.0.1:9042", release)
        assert str(refused.value) == (f"Cassandra at 10.0.0.1:9042: a version ringtail does not read: it runs "
                                      f"{release}; ringtail reads Cassandra 4.0, 4.1, 5.0")
