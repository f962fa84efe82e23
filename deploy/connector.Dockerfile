# The ringtail connector: runs beside a Cassandra node, reading its cdc_raw directory.
# The wheel (with the native core, Rust) is built in a throwaway stage; the image keeps no toolchain.
FROM rust:1.95-slim-bookworm AS rust

FROM python:3.11-slim AS build
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

FROM python:3.11-slim
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
ENTRYPOINT ["python", "-m", "connector"]
CMD ["run"]
