"""Security settings: where secrets come from, what each client is given, and that no secret is shown."""
import ssl
import subprocess

import pytest
from cassandra.auth import PlainTextAuthProvider
from pydantic import ValidationError

from connector.config import ConnectorSettings
from schemas.runtime.access import AccessError, CassandraSecurity, KafkaSecurity, REGISTRY_TIMEOUT, RegistrySecurity
from spark.job.config import JobSettings


@pytest.fixture(scope="module")
def pem(tmp_path_factory):
    """A self-signed certificate and its key, made by openssl."""
    where = tmp_path_factory.mktemp("pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=ringtail-test", "-keyout", str(where / "key.pem"), "-out", str(where / "cert.pem")],
                   check=True, capture_output=True)
    return where / "cert.pem", where / "key.pem"


def test_a_nested_variable_sets_a_secret_that_printing_the_settings_hides(monkeypatch, tmp_path):
    monkeypatch.setenv("RINGTAIL_CONNECTOR_CASSANDRA_SECURITY__USERNAME", "cdc")
    monkeypatch.setenv("RINGTAIL_CONNECTOR_CASSANDRA_SECURITY__PASSWORD", "s3cret-from-env")
    monkeypatch.setenv("RINGTAIL_JOB_KAFKA_SECURITY__SASL_PASSWORD", "kafka-s3cret")
    connector = ConnectorSettings.load(None, cdc_raw=tmp_path)
    assert connector.cassandra_security.username == "cdc"
    assert connector.cassandra_security.password.get_secret_value() == "s3cret-from-env"
    assert "s3cret" not in repr(connector) and "s3cret" not in connector.model_dump_json()
    job = JobSettings.load(None, kafka_security={"protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512",
                                                 "sasl_username": "job"})
    assert job.kafka_security.sasl_password.get_secret_value() == "kafka-s3cret"
    assert "kafka-s3cret" not in str(job)


def test_settings_file_nests_security(tmp_path):
    (tmp_path / "password").write_text("from-a-file\n")
    config = tmp_path / "job.yaml"
    config.write_text(f"cassandra_security:\n  username: cdc\n  password_file: {tmp_path / 'password'}\n"
                      "registry_security:\n  username: reader\n  password: registry-pass\n")
    job = JobSettings.load(config)
    auth = job.cassandra_security.driver_options()["auth_provider"]
    assert isinstance(auth, PlainTextAuthProvider)
    assert (auth.username, auth.password) == ("cdc", "from-a-file")  # the file's newline is not the password's
    assert job.registry_security.client("https://registry:8081") == {
        "url": "https://registry:8081", "basic.auth.user.info": "reader:registry-pass", "timeout": REGISTRY_TIMEOUT}


def test_a_secret_file_is_read_at_each_use_so_a_rotated_one_is_taken(tmp_path):
    secret = tmp_path / "password"
    secret.write_text("first")
    security = CassandraSecurity(username="cdc", password_file=secret)
    assert security.driver_options()["auth_provider"].password == "first"
    secret.write_text("second")
    assert security.driver_options()["auth_provider"].password == "second"


@pytest.mark.parametrize("given, says", [
    ({"password": "x"}, "a password is set without a username"),
    ({"username": "u", "password": "x", "password_file": "/p"}, "password and password_file are both set"),
    ({"tls": True, "tls_cert": "/c.pem"}, "tls_cert and tls_key go together"),
])
def test_cassandra_settings_that_cannot_work_are_refused(given, says):
    with pytest.raises(ValidationError, match=says):
        CassandraSecurity(**given)


@pytest.mark.parametrize("given, says", [
    ({"protocol": "SASL_SSL"}, "needs sasl_mechanism and sasl_username"),
    ({"protocol": "SSL", "sasl_mechanism": "PLAIN"}, "has no SASL"),
    ({"protocol": "SASL_SSL", "sasl_mechanism": "GSSAPI", "sasl_username": "u"}, "sasl_mechanism"),
    ({"protocol": "TLS"}, "protocol"),
])
def test_kafka_settings_that_cannot_work_are_refused(given, says):
    with pytest.raises(ValidationError, match=says):
        KafkaSecurity(**given)


