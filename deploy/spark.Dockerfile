# The ringtail Spark job, and the subscription runner (entrypoint python -m spark.server), on Spark's
# own image (the pyspark pin in pyproject.toml is 4.0.0). The wheel (with the native core, Rust) is
# built on the same base in a throwaway stage, so it links against the same C library.
FROM rust:1.95-slim-bookworm AS rust

FROM apache/spark:4.0.0-scala2.13-java17-python3-ubuntu AS build
USER root
COPY --from=rust /usr/local/cargo /usr/local/cargo
COPY --from=rust /usr/local/rustup /usr/local/rustup
ENV CARGO_HOME=/usr/local/cargo RUSTUP_HOME=/usr/local/rustup PATH=/usr/local/cargo/bin:$PATH
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md ./
COPY connector ./connector
COPY spark ./spark
COPY schemas ./schemas
RUN pip wheel --no-cache-dir --no-deps -w /wheels .

FROM apache/spark:4.0.0-scala2.13-java17-python3-ubuntu
USER root
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir "$(ls /wheels/*.whl)[spark]" && rm -rf /wheels
USER spark
# With network access in a container, Spark resolves its Kafka/Avro/Delta jars itself.
ENV RINGTAIL_JOB_SPARK_PACKAGES=org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.0,org.apache.spark:spark-avro_2.13:4.0.0,io.delta:delta-spark_2.13:4.0.0
ENV RINGTAIL_SERVER_SPARK_PACKAGES=$RINGTAIL_JOB_SPARK_PACKAGES
ENTRYPOINT ["python", "-m", "spark.job"]
