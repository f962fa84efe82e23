"""Kafka: log rows as JSON or Avro records, in a transaction per micro-batch (`sink`, `avro_rows`)."""
