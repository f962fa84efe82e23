# The ringtail Spark job, and the subscription runner (entrypoint python -m spark.server), on Spark's
# own image (the pyspark pin in pyproject.toml is 4.0.0).
FROM apache/spark:4.0.0-scala2.13-java17-python3-ubuntu
USER root
WORKDIR /opt/ringtail
COPY pyproject.toml README.md ./
COPY connector ./connector
COPY spark ./spark
COPY schemas ./schemas
RUN pip install --no-cache-dir '.[spark]'
USER spark
# With network access in a container, Spark resolves its Kafka/Avro/Delta jars itself.
ENV RINGTAIL_JOB_SPARK_PACKAGES=org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.0,org.apache.spark:spark-avro_2.13:4.0.0,io.delta:delta-spark_2.13:4.0.0
ENV RINGTAIL_SERVER_SPARK_PACKAGES=$RINGTAIL_JOB_SPARK_PACKAGES
ENTRYPOINT ["python", "-m", "spark.job"]
