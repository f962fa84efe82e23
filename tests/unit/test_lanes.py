"""Which invocations of the suite run in two lanes, and what each lane runs."""
from tests.lanes import lanes, selects_tests


def test_options_alone_run_the_whole_suite_in_lanes():
    assert not selects_tests([])
    assert not selects_tests(["-p", "no:cacheprovider", "--durations=25", "-x", "-q"])


def test_paths_keywords_and_markers_select_tests():
    assert selects_tests(["tests/unit"])
    assert selects_tests(["-q", "tests/integration/test_job.py::test_replica_copies_are_logged_once"])
    assert selects_tests(["-k", "ring"]) and selects_tests(["-kring"])
    assert selects_tests(["-m", "not integration"])
    assert selects_tests(["--lf"]) and selects_tests(["--deselect=tests/unit/test_lanes.py"])
    assert not selects_tests(["no-such-path"])


def test_the_side_lane_runs_the_unit_tests_the_side_stacks_and_modules_capturing_nothing_and_the_main_lane_the_rest():
    split = lanes(["-p", "no:cacheprovider"])
    side = ["tests/unit", "tests/integration/test_ring.py", "tests/integration/test_secured.py",
            "tests/integration/test_spark_cluster.py", "tests/integration/test_cassandra_versions.py",
            "tests/integration/test_streams_storage.py", "tests/integration/test_tokens_match_cassandra.py",
            "tests/integration/test_streams_cli.py", "tests/integration/test_schema_loader.py",
            "tests/integration/test_json_rows.py", "tests/integration/test_typed_log.py",
            "tests/integration/test_subscriptions.py", "tests/integration/test_avro_rows.py",
            "tests/integration/test_job_sink_postgres.py", "tests/integration/test_job_sink_mysql.py",
            "tests/integration/test_job_sink_cassandra.py"]
    assert split["side"] == ["-p", "no:cacheprovider", *side]
    assert split["main"] == ["-p", "no:cacheprovider", *(f"--ignore={m}" for m in side), "tests"]
