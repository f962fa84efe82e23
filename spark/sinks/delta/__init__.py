"""Delta Lake: the log or a typed log per table (`sink`), or a mirror of each table (`mirror`)."""
