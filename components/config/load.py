"""Reading a stack config, from a stack file or from the running Pulumi program, into a
validated StackSpec; a bad config becomes one ConfigError naming the file, the key path,
what is wrong and the fix."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from .schema import StackSpec

PROJECT = "blackwell-serving"


class ConfigError(Exception):
    """A stack config that cannot be used. str() is the whole operator-facing message."""


def _key_path(loc: tuple) -> str:
    path = f"{PROJECT}:"
    for i, part in enumerate(loc):
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += ("" if i == 0 else ".") + str(part)
    return path


def _describe(err: dict) -> str:
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "string_pattern_mismatch":
        value = err.get("input")
        msg = (f"{value!r} has characters or a shape that is not allowed; "
               f"fix: write a value that matches {err['ctx']['pattern']}")
    elif err["type"] == "extra_forbidden":
        msg = "unknown key; fix: check its spelling against the schema (components/config/schema.py)"
    elif err["type"] == "missing":
        msg = "required key is missing; fix: add it (its meaning is in components/config/schema.py)"
    elif msg.startswith("Input should be ") and "fix:" not in msg:
        msg += f"; fix: make it {msg.removeprefix('Input should be ').split(',')[0]}"
    elif "fix:" not in msg:
        msg += "; fix: see this key's description in components/config/schema.py"
    return msg


# A cross-field problem that names its own key (relative to where it was found): "key.sub[0]: …".
_OWN_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*(?:\[[0-9]+\])*(?:\.[A-Za-z_][A-Za-z0-9_]*(?:\[[0-9]+\])*)*): (.*)$")


def format_errors(stack_file: str, exc: ValidationError) -> str:
    lines = [f"{stack_file}: the stack config is invalid; nothing was changed on any node."]
    for err in exc.errors():
        loc = tuple(p for p in err["loc"] if p not in ("function-after[_layout(), DeploymentSpec]",))
        # Cross-field problems carry their own key paths, one per line.
        for part in _describe(err).splitlines():
            own = _OWN_KEY.match(part) if err["type"] == "value_error" else None
            if own:
                key, rest = own.groups()
                base = _key_path(loc) if loc else f"{PROJECT}:"
                sep = "" if not loc or key.startswith("[") else "."
                lines.append(f"  {base}{sep}{key}: {rest}")
            else:
                lines.append(f"  {_key_path(loc)}: {part}")
    return "\n".join(lines)


def parse(values: dict[str, Any], stack_file: str) -> StackSpec:
    try:
        return StackSpec.model_validate(values)
    except ValidationError as exc:
        raise ConfigError(format_errors(stack_file, exc)) from None


def values_from_stack_file(path: Path) -> dict[str, Any]:
    """The project's keys of a Pulumi stack file, without the project prefix."""
    try:
        doc = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    config = doc.get("config") or {}
    prefix = f"{PROJECT}:"
    return {k.removeprefix(prefix): v for k, v in config.items() if k.startswith(prefix)}


def load_stack_file(path: Path) -> StackSpec:
    return parse(values_from_stack_file(path), str(path))


def load_from_pulumi() -> StackSpec:
    """The running program's stack config (pulumi.Config), validated."""
    import pulumi

    cfg = pulumi.Config(PROJECT)
    values = {}
    for key in StackSpec.model_fields:
        value = cfg.get_object(key)
        if value is not None:
            values[key] = value
    return parse(values, f"stacks/Pulumi.{pulumi.get_stack()}.yaml")
