"""The contract between the connector and Spark, which both depend on and which depends on neither:
the change model (change.py), CQL types and values (cql/), Cassandra's schema (tables/), the event
contract — Avro names, writer and reader, framing, the registry (avro/) — and the runtime every process
shares (runtime/). The `.avsc` files beside it are examples of what it writes."""
import warnings

# confluent-kafka's registry client imports authlib's httpx integration, which warns on import. authlib
# installs an "always" filter for its warnings when it loads, so ours goes in after it.
try:
    import authlib.deprecate  # noqa: F401
except ImportError:
    pass
warnings.filterwarnings("ignore", message="The httpx module is deprecated")
