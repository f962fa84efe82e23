"""ringtail on a secured stack: Cassandra with PasswordAuthenticator and client TLS, Kafka with SASL_SSL
(SCRAM-SHA-512), the registry behind HTTPS and basic authentication, PostgreSQL and MariaDB taking TLS
connections with a password only (`RINGTAIL_STACK_SECURE=1`). Every test of this module shares one such
stack, started by the stack's own script in a run directory of its own (and stopped at the end); Spark's
jars are the main stack's.

Each process is configured as a user would: a settings file naming the password files the stack made,
never a password. Every line a process prints is then searched for every password of the stack."""
from __future__ import annotations

import dataclasses
import json
import shutil
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import psycopg
import pytest

from deploy.local.endpoints import ROOT, Stack
from deploy.local.processes import ConnectorProcess
from deploy.local.receiver import Receiver
from deploy.local.secure import Secured as SecuredFiles
from schemas.runtime.access import CassandraSecurity, KafkaSecurity
from schemas.runtime.session import connect
from spark.job.config import JobSettings
from spark.sinks.mysql.connection import connect_dsn
from spark.sinks.registry import open_sink
from spark.sinks.settings import with_password
from tests.integration.delivered import kafka_messages, run_available
from tests.integration.mirrors import diff, layout_of, postgres_rows, source_rows
from tests.integration.serving import runner_process
from tests.integration.side_stacks import SECURED, forget, started
from tests.support import unused_port, wait_for

@dataclasses.dataclass(frozen=True)
class Secured:
    stack: Stack  # the main stack with the secured stack's Cassandra, Kafka and registry
    security: dict  # what clients set: stack.json's `security`
    secrets: dict[str, str]  # every password the stack made, by its file's name

    def settings(self) -> dict:
        """The security settings of every ringtail process, as a settings file holds them."""
        return {"cassandra_security": self.security["cassandra"], "kafka_security": self.security["kafka"],
                "registry_security": self.security["registry"]}

    def connector(self, tmp_path: Path, prefix: str, **settings) -> ConnectorProcess:
        """A connector with the stack's security settings, started from now."""
        connector = ConnectorProcess(self.stack, tmp_path / "connector", prefix, **self.settings(), **settings)
        connector.start_from_now()
        connector.start()
        return connector

    def assert_no_secret(self, text: str, where: str, **more: str) -> None:
        """No password of the stack, nor any of `more` (name=secret), in `text`."""
        shown = [name for name, secret in {**self.secrets, **more}.items() if secret in text]
        assert not shown, f"{where} shows the secret(s) of {', '.join(shown)}"


