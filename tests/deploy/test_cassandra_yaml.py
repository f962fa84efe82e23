"""The configuration the stack gives each Cassandra series it runs (`RINGTAIL_STACK_CASSANDRA_VERSION`):
4.0 reads the settings' names of before 4.1 (the unit in the name), 5.0 alone knows the storage
compatibility mode; a version of another series is refused before anything starts, naming it."""
import os
import subprocess
import sys

import pytest
import yaml

from deploy.local.endpoints import ROOT

STACK = ROOT / "deploy" / "local" / "stack.py"


def config(version: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(STACK), "cassandra-yaml"], capture_output=True, text=True,
                          env={**os.environ, "RINGTAIL_STACK_CASSANDRA_VERSION": version, **env})


def test_cassandra_40_gets_the_names_with_units():
    got = yaml.safe_load(config("4.0.19").stdout)
    assert {name: got[name] for name in got if name.endswith(("_in_mb", "_in_kb", "_ms"))} == {
        "cdc_total_space_in_mb": 512, "cdc_free_space_check_interval_ms": 250, "commitlog_sync_period_in_ms": 1000,
        "commitlog_segment_size_in_mb": 1, "column_index_size_in_kb": 4, "hints_flush_period_in_ms": 1000}
    assert not {"cdc_total_space", "commitlog_segment_size", "hints_flush_period",
                "storage_compatibility_mode"} & got.keys()
    group = yaml.safe_load(config("4.0.19", RINGTAIL_STACK_COMMITLOG_SYNC="group",
                                  RINGTAIL_STACK_CDC_TOTAL_SPACE="2GiB").stdout)
    assert (group["commitlog_sync_group_window_in_ms"], group["cdc_total_space_in_mb"]) == (15, 2048)


def test_cassandra_41_and_50_get_the_names_with_units_in_the_values():
    for version, mode in (("4.1.10", None), ("5.0.8", "CASSANDRA_4")):
        got = yaml.safe_load(config(version).stdout)
        assert (got["cdc_total_space"], got["commitlog_segment_size"], got["column_index_size"],
                got["hints_flush_period"]) == ("512MiB", "1MiB", "4KiB", "1000ms")
        assert got.get("storage_compatibility_mode") == mode


def test_a_size_cassandra_40_cannot_hold_is_refused():
    result = config("4.0.19", RINGTAIL_STACK_CDC_TOTAL_SPACE="1500KiB")
    assert result.returncode == 1
    assert "cdc_total_space: 1500KiB is not a whole number of MiB" in result.stderr


@pytest.mark.parametrize("version", ["3.11.17", "5.1.0", "4.1", "latest"])
def test_another_series_is_refused_naming_it(version):
    result = config(version)
    assert result.returncode == 1 and not result.stdout
    assert f"RINGTAIL_STACK_CASSANDRA_VERSION {version!r}: the stack runs Cassandra 4.0.x, 4.1.x, 5.0.x" \
        in result.stderr
