"""Durable small files: the connector's positions and its copy of the schema.

A file is replaced whole: written beside its final name, flushed to disk, renamed over the old one,
and the directory flushed, so a crash leaves either the old or the new content, never a mix.
"""
from __future__ import annotations

import os
from pathlib import Path


def write_atomically(path: str | os.PathLike, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    with open(temporary, "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)  # makes the rename itself durable
    finally:
        os.close(directory)
