"""Subscriptions: named deliveries of one table to one sink, with their own filter, columns,
operations, start and progress per token range, kept in the cluster (`registry`), changed through
`control` from the command line or statements (`python -m spark.subscriptions`)."""
