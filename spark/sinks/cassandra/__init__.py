"""Cassandra: a ScyllaDB-style CDC log table per base table (`sink`)."""
