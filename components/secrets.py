"""Turning a SecretRef of the stack config into a Pulumi secret. The value never leaves as plain
text: it is wrapped as a secret before anything else sees it."""

from __future__ import annotations

import os
from pathlib import Path

import pulumi

from .config import ConfigError
from .config.load import PROJECT
from .config.schema import SecretRef


def resolve(ref: SecretRef, key_path: str) -> pulumi.Output[str]:
    """The secret's value, wrapped as a Pulumi secret. A missing secret stops `up` with the fix;
    a preview only warns, so that the todo list can be read on a machine without the secrets."""
    try:
        return _resolve(ref, key_path)
    except ConfigError as err:
        if not pulumi.runtime.is_dry_run():
            raise
        pulumi.log.warn(f"{err} (preview continues; `up` will stop here)")
        return pulumi.Output.secret("")


def _resolve(ref: SecretRef, key_path: str) -> pulumi.Output[str]:
    where = f"{PROJECT}:{key_path}"
    if ref.config:
        value = pulumi.Config(PROJECT).get_secret(ref.config)
        if value is None:
            raise ConfigError(f"{where}: secret config key '{ref.config}' is not set; "
                              f"fix: pulumi config set --secret {PROJECT}:{ref.config} VALUE")
        return value
    if ref.env:
        if ref.env not in os.environ:
            raise ConfigError(f"{where}: environment variable {ref.env} is not set; fix: export {ref.env}=…")
        return pulumi.Output.secret(os.environ[ref.env])
    path = Path(os.path.expanduser(ref.file))
    if not path.is_file():
        raise ConfigError(f"{where}: secret file {path} does not exist; fix: create it (mode 0600) or change the path")
    return pulumi.Output.secret(path.read_text().splitlines()[0].strip())
