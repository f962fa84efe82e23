"""The connector where acknowledged writes used to go missing or stall in silence, as a real process on
the real stack: a broker started together with it, a schema the registry rejects, a second
connector."""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

import httpx
import pytest

from tests.integration.pipeline import ConnectorProcess, EventConsumer, has_marker, write_marker
from tests.integration.test_connector_reliability import assert_each_once, pipeline  # noqa: F401
from tests.stack import ROOT
from tests.support import unused_port, wait_for


def ready(connector: ConnectorProcess) -> tuple[int, dict]:
    url = f"http://127.0.0.1:{connector.settings['metrics_port']}/ready"
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())
    except OSError:  # not listening yet
        return 0, {"problems": [], "warnings": []}


def write_rows(cql, table: str, ids, body: str = "x" * 200) -> list[int]:
    insert = cql.prepare(f"INSERT INTO {table} (id, body) VALUES (?, ?)")
    for i in ids:
        cql.execute(insert, (i, body))
    return list(ids)


@pytest.fixture
def fresh_kafka(stack, tmp_path):
    """A Kafka of its own, started from an empty log directory (the stack's own scripts), and stopped."""
    spec = importlib.util.spec_from_file_location("local_stack", ROOT / "deploy" / "local" / "stack.py")
    local = sys.modules.setdefault(spec.name, importlib.util.module_from_spec(spec))
    spec.loader.exec_module(local)
    started = []

    def start():
        run_dir = tmp_path / f"kafka-{len(started)}"
        run_dir.mkdir()
        (run_dir / "dist").symlink_to(local.Settings.from_env().run_dir / "dist")
        settings = dataclasses.replace(local.Settings.from_env(), run_dir=run_dir, kafka_port=unused_port(),
                                       kafka_controller_port=unused_port())
        kafka = local.Kafka(settings)
        started.append(kafka)
        kafka.start()
        return kafka

    yield start
    for kafka in started:
        kafka.stop()


def test_a_broker_started_with_the_connector_gets_every_event_of_new_topics(stack, cql, keyspace, tmp_path,
                                                                             fresh_kafka):
    """Broker and connector start together and the connector creates topics at once: every acknowledged
    write arrives, round after round (the loss this guards against came one start in two)."""
    for round_ in range(3):
        kafka = fresh_kafka()
        local = dataclasses.replace(stack, kafka_bootstrap=kafka.bootstrap)
        connector = ConnectorProcess(local, tmp_path / f"state-{round_}", f"fresh{uuid.uuid4().hex[:6]}")
        connector.start_from_now()
        connector.start()  # while the broker is still starting
        tables = [f"{keyspace}.r{round_}t{n}" for n in range(3)]
        written = {}
        for table in tables:
            cql.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, body text) WITH cdc = true")
        for table in tables:
            written[table] = write_rows(cql, table, range(300), "f" * 50)
        kafka.wait()
        consumer = EventConsumer(local, connector.prefix)
        try:
            events = consumer.until(has_marker(write_marker(cql, keyspace)), timeout=120)
        finally:
            consumer.close()
            connector.stop()
            kafka.stop()
        assert connector.process.returncode == 0
        for table in tables:
            assert_each_once(events, table.split(".")[1], written[table])


def test_a_rejected_schema_sends_only_its_table_to_dead_letters(stack, cql, keyspace, pipeline):
    connector, consumer = pipeline(metrics_port=unused_port(), schema_retry_interval=2)
    # The subject holds a schema the connector's cannot be BACKWARD compatible with.
    subject = f"{connector.prefix}.{keyspace}.bad-value"
    other = {"type": "record", "name": "Other", "fields": [{"name": "zzz", "type": "int"}]}
    httpx.post(f"{stack.registry_url}/subjects/{subject}/versions", json={"schema": json.dumps(other)},
               timeout=10).raise_for_status()
    connector.start_from_now()
    connector.start()
    for table in ("bad", "good"):
        cql.execute(f"CREATE TABLE {keyspace}.{table} (id int PRIMARY KEY, body text) WITH cdc = true")
    bad = write_rows(cql, f"{keyspace}.bad", range(20))
    good = write_rows(cql, f"{keyspace}.good", range(20))
    events = consumer.until(has_marker(write_marker(cql, keyspace)), timeout=60)
    assert_each_once(events, "good", good)
    assert not [e for e in events if e["source"]["table"] == "bad"]
    dead = read_dead_letters(stack, connector.prefix, len(bad))
    assert {d["table"] for d in dead} == {f"{keyspace}.bad"} and len(dead) == len(bad)
    assert all(d["reason"] == "schema_rejected" and d["rejected_schema"]["type"] == "record" for d in dead)
    assert f'ringtail_table_schema_rejected{{table="{keyspace}.bad"}} 1.0' in metrics_text(connector)
    assert any(f"{keyspace}.bad" in w for w in ready(connector)[1]["warnings"])
    # Compatibility fixed: the table's changes return to its topic.
    httpx.put(f"{stack.registry_url}/config/{subject}", json={"compatibility": "NONE"}, timeout=10).raise_for_status()
    time.sleep(2.5)
    later = write_rows(cql, f"{keyspace}.bad", range(100, 110))
    events = consumer.until(lambda events: {e["_key"]["id"] for e in events if e["source"]["table"] == "bad"}
                            >= set(later), timeout=60)
    assert f'ringtail_table_schema_rejected{{table="{keyspace}.bad"}} 0.0' in metrics_text(connector)


def metrics_text(connector: ConnectorProcess) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{connector.settings['metrics_port']}/metrics", timeout=5) as r:
        return r.read().decode()


def read_dead_letters(stack, prefix: str, count: int) -> list[dict]:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": stack.kafka_bootstrap, "group.id": f"dl-{uuid.uuid4()}",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([f"{prefix}.dead_letters"])
    found, deadline = [], time.monotonic() + 60
    try:
        while len(found) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                found.append(json.loads(message.value()))
    finally:
        consumer.close()
    return found


def test_a_second_connector_on_the_same_cdc_raw_refuses_to_start(stack, pipeline, tmp_path):
    first, _ = pipeline(metrics_port=unused_port())
    first.start_from_now()
    first.start()
    wait_for(first.ready, timeout=60, what="the first connector")
    second = ConnectorProcess(stack, tmp_path / "second", "second")
    result = subprocess.run([sys.executable, "-m", "connector", "run", "--config", str(second.config)], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert f"another connector holds {stack.cdc_raw}" in result.stderr and f'"pid": {first.process.pid}' in result.stderr
