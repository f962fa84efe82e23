"""The Spark Structured Streaming job: the connector's change events → ScyllaDB-style CDC log rows
with stream ids → Delta Lake, PostgreSQL or Cassandra, exactly once."""
