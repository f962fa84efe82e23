# Cassandra 5.0 with ringtail's CDC configuration, rendered from the same template as the local stack.
FROM python:3.11-slim AS config
COPY deploy/local /deploy/local
RUN RINGTAIL_STACK_HOST=127.0.0.1 python /deploy/local/stack.py cassandra-yaml > /cassandra.yaml

FROM cassandra:5.0.8
# The image's entrypoint rewrites listen/rpc addresses and seeds for the container's network.
COPY --from=config /cassandra.yaml /etc/cassandra/cassandra.yaml
