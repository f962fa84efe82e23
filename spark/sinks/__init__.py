"""Where the job writes: every sink takes whole micro-batches and makes their writes exactly once.

A micro-batch may be written again after a crash (Spark replays it with the same batch id
when the crash came before the checkpoint). Each sink turns that replay into a no-op: Delta by
the transaction's application id and version, PostgreSQL and MySQL by a ledger of batch ids and of
the parts of each batch the executors wrote (`parts`), Cassandra by upserting rows whose primary key
is derived from the change.
Every ledger keeps the batch's source offsets with its id, and refuses a batch it holds under the
same id with other offsets rather than skip it (`ledger`).

The contract is `contract.py`, the sinks by name and their settings `registry.py`, one package per target.
"""
