"""Typed errors of the streams package; callers can tell bad input from lookup outcomes."""


class StreamsError(Exception):
    """Base class of every error raised by :mod:`spark.streams`."""


class PartitionKeyError(StreamsError, ValueError):
    """A partition key value or type cannot be serialized."""


class UnsupportedKeyType(PartitionKeyError):
    """The CQL type is unknown or not allowed in a partition key (duration, counter, non-frozen collection)."""


class InvalidKeyValue(PartitionKeyError):
    """The value does not fit its CQL type (out of range, malformed text, null)."""


class InvalidStreamId(StreamsError, ValueError):
    """Bytes, hex text or fields that do not make a CDC stream id."""


class UnknownStreamIdVersion(InvalidStreamId):
    """The version nibble is above the newest known version (ScyllaDB rejects these too)."""


class InvalidTopology(StreamsError, ValueError):
    """A ring, topology description or sharding parameter that ScyllaDB would not produce."""


class NoGenerationOperating(StreamsError, LookupError):
    """No CDC generation operates at the timestamp ("could not find any CDC stream")."""


class GenerationDataUnavailable(StreamsError, LookupError):
    """The generation's timestamp is known but its topology description is not."""


class WriteOutsideAcceptanceWindow(StreamsError):
    """A write timestamp outside ``[T, C + leeway)``, where ``T`` is the generation operating at ``C``."""

    def __init__(self, message: str, *, write_ts: int, now: int) -> None:
        super().__init__(message)
        self.write_ts = write_ts
        self.now = now


class WriteFromThePast(WriteOutsideAcceptanceWindow):
    """The write timestamp precedes the generation operating now."""


class WriteFromTheFuture(WriteOutsideAcceptanceWindow):
    """The write timestamp is at or beyond now + leeway."""


class InvalidGenerationsFile(StreamsError, ValueError):
    """A generations JSON file that cannot be read or does not describe generations."""


class InvalidStoreSetting(StreamsError, ValueError):
    """A keyspace name or replication setting the generation store will not put into CQL."""


class StoreUnavailable(StreamsError, RuntimeError):
    """The Cassandra cluster holding the generations cannot be reached or read."""
