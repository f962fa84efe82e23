"""The connector's live schema: Cassandra's schema kept current through DDL (live.py), the history of
`cdc` flags and dropped tables a segment is decoded with (history.py), the tables learnt from the commit
log itself (logged.py), and the stored copy a restart starts from (store.py)."""
