"""Cassandra's schema as both sides read it: snapshots of tables and types (model.py), the
DESCRIBE-style DDL parser (ddl.py), and the schema read from a node (loader.py)."""
from .ddl import DdlError, parse_ddl, parse_ddl_file
from .model import ClusteringOrder, Column, ColumnKind, DroppedColumn, SchemaSnapshot, Table, UserType

__all__ = [
    "ClusteringOrder", "Column", "ColumnKind", "DdlError", "DroppedColumn", "SchemaSnapshot", "Table",
    "UserType", "parse_ddl", "parse_ddl_file",
]
