"""The whole config of a stack, as full keys (`namespace:key`), split into what the schema
validates and what it does not: the stack's own keys, the secret values that `{config: KEY}`
references name, Pulumi's own keys, and mistakes (a misspelled namespace or key), each with the
key it was probably meant to be. Also: the engine's encoding of config values (PULUMI_CONFIG)."""

from __future__ import annotations

import difflib
import json
import typing
from collections.abc import Mapping
from typing import Any

PROJECT = "blackwell-serving"
# Namespaces that are not ours but fine in a stack config: Pulumi's own settings.
FOREIGN_OK = {"pulumi"}


def closest(word: str, choices: typing.Iterable[str]) -> str | None:
    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return found[0] if found else None


def did_you_mean(word: str, choices: typing.Iterable[str]) -> str:
    choices = sorted(choices)
    near = closest(word, choices)
    return f"did you mean '{near}'?" if near else f"use one of {', '.join(choices)}"


def _printable(key: Any) -> str:
    text = str(key)
    return text if len(text) <= 80 else text[:77] + "..."


def split_config(config: Mapping[Any, Any], fields: typing.Collection[str]) -> tuple[dict, dict, list[tuple[str, str]]]:
    """(schema values, other keys of our namespace, problems as (key path, message)); the first
    two without the `blackwell-serving:` prefix. Whether an other key is a secret that a
    `{config: KEY}` names is decided once the schema has been read (load.validate)."""
    values: dict[str, Any] = {}
    others: dict[str, Any] = {}
    problems: list[tuple[str, str]] = []
    for full, value in config.items():
        if not isinstance(full, str):
            problems.append((_printable(full), f"a config key must be text, not {type(full).__name__}; "
                                               f"fix: write it as {PROJECT}:KEY"))
            continue
        namespace, colon, key = full.partition(":")
        if not colon:
            hint = f"{PROJECT}:{full}" if full in fields else f"{PROJECT}:{closest(full, fields) or full}"
            problems.append((_printable(full), f"a config key needs its namespace; fix: write {hint}"))
        elif namespace == PROJECT:
            (values if key in fields else others)[key] = value
        elif namespace in FOREIGN_OK:
            continue
        else:
            near = closest(namespace, [PROJECT])
            normal = namespace.lower().replace("_", "-")
            if near or normal == PROJECT or key in fields:
                meant = key if key in fields else (closest(key, fields) or key)
                problems.append((_printable(full), f"unknown namespace '{namespace}'; fix: write {PROJECT}:{meant}"))
            else:
                problems.append((_printable(full), f"this program reads no config of namespace '{namespace}'; "
                                                   f"fix: remove it, or move it under {PROJECT}:"))
    return values, others, problems


def _plain_string(annotation: Any) -> bool:
    """A field that takes text only (the engine passes it without JSON quoting)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _plain_string(typing.get_args(annotation)[0])
    return annotation is str


def engine_view(config: Mapping[Any, Any], fields: Mapping[str, Any]) -> dict[Any, Any]:
    """A stack file's config as the engine hands it to the program: each value encoded (strings as
    they are, the rest as JSON: mapping keys become text) and decoded again. The file path and
    the engine path then validate the same data."""
    passed: dict[Any, Any] = {}
    for key, value in config.items():
        if isinstance(value, str):
            passed[key] = value
            continue
        try:
            passed[key] = json.dumps(value, default=str)
        except (ValueError, TypeError, RecursionError):  # a recursive alias: the schema says what is wrong
            passed[key] = value
    return decode_engine_config(passed, fields)


def decode_engine_config(config: Mapping[Any, Any], fields: Mapping[str, Any]) -> dict[Any, Any]:
    """The engine passes every value as text: structured values (lists, objects, numbers,
    booleans) as JSON, strings as they are. A value that is not JSON stays text, and the schema
    says what is wrong with it."""
    out: dict[str, Any] = {}
    for full, raw in config.items():
        namespace, _, key = full.partition(":") if isinstance(full, str) else ("", "", "")
        field = fields.get(key) if namespace == PROJECT else None
        if field is None or not isinstance(raw, str) or _plain_string(field.annotation):
            out[full] = raw
            continue
        try:
            out[full] = json.loads(raw)
        except (ValueError, RecursionError):
            out[full] = raw
    return out
