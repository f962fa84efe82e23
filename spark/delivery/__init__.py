"""Delivery, which the job and every subscription's runner share: a Spark session and the query that reads
the connector's change events from Kafka (`pipeline`), decodes them into CDC log rows (`events`,
`native_events`), gives them stream ids (`assign`, `generations`), and writes each micro-batch to a sink
exactly once (`BatchWriter`: selection, tally, publication of generations), with the settings every
Spark process reads (`settings`)."""
