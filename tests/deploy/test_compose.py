"""docker-compose.yml stays valid and keeps the shape the connector needs, without a Docker daemon."""

from __future__ import annotations

import shutil
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"


def _compose() -> str:
    found = shutil.which("docker-compose")
    if not found:
        pytest.fail("docker-compose is needed to validate docker-compose.yml: apt-get install docker-compose")
    return found


def test_compose_file_validates() -> None:
    result = subprocess.run([_compose(), "-f", str(COMPOSE), "config", "-q"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_compose_rejects_a_broken_file(tmp_path: Path) -> None:
    # Proves the validation above can fail: an unknown key is an error.
    broken = tmp_path / "docker-compose.yml"
    broken.write_text(COMPOSE.read_text().replace("    ports:\n", "    portz:\n", 1))
    result = subprocess.run([_compose(), "-f", str(broken), "config", "-q"], capture_output=True, text=True)
    assert result.returncode != 0
    assert "portz" in result.stderr


def test_connector_shares_cassandras_data_volume() -> None:
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    assert {"cassandra", "kafka", "registry", "postgres", "mariadb", "connector", "spark", "runner"} <= set(services)
    cassandra_mounts = set(services["cassandra"]["volumes"])
    # commitlog and cdc_raw on one volume (hard links), and the connector sees the same files.
    assert "cassandra-data:/var/lib/cassandra" in cassandra_mounts
    assert "cassandra-data:/var/lib/cassandra" in services["connector"]["volumes"]
    assert services["connector"]["environment"]["RINGTAIL_CONNECTOR_CDC_RAW"] == "/var/lib/cassandra/cdc_raw"
    for name in ("cassandra", "connector", "spark", "runner"):
        assert (ROOT / services[name]["build"]["dockerfile"]).is_file()


def test_runner_serves_subscriptions_with_its_own_settings() -> None:
    runner = yaml.safe_load(COMPOSE.read_text())["services"]["runner"]
    assert runner["entrypoint"] == ["python", "-m", "spark.server"]
    assert all(name.startswith("RINGTAIL_SERVER_") for name in runner["environment"])
    assert runner["environment"]["RINGTAIL_SERVER_CHECKPOINT_DIR"].startswith("/var/lib/ringtail/")


def test_cassandra_image_config_has_cdc_on() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "deploy" / "local" / "stack.py"), "cassandra-yaml"],
        capture_output=True, text=True, check=True,
    )
    config = yaml.safe_load(result.stdout)
    assert config["cdc_enabled"] is True
    assert config["cdc_raw_directory"] == "/var/lib/cassandra/cdc_raw"
    assert config["commitlog_directory"] == "/var/lib/cassandra/commitlog"
    assert config["commitlog_segment_size"] == "1MiB"
    assert config["commitlog_sync"] == "periodic"


def test_group_sync_gets_the_mutation_threads_its_writes_hold() -> None:
    """Under group sync a write holds its mutation thread until the sync: 8 threads would cap the node at
    8 writes per window."""
    def config(**env: str) -> dict:
        result = subprocess.run([sys.executable, str(ROOT / "deploy" / "local" / "stack.py"), "cassandra-yaml"],
                                capture_output=True, text=True, check=True, env={**os.environ, **env})
        return yaml.safe_load(result.stdout)

    group = config(RINGTAIL_STACK_COMMITLOG_SYNC="group")
    assert (group["commitlog_sync"], group["commitlog_sync_group_window"], group["concurrent_writes"]) == (
        "group", "15ms", 64)
    assert config(RINGTAIL_STACK_COMMITLOG_SYNC="periodic")["concurrent_writes"] == 8


def test_each_published_port_is_the_one_its_service_serves() -> None:
    from connector.config import ConnectorSettings
    from spark.subscriptions.settings import ServerSettings

    services = yaml.safe_load(COMPOSE.read_text())["services"]
    served = {"connector": ConnectorSettings.model_fields["metrics_port"].default,
              "runner": ServerSettings.model_fields["metrics_port"].default}
    for name, port in served.items():
        assert services[name]["ports"] == [f"{port}:{port}"], f"{name} serves /metrics on {port}"


def test_the_images_run_the_python_ringtail_requires_and_the_spark_image_has_java_17() -> None:
    """Checked without a Docker engine: the final stage's base, read from each Dockerfile, against
    pyproject.toml's requires-python."""
    import re
    import tomllib

    required = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    least = tuple(int(p) for p in re.fullmatch(r">=\s*(\d+)\.(\d+)", required).groups())
    for image in ("connector", "spark"):
        text = (ROOT / "deploy" / f"{image}.Dockerfile").read_text()
        base = re.findall(r"^FROM (\S+)", text, re.MULTILINE)[-1]
        version = re.fullmatch(r"python:(\d+)\.(\d+)[-.\w]*", base)
        assert version and tuple(map(int, version.groups())) >= least, f"{image}: {base} is not Python {required}"
    spark = (ROOT / "deploy" / "spark.Dockerfile").read_text()
    final = spark.rsplit("\nFROM ", 1)[1]
    assert "openjdk-17-jre-headless" in final and '[spark]' in final  # Java 17 and pyspark: its own Spark
