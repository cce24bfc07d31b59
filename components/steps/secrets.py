"""Turning a SecretRef of the stack config into a Pulumi secret. The value never leaves as plain
text: it is wrapped as a secret before anything else sees it."""

from __future__ import annotations

import os
from pathlib import Path

import pulumi

from components.config import ConfigError
from components.config.load import PROJECT
from components.config.schema import SecretRef


def resolve(ref: SecretRef, key_path: str, whole_file: bool = False) -> pulumi.Output[str]:
    """The secret's value, wrapped as a Pulumi secret. A missing secret stops `up` with the fix;
    a preview only warns, so that the todo list can be read on a machine without the secrets."""
    try:
        return pulumi.Output.secret(plain_value(ref, key_path, whole_file))
    except ConfigError as err:
        if not pulumi.runtime.is_dry_run():
            raise
        pulumi.log.warn(f"{err} (preview continues; `up` will stop here)")
        return pulumi.Output.secret("")


def plain_value(ref: SecretRef, key_path: str, whole_file: bool = False) -> str:
    """The bare value, for the program's own use only (the SSH key of the read-only probe);
    everything that reaches a resource goes through resolve(). A file gives its first line, or
    all of it with whole_file (a PEM key)."""
    where = f"{PROJECT}:{key_path}"
    if ref.config:
        value = pulumi.Config(PROJECT).get(ref.config)
        if value is None:
            raise ConfigError(f"{where}: secret config key '{ref.config}' is not set; "
                              f"fix: pulumi config set --secret {PROJECT}:{ref.config} VALUE")
        return value
    if ref.env:
        if ref.env not in os.environ:
            raise ConfigError(f"{where}: environment variable {ref.env} is not set; fix: export {ref.env}=…")
        return os.environ[ref.env]
    path = Path(os.path.expanduser(ref.file))
    if not path.is_file():
        raise ConfigError(f"{where}: secret file {path} does not exist; fix: create it (mode 0600) or change the path")
    text = path.read_text()
    return text if whole_file else text.splitlines()[0].strip()
