# The ringtail Spark job, and the subscription runner (entrypoint python -m spark.server): Python 3.11 (as
# ringtail requires), Java 17 from Debian, and Spark from the pyspark distribution pinned in pyproject.toml
# (the image's own Spark: local[*] unless a master is given, and the driver of a cluster otherwise,
# shipping ringtail to its executors). The wheel (with the native core, Rust) is built in a throwaway stage
# on the same Debian release, so it links against the same C library.
FROM rust:1.95-slim-bookworm AS rust

FROM python:3.11-slim-bookworm AS build
COPY --from=rust /usr/local/cargo /usr/local/cargo
COPY --from=rust /usr/local/rustup /usr/local/rustup
ENV CARGO_HOME=/usr/local/cargo RUSTUP_HOME=/usr/local/rustup PATH=/usr/local/cargo/bin:$PATH
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md Cargo.toml Cargo.lock rustfmt.toml ./
COPY connector ./connector
COPY spark ./spark
COPY schemas ./schemas
COPY native ./native
RUN pip wheel --no-cache-dir --no-deps -w /wheels .

FROM python:3.11-slim-bookworm
# procps: Spark's launch scripts call ps.
RUN apt-get update && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir "$(ls /wheels/*.whl)[spark]" && rm -rf /wheels \
    && useradd --create-home --uid 185 spark && mkdir -p /var/lib/ringtail && chown spark /var/lib/ringtail
USER spark
WORKDIR /home/spark
# With network access in a container, Spark resolves its Kafka/Avro/Delta jars itself.
ENV RINGTAIL_JOB_SPARK_PACKAGES=org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.0,org.apache.spark:spark-avro_2.13:4.0.0,io.delta:delta-spark_2.13:4.0.0
ENV RINGTAIL_SERVER_SPARK_PACKAGES=$RINGTAIL_JOB_SPARK_PACKAGES
ENTRYPOINT ["python", "-m", "spark.job"]
