"""Each process reads only its own variables; sizes take units; cassandra.yaml supplies what it knows."""
import pytest
from pydantic import ValidationError

from connector.config import ConnectorSettings
from spark.job.config import JobSettings

CASSANDRA_YAML = """\
cluster_name: Test Cluster
cdc_enabled: true
cdc_raw_directory: /var/lib/cassandra/cdc_raw
cdc_total_space: 512MiB
commitlog_sync: periodic
commitlog_sync_period: 10000ms
"""


def test_each_process_reads_its_own_prefix(monkeypatch, tmp_path):
    # The local stack's own variable, in bytes with a unit, once broke the connector's start.
    monkeypatch.setenv("RINGTAIL_STACK_CDC_TOTAL_SPACE", "512MiB")
    monkeypatch.setenv("RINGTAIL_CONNECTOR_TOPIC_PREFIX", "from-connector-env")
    monkeypatch.setenv("RINGTAIL_JOB_TOPIC_PREFIX", "from-job-env")
    connector = ConnectorSettings.load(None, cdc_raw=tmp_path)
    assert connector.topic_prefix == "from-connector-env" and connector.cdc_total_space == 4096 << 20
    assert JobSettings.load(None).topic_prefix == "from-job-env"


@pytest.mark.parametrize("given, size", [("512MiB", 512 << 20), ("4GiB", 4 << 30), ("1048576", 1 << 20),
                                         (2048, 2048)])
def test_sizes_with_units(tmp_path, given, size):
    assert ConnectorSettings(cdc_raw=tmp_path, cdc_total_space=given).cdc_total_space == size


def test_a_size_that_is_not_one_is_refused(tmp_path):
    with pytest.raises(ValidationError, match="cdc_total_space"):
        ConnectorSettings(cdc_raw=tmp_path, cdc_total_space="lots")


def test_cassandra_yaml_supplies_cdc_raw_and_total_space_unless_given(monkeypatch, tmp_path):
    yaml = tmp_path / "cassandra.yaml"
    yaml.write_text(CASSANDRA_YAML)
    config = tmp_path / "connector.yaml"
    config.write_text(f"cassandra_yaml: {yaml}\n")
    settings = ConnectorSettings.load(config)
    assert (str(settings.cdc_raw), settings.cdc_total_space) == ("/var/lib/cassandra/cdc_raw", 512 << 20)
    monkeypatch.setenv("RINGTAIL_CONNECTOR_CDC_TOTAL_SPACE", "1GiB")
    assert ConnectorSettings.load(config, cdc_raw=tmp_path).cdc_raw == tmp_path
    assert ConnectorSettings.load(config).cdc_total_space == 1 << 30


def test_cassandra_yaml_older_names(tmp_path):
    yaml = tmp_path / "cassandra.yaml"
    yaml.write_text("cdc_raw_directory: /data/cdc_raw\ncdc_total_space_in_mb: 4096\n")
    assert ConnectorSettings(cassandra_yaml=yaml).cdc_total_space == 4096 << 20


def test_an_unreadable_cassandra_yaml_is_named(tmp_path):
    with pytest.raises(ValidationError, match="cannot read cassandra_yaml .*missing.yaml"):
        ConnectorSettings(cassandra_yaml=tmp_path / "missing.yaml")


def test_without_cdc_raw_anywhere_the_error_names_it(tmp_path):
    yaml = tmp_path / "cassandra.yaml"
    yaml.write_text("cdc_enabled: true\n")
    with pytest.raises(ValidationError, match="cdc_raw"):
        ConnectorSettings(cassandra_yaml=yaml)


def test_the_generations_keyspace_replication_is_a_setting_checked_before_anything_starts(monkeypatch):
    assert JobSettings.load(None).generations_replication is None  # the cluster's: min(3, nodes) per data centre
    monkeypatch.setenv("RINGTAIL_JOB_GENERATIONS_REPLICATION", '{"class": "NetworkTopologyStrategy", "dc1": 3}')
    assert JobSettings.load(None).generations_replication == {"class": "NetworkTopologyStrategy", "dc1": 3}
    monkeypatch.delenv("RINGTAIL_JOB_GENERATIONS_REPLICATION")  # sources' maps are merged, not replaced
    with pytest.raises(ValidationError, match="is not a plain name or number"):
        JobSettings(generations_replication={"class": "NetworkTopologyStrategy", "dc1": "3}; DROP KEYSPACE x"})
    with pytest.raises(ValidationError, match="names its class"):
        JobSettings(generations_replication={"dc1": 3})
