"""Reading a stack config, from a stack file or from the running Pulumi program, into a
validated StackSpec. Both paths end in the same validate(): the whole config namespace (unknown
keys and namespaces refused, with the key meant), the schema (schema.py, with references.py,
crosscheck.py and plaintext.py), and the secrets that `{config: KEY}` names. A bad config
becomes one ConfigError naming the file, each key path, what is wrong and the fix."""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from components.config.checks import cross_key_problems
from components.config.namespace import PROJECT, decode_engine_config, did_you_mean, engine_view, split_config
from components.config.plaintext import config_ref_problems, secret_refs
from components.config.schema import StackSpec
from components.config.stackfile import StackFileProblem, read_stack_file
from components.config.venv import pin_problems, pinned_config_keys

__all__ = ["PROJECT", "ConfigError", "load_from_pulumi", "load_stack_file", "parse", "validate",
           "values_from_stack_file"]

HEADER = "{file}: the stack config is invalid; nothing was changed on any node."
SCHEMA_DOC = "docs/stack-reference.md"


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


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:40]}… ({len(str(value))} characters)"


def _fields_at(loc: tuple) -> list[str]:
    """The keys the schema allows where `loc` points (for a misspelled key's suggestion)."""
    model: Any = StackSpec
    for part in loc:
        if isinstance(model, type) and issubclass(model, BaseModel):
            if not isinstance(part, str) or part not in model.model_fields:
                return []
            model = model.model_fields[part].annotation
        model = _inner(model, part)
    return list(model.model_fields) if isinstance(model, type) and issubclass(model, BaseModel) else []


def _inner(annotation: Any, part: Any) -> Any:
    """The model an annotation holds, through Optional, Annotated and list[...]."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            members = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(members) != 1:
                return annotation
            annotation = members[0]
        elif origin is list and isinstance(part, int):
            annotation = typing.get_args(annotation)[0]
            part = None
        else:
            return annotation


def _describe(err: dict) -> str:
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "string_pattern_mismatch":
        msg = (f"{_short(err.get('input'))} has characters or a shape that is not allowed; "
               f"fix: write a value that matches {err['ctx']['pattern']}")
    elif err["type"] == "extra_forbidden":
        fields = _fields_at(tuple(err["loc"][:-1]))
        hint = did_you_mean(str(err["loc"][-1]), fields) if fields else f"see {SCHEMA_DOC}"
        msg = f"unknown key; fix: check its spelling — {hint} ({SCHEMA_DOC})"
    elif err["type"] == "missing":
        msg = f"required key is missing; fix: add it (its meaning is in {SCHEMA_DOC})"
    elif err["type"] == "finite_number":
        msg = "must be a finite number (not .inf or .nan); fix: write a number"
    elif err["type"] == "string_too_long":
        limit = err["ctx"]["max_length"]
        msg = (f"is {len(str(err.get('input')))} characters long; "
               f"fix: shorten it to at most {limit} characters")
    elif msg.startswith("Input should be ") and "fix:" not in msg:
        msg = re.sub(r" or instance of \w+", " (a mapping)", msg)
        msg += f"; fix: make it {msg.removeprefix('Input should be ').split(',')[0]}"
        if err.get("input", "") is None:
            msg = "is null (empty) but s" + msg.removeprefix("Input s")
    elif "fix:" not in msg:
        msg += f"; fix: see this key's description in {SCHEMA_DOC}"
    return msg


# A cross-field problem that names its own key (relative to where it was found): "key.sub[0]: …".
_OWN_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*(?:\[[0-9]+\])*(?:\.[A-Za-z_][A-Za-z0-9_]*(?:\[[0-9]+\])*)*): (.*)$")
# Parts of a pydantic location that name a validator or a union member, not a key.
_UNION_MEMBERS = {"constrained-str", "str", "int", "float", "bool"}


def _loc(err: dict) -> tuple[tuple, bool]:
    """The key path of an error, and whether it is one member's error of a union of scalars."""
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and (p.startswith("function-") or p == "[key]")))
    if len(loc) >= 3 and loc[-1] in _UNION_MEMBERS and loc[-3] == "speculative":
        return loc[:-1], True
    return loc, False


def error_lines(exc: ValidationError, skip: Collection[str] = ()) -> list[str]:
    """One line per problem: '  blackwell-serving:key.path: what; fix: how' (the key paths of
    `skip`, top-level keys, are left out)."""
    lines: list[str] = []
    for err in exc.errors():
        loc, union = _loc(err)
        if loc and loc[0] in skip:
            continue
        if union:  # one line for a value that no member of the union takes
            lines.append(f"  {_key_path(loc)}: must be a string (at most 4096 characters), an integer, a finite "
                         f"number or a boolean; fix: write one of those")
            continue
        lines += _problem_lines(loc, _describe(err), own_keys=err["type"] == "value_error")
    return list(dict.fromkeys(lines))


def _problem_lines(loc: tuple, text: str, *, own_keys: bool) -> list[str]:
    """Cross-field problems carry their own key paths (relative to `loc`), one per line."""
    lines = []
    for part in text.splitlines():
        own = _OWN_KEY.match(part) if own_keys else None
        if own:
            key, rest = own.groups()
            base = _key_path(loc) if loc else f"{PROJECT}:"
            sep = "" if not loc or key.startswith("[") else "."
            lines.append(f"  {base}{sep}{key}: {rest}")
        else:
            lines.append(f"  {_key_path(loc)}: {part}")
    return lines


def _error(stack_file: str, lines: list[str]) -> ConfigError:
    return ConfigError("\n".join([HEADER.format(file=stack_file), *lines]))


