"""ScyllaDB-style CDC streams for Cassandra writes: tokens, stream ids, generations.

Pure Python and numpy, so it runs inside Spark UDFs and on its own alike.
"""

from .cql_types import compose, partition_key, serialize
from .errors import (
    GenerationDataUnavailable,
    InvalidKeyValue,
    InvalidStreamId,
    InvalidTopology,
    NoGenerationOperating,
    PartitionKeyError,
    StreamsError,
    UnknownStreamIdVersion,
    UnsupportedKeyType,
    WriteFromThePast,
    WriteFromTheFuture,
    WriteOutsideAcceptanceWindow,
)
from .generations import DEFAULT_GENERATION_DELAY, DEFAULT_LEEWAY, Generation, Generations
from .sharding import first_token_for_shard, shard_of, shards_of, token_for_next_shard
from .stream_id import StreamId
from .tokens import MAX_TOKEN, MIN_TOKEN, token_of, token_of_key, tokens_of, tokens_of_keys
from .topology import (
    DEFAULT_IGNORE_MSB,
    TokenRangeDescription,
    TopologyDescription,
    build_topology_description,
    rebuild_topology_description,
)

__all__ = [
    "DEFAULT_GENERATION_DELAY",
    "DEFAULT_IGNORE_MSB",
    "DEFAULT_LEEWAY",
    "MAX_TOKEN",
    "MIN_TOKEN",
    "Generation",
    "GenerationDataUnavailable",
    "Generations",
    "InvalidKeyValue",
    "InvalidStreamId",
    "InvalidTopology",
    "NoGenerationOperating",
    "PartitionKeyError",
    "StreamId",
    "StreamsError",
    "TokenRangeDescription",
    "TopologyDescription",
    "UnknownStreamIdVersion",
    "UnsupportedKeyType",
    "WriteFromTheFuture",
    "WriteFromThePast",
    "WriteOutsideAcceptanceWindow",
    "build_topology_description",
    "compose",
    "first_token_for_shard",
    "partition_key",
    "rebuild_topology_description",
    "serialize",
    "shard_of",
    "shards_of",
    "token_for_next_shard",
    "token_of",
    "token_of_key",
    "tokens_of",
    "tokens_of_keys",
]
