"""What a driver sets before its JVM starts, so that the Python Spark runs is the one configured and the
Python processes beside the driver (a snapshot's planning) import ringtail."""
from __future__ import annotations

import os
import site
from pathlib import Path

import pytest

import spark
from spark.delivery.pipeline import python_beside_driver

ROOT = str(Path(spark.__file__).resolve().parents[1])


@pytest.fixture(autouse=True)
def environment(monkeypatch):
    """Both variables unset, and put back as they were after the test (monkeypatch records a variable only
    when it sets or removes one that exists; the function sets them directly)."""
    for name in ("PYSPARK_PYTHON", "PYTHONPATH"):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


def test_the_configured_python_is_pysparks_and_the_drivers_packages_go_first_on_the_path(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["/opt/given", ROOT]))
    python_beside_driver({"spark.pyspark.python": "/opt/executors/bin/python"})
    assert os.environ["PYSPARK_PYTHON"] == "/opt/executors/bin/python"
    path = os.environ["PYTHONPATH"].split(os.pathsep)
    assert path == [ROOT, *site.getsitepackages(), "/opt/given"]  # each once, what was given kept after


def test_a_python_already_chosen_stays_and_no_configured_one_sets_none(monkeypatch):
    monkeypatch.setenv("PYSPARK_PYTHON", "/usr/bin/python3.11")
    python_beside_driver({"spark.pyspark.python": "/opt/executors/bin/python"})
    assert os.environ["PYSPARK_PYTHON"] == "/usr/bin/python3.11"
    monkeypatch.delenv("PYSPARK_PYTHON")
    python_beside_driver({})
    assert "PYSPARK_PYTHON" not in os.environ
    assert os.environ["PYTHONPATH"].split(os.pathsep)[0] == ROOT