def parse(values: dict[str, Any], stack_file: str) -> StackSpec:
    """The schema and its cross-field checks on the project's keys (without the prefix). A
    stack's whole config goes through validate(), which also checks the namespace and secrets."""
    spec, lines = _checked_spec(values)
    if spec is None:
        raise _error(stack_file, lines)
    return spec


def _checked_spec(values: Any, skip: Collection[str] = ()) -> tuple[StackSpec | None, list[str]]:
    """The models of schema.py, then the rules across keys (checks.py) once they hold: the spec, or
    None and one line per problem."""
    try:
        spec = StackSpec.model_validate(values)
    except ValidationError as exc:
        return None, error_lines(exc, skip=skip)
    except RecursionError:
        return None, [f"  {PROJECT}: nested too deeply; fix: write the config as {SCHEMA_DOC} shows"]
    cross = cross_key_problems(spec)
    if cross:  # worded as a model validator's problems are
        return None, _problem_lines((), _describe({"msg": "\n".join(cross), "type": "value_error"}), own_keys=True)
    return spec, []


def validate(config: Mapping[Any, Any], secret_keys: Collection[str], stack_file: str) -> StackSpec:
    """The one validation of a stack's config, whichever path read it. `config`: every key as
    `namespace:key` with its value; `secret_keys`: the full keys whose values are Pulumi secrets."""
    fields = StackSpec.model_fields
    values, others, problems = split_config(config, fields)
    lines = [f"  {key}: {msg}" for key, msg in problems]
    secret = {k.removeprefix(f"{PROJECT}:") for k in secret_keys if isinstance(k, str) and k.startswith(f"{PROJECT}:")}
    # A schema key holding a secret: the engine would hand its decrypted value to the messages.
    encrypted = sorted(k for k in values if k in secret)
    for key in encrypted:
        lines.append(f"  {PROJECT}:{key}: holds an encrypted (secure) value; fix: keep secrets in keys of their own "
                     f"(pulumi config set --secret {PROJECT}:NAME VALUE) and refer to them with {{config: NAME}}")
    spec, problem_lines = _checked_spec(values, skip=encrypted)
    lines += problem_lines
    if spec is None:
        referenced = _config_refs(values)
    else:
        referenced = {ref.config for _, ref in secret_refs(spec) if ref.config} | pinned_config_keys(spec)
        lines += [f"  {PROJECT}:{p}" for p in config_ref_problems(spec, others, secret)]
        lines += [f"  {PROJECT}:{p}" for p in pin_problems(spec, others, secret)]
    for key in others:
        if key not in referenced:
            name = str(key)[:80]
            lines.append(f"  {PROJECT}:{name}: unknown key; fix: check its spelling — "
                         f"{did_you_mean(str(key), fields)} ({SCHEMA_DOC}); a key that holds a secret must be "
                         f"named by a {{config: KEY}} reference")
    if lines:
        raise _error(stack_file, list(dict.fromkeys(lines))) from None
    return spec


def _config_refs(value: Any, seen: set[int] | None = None) -> set[str]:
    """Keys that `{config: KEY}` mappings of an unvalidated config name (so that a secret's key is
    not also reported unknown while the schema has other problems)."""
    seen = set() if seen is None else seen
    if id(value) in seen or not isinstance(value, (Mapping, list)):
        return set()
    seen.add(id(value))
    found: set[str] = set()
    if isinstance(value, Mapping):
        if isinstance(value.get("config"), str) and set(value) <= {"config", "env", "file"}:
            found.add(value["config"])
        value = list(value.values())
    for v in value:
        found |= _config_refs(v, seen)
    return found


def values_from_stack_file(path: Path) -> dict[str, Any]:
    """The project's keys of a Pulumi stack file, without the project prefix."""
    config, _, _ = _read(path)
    prefix = f"{PROJECT}:"
    return {k.removeprefix(prefix): v for k, v in config.items() if isinstance(k, str) and k.startswith(prefix)}


def _read(path: Path) -> tuple[dict, set[str], set[str]]:
    try:
        return read_stack_file(path)
    except StackFileProblem as problem:
        raise _error(str(path), [f"  {key}: {msg}" for key, msg in problem.problems]) from None


def load_stack_file(path: Path) -> StackSpec:
    """A stack file, validated as the engine would pass it to the program."""
    config, secure, inside = _read(path)
    return validate(engine_view(config, StackSpec.model_fields), secure | inside, str(path))


def engine_config() -> tuple[dict[str, Any], set[str]]:
    """Every config key the engine passed to this program (not only the ones the schema knows),
    decoded, and the secret ones. The language host hands them over in PULUMI_CONFIG and
    PULUMI_CONFIG_SECRET_KEYS; values set in-process (Automation API, mocks) are added."""
    from pulumi.runtime import config as runtime_config

    try:
        passed = runtime_config.get_config_env()
        secret = set(runtime_config.get_config_secret_keys_env())
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"the engine's config (PULUMI_CONFIG) cannot be read: {exc}; "
                          f"fix: run the program with `pulumi preview` / `pulumi up`") from None
    if not isinstance(passed, Mapping):
        raise ConfigError("the engine's config (PULUMI_CONFIG) is not a mapping; "
                          "fix: run the program with `pulumi preview` / `pulumi up`")
    merged = {**passed, **runtime_config.CONFIG.get()}
    secret |= set(getattr(runtime_config, "_SECRET_KEYS").get())
    return decode_engine_config(merged, StackSpec.model_fields), {k for k in secret if isinstance(k, str)}


def load_from_pulumi() -> StackSpec:
    """The running program's whole stack config, validated as a stack file is."""
    import pulumi

    config, secret = engine_config()
    return validate(config, secret, f"stacks/Pulumi.{pulumi.get_stack()}.yaml")
