"""Timestamps collected from Spark reach the sinks as the instants they are, whatever the host's zone."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]

PROBE = """
from pyspark.sql.types import TimestampType
from spark.delivery.pipeline import use_utc
from spark.sinks.json_rows import _json_value

collected = lambda: TimestampType().fromInternal(0)  # how PySpark turns a timestamp into a Python value
print(_json_value(collected()))
use_utc()
print(_json_value(collected()))
"""


def test_a_host_outside_utc_gets_utc_times_once_the_spark_process_is_in_utc():
    env = {**os.environ, "TZ": "IST-5:30"}  # POSIX form: no zone database needed
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    # PySpark's value is the host's local time: read as UTC it would be 5 h 30 off.
    assert out == ["1970-01-01T05:30:00+00:00", "1970-01-01T00:00:00+00:00"]
