"""Where Spark keeps what ringtail names — checkpoints, Delta tables: a local path, or a URI of any file
system Spark's Hadoop client reads (`s3a://bucket/x`, `hdfs://nn/x`, `abfss://c@a.dfs.core.windows.net/x`,
`gs://bucket/x`, `file:/x`). A `Location` keeps the text it was given — a `pathlib.Path` would fold
`s3a://b/x` into `s3a:/b/x` — joins with `/`, and reads the few files ringtail reads itself (Spark's
offsets, beside the sink write) and writes the few it keeps (an image sink's purge mark): local ones with
pathlib, others with pyarrow's file systems.

S3 (`s3a://`) is reached as AWS's own tools are told to, by the standard environment (`S3Access`): Spark's
S3A on the driver and every executor, and pyarrow here, the same way.
"""
from __future__ import annotations

import configparser
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from pydantic import SecretStr

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
# Hadoop's names for the stores pyarrow names otherwise (hdfs, gs, abfs and abfss it names alike).
_PYARROW_SCHEME = {"gcs": "gs"}
_S3_SCHEMES = ("s3a", "s3n", "s3")


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

    def write_text(self, text: str) -> None:
        """Replace the file whole: a reader sees the old text or the new, never a part (a local file is
        renamed into place; an object store's put is whole)."""
        if self.is_local:
            path = self.path
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(f".{path.name}.partial")
            partial.write_text(text)
            os.replace(partial, path)
            return
        filesystem, path = self._remote()
        filesystem.create_dir(path.rsplit("/", 1)[0], recursive=True)
        with filesystem.open_output_stream(path) as stream:
            stream.write(text.encode())

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
        if self.scheme in _S3_SCHEMES:
            return S3Access.from_environment().filesystem(), self.uri.split("://", 1)[1]
        from pyarrow import fs

        scheme = _PYARROW_SCHEME.get(self.scheme, self.scheme)
        return fs.FileSystem.from_uri(scheme + self.uri[len(self.scheme):])

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        """A setting of this type takes a path or a URI (text or a Path), and dumps as text."""
        from pydantic_core import core_schema

        return core_schema.no_info_plain_validator_function(
            cls.of, serialization=core_schema.plain_serializer_function_ser_schema(str))


class StorageAccessError(ValueError):
    """The environment names S3 credentials that cannot be read (a profile missing from its file)."""


@dataclass(frozen=True)
class S3Access:
    """How `s3a://` locations are reached, read from the environment AWS's own tools read:

    - the endpoint of an S3-compatible store: `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL` (its buckets are
      then addressed by path, as such stores serve them); the region: `AWS_REGION` or `AWS_DEFAULT_REGION`;
    - the keys: `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` (and `AWS_SESSION_TOKEN`), or else a shared
      credentials file: `AWS_SHARED_CREDENTIALS_FILE` (default `~/.aws/credentials`), profile `AWS_PROFILE`
      (default `default`).

    None of it set, S3A and pyarrow use their own providers (instance roles, web identity). The keys reach the
    executors as Spark configuration (`spark.hadoop.fs.s3a.*`, which Spark redacts in its UI and logs):
    executors do not inherit the driver's environment."""

    endpoint: str | None = None
    region: str | None = None
    key_id: str | None = None
    secret: SecretStr | None = field(default=None, repr=False)
    session_token: SecretStr | None = field(default=None, repr=False)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> S3Access:
        key_id, secret, token = (environ.get(name) or None for name in
                                 ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"))
        if not (key_id and secret):
            key_id, secret, token = _profile_keys(environ)
        return cls(endpoint=environ.get("AWS_ENDPOINT_URL_S3") or environ.get("AWS_ENDPOINT_URL") or None,
                   region=environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or None,
                   key_id=key_id, secret=SecretStr(secret) if secret else None,
                   session_token=SecretStr(token) if token else None)

    def hadoop_conf(self) -> dict[str, str]:
        """Spark configuration for S3A: what the environment says, nothing else."""
        prefix = "spark.hadoop.fs.s3a."
        conf = {}
        if self.endpoint:
            conf[f"{prefix}endpoint"] = self.endpoint
            conf[f"{prefix}path.style.access"] = "true"
        if self.region:
            conf[f"{prefix}endpoint.region"] = self.region
        if self.key_id and self.secret:
            conf[f"{prefix}access.key"] = self.key_id
            conf[f"{prefix}secret.key"] = self.secret.get_secret_value()
            if self.session_token:
                conf[f"{prefix}session.token"] = self.session_token.get_secret_value()
                conf[f"{prefix}aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
        return conf

    def filesystem(self):
        """pyarrow's S3 file system, reaching the store as Spark does."""
        from pyarrow import fs

        keys = {}
        if self.key_id and self.secret:
            keys = {"access_key": self.key_id, "secret_key": self.secret.get_secret_value(),
                    "session_token": self.session_token.get_secret_value() if self.session_token else None}
        return fs.S3FileSystem(endpoint_override=self.endpoint, region=self.region, **keys)


def _profile_keys(environ: Mapping[str, str]) -> tuple[str | None, str | None, str | None]:
    """The keys of the shared credentials file's profile; none when there is no file (nor a profile named)."""
    named = environ.get("AWS_PROFILE")
    file = Path(environ.get("AWS_SHARED_CREDENTIALS_FILE") or Path.home() / ".aws" / "credentials").expanduser()
    if not file.is_file():
        if named or environ.get("AWS_SHARED_CREDENTIALS_FILE"):
            raise StorageAccessError(f"S3 credentials: {file} does not exist")
        return None, None, None
    profiles = configparser.ConfigParser(interpolation=None)
    try:
        profiles.read(file)
    except configparser.Error as exc:
        raise StorageAccessError(f"S3 credentials: {file} is not a credentials file ({type(exc).__name__})") from None
    profile = named or "default"
    if profile not in profiles:
        if named:
            raise StorageAccessError(f"S3 credentials: no profile {profile!r} in {file}")
        return None, None, None
    section = profiles[profile]
    key_id, secret = section.get("aws_access_key_id"), section.get("aws_secret_access_key")
    if not (key_id and secret):
        raise StorageAccessError(f"S3 credentials: profile {profile!r} of {file} lacks aws_access_key_id or "
                                 "aws_secret_access_key")
    return key_id, secret, section.get("aws_session_token")
