"""Typed, frozen settings read from a YAML file and environment variables (one scheme for every process).

Each process has its own variable prefix — `RINGTAIL_CONNECTOR_`, `RINGTAIL_JOB_` (the local stack's
scripts use `RINGTAIL_STACK_`) — so one process's variables never reach another's settings.
Precedence: explicit arguments, then the environment, then the file, then the defaults.
"""
from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict
from pydantic_settings import YamlConfigSettingsSource

S = TypeVar("S", bound="FileSettings")


class FileSettings(BaseSettings):
    # Subclasses set their env_prefix; a nested setting's variable joins its names with `__`
    # (RINGTAIL_CONNECTOR_KAFKA_SECURITY__SASL_PASSWORD).
    # A refused value is not echoed in the error: it may be a password.
    model_config = SettingsConfigDict(frozen=True, extra="forbid", env_nested_delimiter="__",
                                      hide_input_in_errors=True)

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings, dotenv_settings,
                                   file_secret_settings) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, env_settings, YamlConfigSettingsSource(settings_cls)

    @classmethod
    def load(cls: type[S], config_file: Path | None = None, **overrides) -> S:
        """Settings from `config_file` (YAML), overridden by the environment and `overrides`."""
        if config_file is not None and not Path(config_file).is_file():
            raise FileNotFoundError(f"configuration file {config_file} does not exist")
        from_file = type(cls.__name__, (cls,), {
            "model_config": SettingsConfigDict(**{**cls.model_config, "yaml_file": config_file})})
        return from_file(**overrides)


def split_hosts(value):
    """A comma-separated host list (as environment variables give it) as a tuple."""
    return tuple(h.strip() for h in value.split(",") if h.strip()) if isinstance(value, str) else value
