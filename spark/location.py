"""Where Spark keeps what ringtail names — checkpoints, Delta tables: a local path, or a URI of any file
system Spark's Hadoop client reads (`s3a://bucket/x`, `hdfs://nn/x`, `abfss://c@a.dfs.core.windows.net/x`,
`gs://bucket/x`, `file:/x`). A `Location` keeps the text it was given — a `pathlib.Path` would fold
`s3a://b/x` into `s3a:/b/x` — joins with `/`, and reads the few files ringtail reads itself (Spark's
offsets, beside the sink write): local ones with pathlib, others with pyarrow's file systems, which take
their credentials from the environment as Hadoop's S3A does (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
`AWS_ENDPOINT_URL`).
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
# Hadoop's names for the stores pyarrow names otherwise (hdfs, gs, abfs and abfss it names alike).
_PYARROW_SCHEME = {"s3a": "s3", "s3n": "s3", "gcs": "gs"}


class Location:
    """A local path or a file system URI, as given; `/` joins, `str()` gives it back for Spark."""

    __slots__ = ("uri",)

    def __init__(self, value: str | os.PathLike) -> None:
        text = os.fspath(value)
        if not text:
            raise ValueError("an empty location")
        scheme = _SCHEME.match(text)
        # (A scheme of one letter is a Windows drive, not a URI.) `s3a:/b/x` is what a Path makes of one.
        if (scheme and len(scheme.group(1)) > 1 and scheme.group(1).lower() != "file"
                and not text[scheme.end():].startswith("//")):
            raise ValueError(f"{text!r}: a URI needs // after its scheme ({scheme.group(1)}://…)")
        object.__setattr__(self, "uri", text)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a Location is immutable")

    @classmethod
    def of(cls, value: Location | str | os.PathLike) -> Location:
        return value if isinstance(value, Location) else cls(value)

    @property
    def scheme(self) -> str:
        """The URI's scheme, lower case; "" for a plain path."""
        match = _SCHEME.match(self.uri)
        return match.group(1).lower() if match and len(match.group(1)) > 1 else ""

    @property
    def is_local(self) -> bool:
        return self.scheme in ("", "file")

    @property
    def path(self) -> Path:
        """The local path (of a plain path or a `file:` URI); ValueError for another file system."""
        if not self.scheme:
            return Path(self.uri)
        if self.scheme == "file":
            return Path(unquote(urlsplit(self.uri).path))
        raise ValueError(f"{self.uri} is not on the local file system")

    @property
    def name(self) -> str:
        return self.uri.rstrip("/").rsplit("/", 1)[-1]

    @property
    def parent(self) -> Location:
        return Location(self.uri.rstrip("/").rsplit("/", 1)[0] or "/")

    def __truediv__(self, part: str | os.PathLike) -> Location:
        return Location(f"{self.uri.rstrip('/')}/{os.fspath(part).strip('/')}")

    def __fspath__(self) -> str:
        return str(self.path)  # a remote location has no local path: ValueError

    def __str__(self) -> str:
        return self.uri

    def __repr__(self) -> str:
        return f"Location({self.uri!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Location) and other.uri == self.uri

    def __hash__(self) -> int:
        return hash(self.uri)

    # The files ringtail reads of Spark's checkpoint.

    def exists(self) -> bool:
        if self.is_local:
            return self.path.exists()
        from pyarrow import fs

        filesystem, path = self._remote()
        return filesystem.get_file_info(path).type != fs.FileType.NotFound

    def is_dir(self) -> bool:
        if self.is_local:
            return self.path.is_dir()
        from pyarrow import fs

        filesystem, path = self._remote()
        return filesystem.get_file_info(path).type == fs.FileType.Directory

    def read_text(self) -> str:
        if self.is_local:
            return self.path.read_text()
        filesystem, path = self._remote()
        with filesystem.open_input_stream(path) as stream:
            return stream.read().decode()

    def names(self) -> list[str]:
        """The names in this directory; [] when it does not exist."""
        if self.is_local:
            return [p.name for p in self.path.iterdir()] if self.path.is_dir() else []
        from pyarrow import fs

        filesystem, path = self._remote()
        if filesystem.get_file_info(path).type != fs.FileType.Directory:
            return []
        return [info.base_name for info in filesystem.get_file_info(fs.FileSelector(path))]

    def _remote(self):
        from pyarrow import fs

        scheme = _PYARROW_SCHEME.get(self.scheme, self.scheme)
        return fs.FileSystem.from_uri(scheme + self.uri[len(self.scheme):])

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        """A setting of this type takes a path or a URI (text or a Path), and dumps as text."""
        from pydantic_core import core_schema

        return core_schema.no_info_plain_validator_function(
            cls.of, serialization=core_schema.plain_serializer_function_ser_schema(str))
