"""Schema snapshots (model.py) and the DESCRIBE-style DDL parser (ddl.py)."""
from .ddl import DdlError, parse_ddl, parse_ddl_file
from .model import ClusteringOrder, Column, ColumnKind, DroppedColumn, SchemaSnapshot, Table, UserType

__all__ = [
    "ClusteringOrder", "Column", "ColumnKind", "DdlError", "DroppedColumn", "SchemaSnapshot", "Table",
    "UserType", "parse_ddl", "parse_ddl_file",
]
