"""The HTTP sink's settings."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import PositiveFloat, PositiveInt, SecretStr

from ..settings import Flag, HttpUrl, SinkContext, SinkSettings

if TYPE_CHECKING:
    from .. import Sink


class HttpSettings(SinkSettings, kind="http"):
    url: HttpUrl
    batch_size: PositiveInt = 500
    timeout: PositiveFloat = 10.0
    token: SecretStr | None = None  # sent as a bearer token
    verify: Flag = True
    attempts: PositiveInt = 6

    def open(self, spark: Any, context: SinkContext) -> Sink:
        from .sink import HttpSink

        return HttpSink(self.url, app_id=context.app_id, batch_size=self.batch_size, timeout=self.timeout,
                        token=self.token.get_secret_value() if self.token else None, verify=self.verify,
                        attempts=self.attempts)

    def target(self) -> str:
        return f"http:{self.url}"
