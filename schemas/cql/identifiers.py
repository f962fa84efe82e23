"""CQL identifiers as Cassandra writes them."""
from __future__ import annotations

import re

_UNQUOTED = re.compile(r"[a-z][a-z0-9_]*\Z")
# Cassandra's reserved keywords (cql3 ReservedKeywords): a name spelled as one is quoted.
_RESERVED = frozenset("""
    add allow alter and apply asc authorize batch begin by columnfamily create default delete desc describe
    drop entries execute from full grant if in index infinity insert into is keyspace limit materialized mbean
    mbeans modify nan norecursive not null of on or order primary rename replace revoke schema select set
    table to token truncate unlogged unset update use using view where with""".split())


def maybe_quote(name: str) -> str:
    """`name` as CQL writes it (and system_schema shows it): bare when it is a lowercase identifier
    and no reserved word, otherwise double-quoted with its quotes doubled."""
    if _UNQUOTED.match(name) and name not in _RESERVED:
        return name
    return '"' + name.replace('"', '""') + '"'
