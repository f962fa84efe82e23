"""HTTP: log rows POSTed as JSON arrays (`sink`)."""
