# The ringtail connector: runs beside a Cassandra node, reading its cdc_raw directory.
FROM python:3.11-slim
WORKDIR /opt/ringtail
COPY pyproject.toml README.md ./
COPY connector ./connector
COPY spark ./spark
COPY schemas ./schemas
RUN pip install --no-cache-dir .
ENTRYPOINT ["python", "-m", "connector"]
CMD ["run"]
