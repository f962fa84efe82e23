"""Tests written once and run on more than one node: a test module collects a suite by subclassing it
(`class TestX(Suite)`), and its `node` and `cql` fixtures say which node the suite runs on — the main
stack's by default, an older Cassandra series' in `test_cassandra_versions.py`."""
