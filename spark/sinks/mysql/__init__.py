"""MySQL and MariaDB: the log (`log`), a typed log per table (`typed`) or a mirror of each table (`mirror`), with
the type mapping they share (`types`)."""