def test_an_unreadable_secret_file_is_named_and_no_secret_is(tmp_path):
    security = CassandraSecurity(username="cdc", password_file=tmp_path / "missing")
    with pytest.raises(AccessError, match=f"cannot read password_file {tmp_path / 'missing'}"):
        security.driver_options()


def test_cassandra_tls_verifies_the_node_and_its_name_unless_told_not_to(pem):
    cert, key = pem
    context = CassandraSecurity(tls=True, tls_ca=cert).driver_options()["ssl_context"]
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert [ca["subject"] for ca in context.get_ca_certs()] == [((("commonName", "ringtail-test"),),)]  # it alone
    unnamed = CassandraSecurity(tls=True, tls_ca=cert, tls_cert=cert, tls_key=key, tls_verify_hostname=False)
    context = unnamed.driver_options()["ssl_context"]
    assert context.verify_mode == ssl.CERT_REQUIRED and not context.check_hostname
    assert "ssl_context" not in CassandraSecurity().driver_options()


def test_a_file_that_is_no_certificate_is_refused_with_its_name(tmp_path):
    bogus = tmp_path / "ca.pem"
    bogus.write_text("not a certificate")
    with pytest.raises(AccessError, match="cannot load the TLS files"):
        CassandraSecurity(tls=True, tls_ca=bogus).driver_options()
    with pytest.raises(AccessError, match=f"tls_ca {tmp_path / 'nowhere.pem'} is not a readable file"):
        CassandraSecurity(tls=True, tls_ca=tmp_path / "nowhere.pem").driver_options()


def test_kafka_sasl_over_tls_for_librdkafka_and_for_the_java_client(pem):
    cert, key = pem
    security = KafkaSecurity(protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512", sasl_username="cdc",
                             sasl_password='pa"ss\\word', tls_ca=cert, tls_cert=cert, tls_key=key,
                             properties={"socket.keepalive.enable": True, "security.protocol": "PLAINTEXT"},
                             java_properties={"request.timeout.ms": 20000})
    assert security.librdkafka("k1:9093,k2:9093") == {
        "socket.keepalive.enable": True,
        "bootstrap.servers": "k1:9093,k2:9093", "security.protocol": "SASL_SSL",  # the setting wins
        "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "cdc", "sasl.password": 'pa"ss\\word',
        "ssl.endpoint.identification.algorithm": "https", "ssl.ca.location": str(cert),
        "ssl.certificate.location": str(cert), "ssl.key.location": str(key)}
    java = security.java("k1:9093")
    assert java["sasl.jaas.config"] == ('org.apache.kafka.common.security.scram.ScramLoginModule required '
                                        'username="cdc" password="pa\\"ss\\\\word";')
    assert (java["ssl.truststore.type"], java["ssl.truststore.location"]) == ("PEM", str(cert))
    assert java["ssl.keystore.key"] == key.read_text() and java["ssl.keystore.certificate.chain"] == cert.read_text()
    assert java["request.timeout.ms"] == "20000" and java["security.protocol"] == "SASL_SSL"


def test_plain_kafka_is_just_the_address():
    assert KafkaSecurity().librdkafka("k:9092") == {"bootstrap.servers": "k:9092", "security.protocol": "PLAINTEXT"}
    assert KafkaSecurity().java("k:9092") == {"bootstrap.servers": "k:9092", "security.protocol": "PLAINTEXT"}
    sasl = KafkaSecurity(protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", sasl_username="u", sasl_password="p")
    assert "ssl.endpoint.identification.algorithm" not in sasl.librdkafka("k:9092")
    assert sasl.java("k:9092")["sasl.jaas.config"].startswith("org.apache.kafka.common.security.plain.PlainLoginModule")


def test_revealed_settings_read_back_to_the_same_model(tmp_path):
    security = CassandraSecurity(username="cdc", password="pw", tls=True, tls_ca=tmp_path / "ca.pem")
    revealed = security.revealed()
    assert revealed["password"] == "pw" and revealed["tls_ca"] == str(tmp_path / "ca.pem")
    assert CassandraSecurity.model_validate(revealed) == security
    assert RegistrySecurity().revealed() == {"tls_verify_hostname": True}
    with pytest.raises(ValidationError, match="always verifies the registry's name"):
        RegistrySecurity(tls_verify_hostname=False)
