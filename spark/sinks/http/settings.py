"""The HTTP sink's settings."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import PositiveFloat, PositiveInt, SecretStr, model_validator

from schemas.runtime.access import secret

from ..settings import Flag, HttpUrl, Imaging, SinkContext

if TYPE_CHECKING:
    from ..contract import Sink


class HttpSettings(Imaging, kind="http"):
    url: HttpUrl
    batch_size: PositiveInt = 500
    timeout: PositiveFloat = 10.0
    # Sent as a bearer token; a subscription takes it from a file (read at each start), never in clear.
    token: SecretStr | None = None
    token_file: Path | None = None
    # The authority the receiver's certificate comes from (unset: the system's); `verify` false trusts any.
    ca: Path | None = None
    verify: Flag = True
    attempts: PositiveInt = 6

    @model_validator(mode="after")
    def _one_of_each(self):
        if self.token is not None and self.token_file is not None:
            raise ValueError("token and token_file are both set: give one")
        if self.ca is not None and not self.verify:
            raise ValueError("ca is set but verify is false: give one")
        return self

    def open(self, spark: Any, context: SinkContext) -> Sink:
        from .sink import HttpSink

        return HttpSink(self.url, app_id=context.app_id, batch_size=self.batch_size, timeout=self.timeout,
                        token=secret(self.token, self.token_file, "token"), verify=self.verify, ca=self.ca,
                        attempts=self.attempts, images=self.images_at(spark, context))

    def target(self) -> str:
        return f"http:{self.url}"
