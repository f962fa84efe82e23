"""The shapes a sink's rows take, named by its settings (`settings`) and by the sinks that write them."""
from __future__ import annotations

from typing import Literal

MIRROR = "mirror"
Layout = Literal["log", "typed", MIRROR]  # the log, a typed log per table, or a mirror of each table
KafkaFormat = Literal["json", "avro"]  # the Kafka sink's record values
IMAGE = "image"
# The sinks that send each change (Kafka, HTTP): the log, or each change's images (the rows before and after it).
ChangeLayout = Literal["log", IMAGE]
