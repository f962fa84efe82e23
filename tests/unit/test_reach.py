"""Refusals read from librdkafka's own errors (their text as librdkafka words it, copied from a secured
broker's answers), and a running client's refusal shown for as long as it lasts."""
from confluent_kafka import KafkaError

from connector.reach import Refusal, RefusalWatch, kafka_refusal

WRONG_PASSWORD = KafkaError(KafkaError._AUTHENTICATION, (
    "sasl_ssl://127.0.0.21:9092/bootstrap: SASL authentication error: Authentication failed during authentication "
    "due to invalid credentials with SASL mechanism SCRAM-SHA-512 (after 314ms in state AUTH_REQ)"))
UNTRUSTED = KafkaError(KafkaError._SSL, (
    "sasl_ssl://127.0.0.21:9092/1: SSL handshake failed: error:0A000086:SSL routines::certificate verify failed: "
    "broker certificate could not be verified (after 12ms in state SSL_HANDSHAKE, 4 identical error(s) suppressed)"))
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