@pytest.fixture(scope="module")
def secured(stack):
    run_dir = SECURED.run_dir(stack.run_dir)
    try:
        started(SECURED, stack.run_dir)
        security = json.loads((run_dir / "stack.json").read_text())["security"]
        secrets = {p.stem: p.read_text() for p in (run_dir / "secure").glob("*.password")}
        yield Secured(SECURED.describe(stack), security, secrets)
    finally:  # its data is thrown away: no need to stop it gently
        SECURED.command(stack.run_dir, "stop", check=False)
        forget(SECURED)
        shutil.rmtree(run_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def secured_cql(secured):
    cluster, session = connect([secured.stack.cassandra_host], secured.stack.cassandra_port,
                               CassandraSecurity(**secured.security["cassandra"]))
    yield session
    cluster.shutdown()


@pytest.fixture
def secured_table(secured_cql):
    keyspace = f"s_{uuid.uuid4().hex[:10]}"
    secured_cql.execute(f"CREATE KEYSPACE {keyspace} WITH replication = {{'class': 'SimpleStrategy', "
                        "'replication_factor': 1}")
    secured_cql.execute(f"CREATE TABLE {keyspace}.kv (k int PRIMARY KEY, v text, n bigint) WITH cdc = true")
    yield keyspace
    secured_cql.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")


def write_config(path: Path, settings: dict) -> Path:
    """A settings file (YAML; nested settings as JSON, which YAML reads)."""
    path.write_text("".join(f"{key}: {json.dumps(value) if isinstance(value, (dict, list, tuple)) else value}\n"
                            for key, value in settings.items()))
    return path


def job_config(secured: Secured, prefix: str, keyspace: str, tmp_path: Path, **extra) -> dict:
    s = secured.stack
    return {"kafka_bootstrap_servers": s.kafka_bootstrap, "registry_url": s.registry_url, "topic_prefix": prefix,
            "cassandra_hosts": s.cassandra_host, "cassandra_port": s.cassandra_port,
            "generations_keyspace": f"{keyspace}_gen", "checkpoint_dir": str(tmp_path / "checkpoint"),
            "spark_master": "local[2]", "spark_jars": ",".join(s.spark_jars), "log_format": "text",
            "spark_conf": {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"},
            **secured.settings(), **extra}


def run(args: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def test_changes_go_through_every_secured_service_into_a_mirror_and_no_output_shows_a_secret(
        secured, secured_cql, secured_table, tmp_path):
    keyspace, prefix = secured_table, f"sec{uuid.uuid4().hex[:8]}"
    connector = secured.connector(tmp_path, prefix)
    try:
        for k in range(40):
            secured_cql.execute(f"INSERT INTO {keyspace}.kv (k, v, n) VALUES (%s, %s, %s)", (k, f"v{k}", k * k))
        secured_cql.execute(f"UPDATE {keyspace}.kv SET v = 'changed' WHERE k = 3")
        secured_cql.execute(f"DELETE FROM {keyspace}.kv WHERE k = 7")
        topic = f"{prefix}.{keyspace}.kv"
        security = KafkaSecurity(**secured.security["kafka"])
        wait_for(lambda: _has_topic(secured.stack.kafka_bootstrap, security, topic), 60, f"topic {topic}")
        wait_for(lambda: len(kafka_messages(secured.stack.kafka_bootstrap, topic, security)) >= 42, 60,
                 "42 events on the secured Kafka")
    finally:
        connector.stop()
    connector_log = connector.log.read_text()
    assert "ERROR" not in connector_log, connector_log[-3000:]

    # The job as users run it: its settings file, its command line; PostgreSQL over TLS (verify-full), its
    # password in a file.
    password_file = secured.security["postgres"]["password_file"]
    config = write_config(tmp_path / "job.yaml", job_config(
        secured, prefix, keyspace, tmp_path, sink="postgres", postgres_dsn=secured.stack.postgres_dsn,
        postgres_password_file=password_file, postgres_layout="mirror", postgres_schema=f"{keyspace}_ringtail"))
    job = run(["-m", "spark.job", "--config", str(config), "--available-now"])
    assert job.returncode == 0, job.stderr[-5000:]

    layout = layout_of(secured_cql, keyspace, "kv")
    source = source_rows(secured_cql.cluster, layout)
    with psycopg.connect(secured.stack.postgres_dsn, password=Path(password_file).read_text()) as conn:
        assert conn.execute("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").fetchone() == (True,)
        mirror = postgres_rows(conn, layout)
    assert len(source) == 39 and source == mirror, diff(source, mirror)

    # The one-shot tools reach the secured node with the same settings files: `connector dump` reads the
    # schema for a segment of the node's, `spark.streams generation` the live ring.
    cassandra = f"{secured.stack.cassandra_host}:{secured.stack.cassandra_port}"
    dumps = [run(["-m", "connector", "dump", str(segment), "--cassandra", cassandra, "--config",
                  str(connector.config), "--skip-unknown-tables"]) for segment in secured.stack.cdc_raw.glob("*.log")]
    assert all(dumped.returncode == 0 for dumped in dumps), [dumped.stderr[-3000:] for dumped in dumps]
    changes = [json.loads(line) for dumped in dumps for line in dumped.stdout.splitlines()]
    assert {c["partition_key"]["k"] for c in changes if c["keyspace"] == keyspace} == set(range(40))
    server = write_config(tmp_path / "server.yaml", secured.settings())
    generation = run(["-m", "spark.streams", "--config", str(server), "--json", "generation", "--cassandra", cassandra])
    assert generation.returncode == 0 and json.loads(generation.stdout)["entries"], generation.stderr[-3000:]

    for where, text in (("the connector's log", connector_log), ("the job's output", job.stdout + job.stderr),
                        ("connector dump", "".join(d.stderr for d in dumps)),
                        ("spark.streams", generation.stdout + generation.stderr)):
        secured.assert_no_secret(text, where)


def _has_topic(bootstrap: str, security: KafkaSecurity, topic: str) -> bool:
    from confluent_kafka.admin import AdminClient

    return topic in AdminClient(security.librdkafka(bootstrap)).list_topics(timeout=10).topics


def test_the_kafka_and_mysql_sinks_deliver_exactly_once_over_authentication_and_tls(
        secured, secured_cql, secured_table, spark, tmp_path):
    keyspace, prefix = secured_table, f"sek{uuid.uuid4().hex[:8]}"
    connector = secured.connector(tmp_path, prefix)
    security = KafkaSecurity(**secured.security["kafka"])
    try:
        for k in range(25):
            secured_cql.execute(f"INSERT INTO {keyspace}.kv (k, v) VALUES (%s, %s)", (k, f"v{k}"))
        topic = f"{prefix}.{keyspace}.kv"
        wait_for(lambda: _has_topic(secured.stack.kafka_bootstrap, security, topic), 60, f"topic {topic}")
        wait_for(lambda: len(kafka_messages(secured.stack.kafka_bootstrap, topic, security)) >= 25, 60, "25 events")
    finally:
        connector.stop()
    settings = JobSettings(**{**job_config(secured, prefix, keyspace, tmp_path),
                              "spark_jars": secured.stack.spark_jars})
    target = f"{prefix}-log"
    database = f"{keyspace}_log"
    mysql_dsn = secured.stack.mysql_dsn.replace("/ringtail?", f"/{database}?")
    with connect_dsn(with_password(secured.stack.mysql_dsn, _secret(secured.security["mariadb"]))) as conn:
        conn.cursor().execute(f"CREATE DATABASE {database}")
    sinks = {"kafka": {"topic": target, "format": "avro"},
             "mysql": {"dsn": mysql_dsn, "password_file": secured.security["mariadb"]["password_file"]}}
    for kind, config in sinks.items():
        for attempt in range(2):  # a restart writes nothing again
            sink = open_sink(spark, kind, config, settings.sink_context(settings.app_id))
            run_available(spark, settings.model_copy(update={"checkpoint_dir": tmp_path / kind}), sink=sink)
    rows = kafka_messages(secured.stack.kafka_bootstrap, target, security)
    assert len(rows) == 25
    with connect_dsn(with_password(mysql_dsn, _secret(secured.security["mariadb"]))) as conn, conn.cursor() as cursor:
        cursor.execute("SHOW STATUS LIKE 'Ssl_cipher'")
        assert cursor.fetchone()[1]  # over TLS
        cursor.execute(f"SELECT COUNT(*), COUNT(DISTINCT write_time_us) FROM {database}.cdc_log")
        assert cursor.fetchone() == (25, 25)


def _secret(security: dict) -> str:
    return Path(security["password_file"]).read_text()


CASES = {
    "a wrong Cassandra password": ("cassandra_security", {"password_file": "wrong"}, "Cassandra at {cassandra}: "
                                   "authentication failed: Provided username ringtail and/or password are incorrect"),
    "an unknown Cassandra user": ("cassandra_security", {"username": "nobody"}, "Cassandra at {cassandra}: "
                                  "authentication failed: Provided username nobody and/or password are incorrect"),
    "an untrusted Cassandra certificate": ("cassandra_security", {"tls_ca": "other"}, "Cassandra at {cassandra}: "
                                           "TLS certificate not trusted: unable to get local issuer certificate"),
    "a wrong Kafka password": ("kafka_security", {"sasl_password_file": "wrong"}, "Kafka at {kafka}: "
                               "authentication failed: SASL authentication error: Authentication failed during "
                               "authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"),
    "a SASL mechanism the brokers lack": ("kafka_security", {"sasl_mechanism": "PLAIN"}, "Kafka at {kafka}: "
                                          "authentication failed: SASL PLAIN mechanism handshake failed"),
    "an untrusted Kafka certificate": ("kafka_security", {"tls_ca": "other"}, "Kafka at {kafka}: TLS certificate "
                                       "not trusted: SSL handshake failed"),
    "a wrong registry password": ("registry_security", {"password_file": "wrong"},
                                  "the schema registry at {registry}: authentication failed: HTTP 401"),
    "an untrusted registry certificate": ("registry_security", {"tls_ca": "other"}, "the schema registry at "
                                          "{registry}: TLS certificate not trusted: unable to get local issuer"),
    # Every service of the stack requires a client certificate its authority signed.
    "an expired client certificate": ("kafka_security", {"tls_cert": "expired.pem", "tls_key": "expired.key"},
                                      "Kafka at {kafka}: TLS handshake failed: Receive failed: error:0A000416:SSL "
                                      "routines::ssl/tls alert certificate unknown"),
    "no client certificate": ("registry_security", {"tls_cert": None, "tls_key": None}, "the schema registry at "
                              "{registry}: TLS handshake failed: 400 No required SSL certificate was sent"),
}


@pytest.fixture(scope="module")
def impostor(secured, tmp_path_factory):
    """A wrong password's file, a certificate authority nobody's certificate comes from, and a client
    certificate the stack's authority signed that expired a day ago."""
    where = tmp_path_factory.mktemp("impostor")
    (where / "wrong").write_text("not-the-password")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    "/CN=someone else", "-keyout", str(where / "other.key"), "-out", str(where / "other.pem")],
                   check=True, capture_output=True)
    key, cert = SecuredFiles(secured.stack.run_dir, []).sign("expired-client", "/CN=ringtail",
                                                             "extendedKeyUsage=clientAuth\n", days=-1)
    return {"wrong": str(where / "wrong"), "other": str(where / "other.pem"), "expired.pem": str(cert),
            "expired.key": str(key)}


@pytest.mark.parametrize("case", list(CASES))
def test_a_refused_credential_or_certificate_stops_the_connector_and_the_job_at_start_in_one_line(
        secured, impostor, tmp_path, case):
    setting, change, expected = CASES[case]
    change = {key: impostor.get(value, value) if value else value for key, value in change.items()}
    settings = {**secured.settings(), setting: {**secured.settings()[setting], **change}}
    s = secured.stack
    expected = expected.format(cassandra=f"{s.cassandra_host}:{s.cassandra_port}", kafka=s.kafka_bootstrap,
                               registry=s.registry_url)

    connector = ConnectorProcess(s, tmp_path / "connector", "refused", **settings)
    began = time.monotonic()
    connector.start()
    assert connector.process.wait(60) == 2
    output = connector.log.read_text()
    errors = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {expected}"), output[-3000:]
    assert time.monotonic() - began < 45
    assert connector.committed() is None  # nothing read, nothing committed

    config = write_config(tmp_path / "job.yaml", job_config(secured, "refused", "refused", tmp_path, **settings))
    job = run(["-m", "spark.job", "--config", str(config)], timeout=120)
    assert job.returncode == 2, job.stdout + job.stderr
    assert job.stderr.strip().splitlines()[-1].startswith(f"python -m spark.job: {expected}"), job.stderr
    assert not (tmp_path / "checkpoint").exists()
    for text in (output, job.stdout + job.stderr):
        secured.assert_no_secret(text, case)


def test_subscriptions_to_kafka_and_https_deliver_through_a_runner_and_no_output_shows_a_secret(
        secured, secured_cql, secured_table, tmp_path):
    keyspace, prefix = secured_table, f"ses{uuid.uuid4().hex[:8]}"
    connector = secured.connector(tmp_path, prefix)
    s = secured.stack
    base = {"cassandra_hosts": [s.cassandra_host], "cassandra_port": s.cassandra_port,
            "kafka_bootstrap_servers": s.kafka_bootstrap, "registry_url": s.registry_url, "topic_prefix": prefix,
            "generations_keyspace": f"{keyspace}_cdc", "checkpoint_dir": str(tmp_path / "checkpoints"),
            "trigger_interval": "500 milliseconds", "poll_interval": 1.0, "log_format": "text",
            **secured.settings()}
    config = write_config(tmp_path / "server.yaml", base)
    token = tmp_path / "hook-token"
    token.write_text(f"token-{uuid.uuid4().hex}")
    # An HTTPS receiver with the stack's certificate, on the stack's address (the name the certificate has).
    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_tls.load_cert_chain(secured.stack.run_dir / "secure" / "server.pem",
                               secured.stack.run_dir / "secure" / "server.key")
    receiver = Receiver(tls=server_tls, host=s.cassandra_host)
    target = f"{prefix}-copy"

    def cli(*args: str) -> subprocess.CompletedProcess:
        return run(["-m", "spark.subscriptions", "--config", str(config), *args], timeout=120)

    def create(name: str, sink: str, *options: str) -> subprocess.CompletedProcess:
        return cli("create", name, "--table", f"{keyspace}.kv", "--sink", sink, "--start", "earliest",
                   "--sink-config", *options)

    hook = [f"url={receiver.url}", f"ca={secured.security['ca']}"]
    outputs = [create("hook", "http", *hook, f"token={token.read_text()}")]
    assert outputs[0].returncode == 2 and "token would be stored in clear" in outputs[0].stderr, outputs[0].stderr
    outputs += [create("hook", "http", *hook, f"token_file={token}"), create("copy", "kafka", f"topic={target}")]
    outputs += [cli("--json", "list"), cli("--json", "show", "hook")]
    assert all(out.returncode == 0 for out in outputs[1:]), [out.stderr for out in outputs]
    assert json.loads(outputs[-1].stdout)["sink_config"] == {"url": receiver.url, "ca": secured.security["ca"],
                                                             "token_file": str(token)}
    stored = connect_rows(secured, f"SELECT name, sink_config FROM {keyspace}_cdc.subscriptions")
    assert {row["name"]: dict(row["sink_config"]) for row in stored}["hook"] == {
        "url": receiver.url, "ca": secured.security["ca"], "token_file": str(token)}

    port = unused_port()
    runner = runner_process(s, base, tmp_path, "a", metrics_port=port)
    security = KafkaSecurity(**secured.security["kafka"])
    try:
        for k in range(30):
            secured_cql.execute(f"INSERT INTO {keyspace}.kv (k, v) VALUES (%s, %s)", (k, f"v{k}"))
        delivered = lambda: sorted(row["key"]["k"] for body in receiver.accepted().values() for row in body)
        wait_for(lambda: delivered() == list(range(30)), 240, "30 rows posted over HTTPS")
        wait_for(lambda: _has_topic(s.kafka_bootstrap, security, target)
                 and len(kafka_messages(s.kafka_bootstrap, target, security)) == 30, 120, "30 rows on the topic")
        assert {r["headers"]["authorization"] for r in receiver.requests} == {f"Bearer {token.read_text()}"}
        served = {path: _served(f"http://127.0.0.1:{port}{path}") for path in ("/metrics", "/ready")}
    finally:
        runner.terminate()
        runner.wait(120)
        connector.stop()
        receiver.close()
    texts = {**{f"the runner's {path}": text for path, text in served.items()},
             "the runner's log": (tmp_path / "runner-a.log").read_text(),
             "the connector's log": connector.log.read_text(),
             **{f"the CLI's output {i}": out.stdout + out.stderr for i, out in enumerate(outputs)}}
    for where, text in texts.items():
        secured.assert_no_secret(text, where, receiver_token=token.read_text())


def _served(url: str) -> str:
    """What a process's HTTP endpoint answers, whatever the status."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.read().decode()


def connect_rows(secured: Secured, cql: str) -> list:
    cluster, session = connect([secured.stack.cassandra_host], secured.stack.cassandra_port,
                               CassandraSecurity(**secured.security["cassandra"]))
    try:
        return [dict(row._asdict()) for row in session.execute(cql)]
    finally:
        cluster.shutdown()


def test_a_connector_refused_mid_run_says_so_on_ready_and_resumes_with_valid_credentials(
        secured, secured_cql, secured_table, tmp_path):
    from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    keyspace, prefix = secured_table, f"ser{uuid.uuid4().hex[:8]}"
    port = unused_port()
    connector = secured.connector(tmp_path, prefix, metrics_port=port, stall_timeout=5)
    admin_password = secured.secrets["kafka-admin"]
    admin = AdminClient({**KafkaSecurity(**{**secured.security["kafka"], "sasl_username": "admin",
                                            "sasl_password_file": None, "sasl_password": admin_password}
                                         ).librdkafka(secured.stack.kafka_bootstrap)})

    def set_password(password: str) -> None:
        for mechanism in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512):
            upsert = UserScramCredentialUpsertion("ringtail", ScramCredentialInfo(mechanism, 4096),
                                                  password.encode())
            for future in admin.alter_user_scram_credentials([upsert]).values():
                future.result(30)

    def ready() -> tuple[int, dict]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=5) as response:
                return response.status, json.load(response)
        except urllib.error.HTTPError as exc:
            return exc.code, json.load(exc)
        except urllib.error.URLError:  # not listening yet
            return 0, {}

    topic = f"{prefix}.{keyspace}.kv"
    security = KafkaSecurity(**secured.security["kafka"])
    try:
        secured_cql.execute(f"INSERT INTO {keyspace}.kv (k, v) VALUES (1, 'before')")
        wait_for(lambda: ready()[0] == 200, 60, "the connector ready")
        wait_for(lambda: _has_topic(secured.stack.kafka_bootstrap, security, topic)
                 and len(kafka_messages(secured.stack.kafka_bootstrap, topic, security)) == 1, 60, "the first event")
        set_password("rotated-" + uuid.uuid4().hex)  # the connector still holds the old one
        refused = wait_for(lambda: (lambda r: r if r[0] == 503 and any("Kafka at" in p for p in r[1]["problems"])
                                    else None)(ready()), 60, "/ready to report the refusal")
        problem = next(p for p in refused[1]["problems"] if "Kafka at" in p)
        assert "authentication failed" in problem and "restart it with valid credentials" in problem, problem
        secured_cql.execute(f"INSERT INTO {keyspace}.kv (k, v) VALUES (2, 'while refused')")
    finally:
        set_password(secured.secrets["kafka-ringtail"])  # its own again: the stack's other tests use it
    try:
        wait_for(lambda: ready()[0] == 200, 90, "/ready to clear once the credentials work again")
        wait_for(lambda: len(kafka_messages(secured.stack.kafka_bootstrap, topic, security)) == 2, 60,
                 "the change written while refused")
    finally:
        connector.stop()
    secured.assert_no_secret(connector.log.read_text(), "the connector's log")
