"""ScyllaDB-style CDC streams for Cassandra writes: tokens, stream ids, generations.

Pure Python and numpy, so it runs inside Spark UDFs and on its own alike. Storing
generations in Cassandra (:mod:`.storage`, :mod:`.rewrite`) needs cassandra-driver,
so those modules are imported on their own.
"""

from .keys import compose, partition_key, serialize
from .errors import (
    GenerationDataUnavailable,
    InvalidKeyValue,
    InvalidGenerationsFile,
    InvalidStoreSetting,
    InvalidStreamId,
    InvalidTopology,
    NoGenerationOperating,
    PartitionKeyError,
    StoreUnavailable,
    StreamsError,
    UnknownStreamIdVersion,
    UnsupportedKeyType,
    WriteFromThePast,
    WriteFromTheFuture,
    WriteOutsideAcceptanceWindow,
)
from .generations import DEFAULT_GENERATION_DELAY, DEFAULT_LEEWAY, Generation, Generations
from .generations_file import generations_from_json, generations_to_json, read_generations, write_generations
from .ring import cluster_topology, read_ring, read_ring_file
from .sharding import first_token_for_shard, shard_of, shards_of, token_for_next_shard
from .stream_id import STREAM_ID_DTYPE, StreamId
from .tokens import MAX_TOKEN, MIN_TOKEN, token_of, token_of_key, tokens_of, tokens_of_keys
from .topology import (
    DEFAULT_IGNORE_MSB,
    StreamPlacement,
    TokenRangeDescription,
    TopologyDescription,
    build_topology_description,
    rebuild_from_stream_set,
    rebuild_topology_description,
)

__all__ = [
    "DEFAULT_GENERATION_DELAY",
    "DEFAULT_IGNORE_MSB",
    "DEFAULT_LEEWAY",
    "MAX_TOKEN",
    "MIN_TOKEN",
    "STREAM_ID_DTYPE",
    "Generation",
    "GenerationDataUnavailable",
    "Generations",
    "InvalidGenerationsFile",
    "InvalidKeyValue",
    "InvalidStoreSetting",
    "InvalidStreamId",
    "InvalidTopology",
    "NoGenerationOperating",
    "PartitionKeyError",
    "StoreUnavailable",
    "StreamId",
    "StreamPlacement",
    "StreamsError",
    "TokenRangeDescription",
    "TopologyDescription",
    "UnknownStreamIdVersion",
    "UnsupportedKeyType",
    "WriteFromTheFuture",
    "WriteFromThePast",
    "WriteOutsideAcceptanceWindow",
    "build_topology_description",
    "cluster_topology",
    "compose",
    "first_token_for_shard",
    "generations_from_json",
    "generations_to_json",
    "partition_key",
    "read_generations",
    "read_ring",
    "read_ring_file",
    "rebuild_from_stream_set",
    "rebuild_topology_description",
    "serialize",
    "shard_of",
    "shards_of",
    "token_for_next_shard",
    "token_of",
    "token_of_key",
    "tokens_of",
    "tokens_of_keys",
    "write_generations",
]
