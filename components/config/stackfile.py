"""Reading a Pulumi stack file as the engine reads it: YAML whose implicit types are those of the
engine's parser (yaml.v3: `yes`, `on` and dates stay text), duplicate keys refused, the
document a mapping with a `config:` mapping. Returns the full config keys and which of them
are Pulumi secrets (`secure:` values); every problem is (key path, message with a fix)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

# The keys Pulumi itself knows at the top of a stack file.
STACK_FILE_KEYS = {"config", "encryptionsalt", "secretsprovider", "encryptedkey", "environment"}
Problems = list[tuple[str, str]]
# More values than this, once aliases are expanded, is not a stack file ("billion laughs").
MAX_VALUES = 100_000


class StackLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # libyaml's parser when PyYAML has it
    """SafeLoader with YAML 1.2 booleans and no timestamps: what yaml.v3 gives the engine."""


StackLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers
            if tag not in ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:timestamp")]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
StackLoader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                                  list("tTfF"))


class StackFileProblem(Exception):
    """The file cannot be read as a stack file; .problems says where and why."""

    def __init__(self, problems: Problems):
        super().__init__("; ".join(f"{k}: {m}" for k, m in problems))
        self.problems = problems


def _path(parts: list) -> str:
    """A node's key path as the messages name it: config keys in full, then .key and [i]."""
    if not parts:
        return "(document)"
    if parts[0] != "config" or len(parts) == 1:
        head, rest = str(parts[0]), parts[1:]
    else:
        head, rest = str(parts[1]), parts[2:]
    for p in rest:
        head += f"[{p}]" if isinstance(p, int) else f".{p}"
    return head


def _duplicates(node: yaml.Node, parts: list, found: Problems, active: set[int], count: list[int]) -> None:
    if id(node) in active:  # an alias of an enclosing node: its keys are checked once
        return
    count[0] += 1
    if count[0] > MAX_VALUES:
        raise StackFileProblem([(_path(parts), f"aliases expand the document to more than {MAX_VALUES} values; "
                                               f"fix: write the config without nested aliases")])
    active.add(id(node))
    try:
        if isinstance(node, yaml.MappingNode):
            seen: dict[tuple[str, str], int] = {}
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode):
                    ident = (key.tag, key.value)
                    if ident in seen and key.value != "<<":
                        where = _path(parts + [key.value])
                        found.append((where, f"appears twice in one mapping (lines {seen[ident] + 1} and "
                                             f"{key.start_mark.line + 1}); fix: keep one of them"))
                    seen.setdefault(ident, key.start_mark.line)
                    _duplicates(value, parts + [key.value], found, active, count)
                else:
                    _duplicates(value, parts + ["?"], found, active, count)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                _duplicates(item, parts + [i], found, active, count)
    finally:
        active.discard(id(node))


def parse_yaml(text: str) -> Any:
    loader = StackLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        found: Problems = []
        _duplicates(node, [], found, set(), [0])
        if found:
            raise StackFileProblem(found)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _is_secure(value: Any) -> bool:
    return isinstance(value, Mapping) and set(value) == {"secure"}


def _has_secure(value: Any, seen: set[int] | None = None) -> bool:
    seen = set() if seen is None else seen
    if id(value) in seen:
        return False
    seen.add(id(value))
    if _is_secure(value):
        return True
    if isinstance(value, Mapping):
        return any(_has_secure(v, seen) for v in value.values())
    if isinstance(value, list):
        return any(_has_secure(v, seen) for v in value)
    return False


def read_stack_file(path: Path) -> tuple[dict[Any, Any], set[str], set[str]]:
    """(config by full key, keys whose value is `secure:`, keys with a `secure:` value inside)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise StackFileProblem([("(file)", f"cannot be read ({exc.strerror or exc}); fix: check the path and its "
                                           f"permissions")]) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise StackFileProblem([(f"line {line}", f"byte 0x{raw[exc.start]:02x} is not UTF-8; fix: save the file "
                                                 f"as UTF-8")]) from None
    try:
        doc = parse_yaml(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(document)"
        what = " ".join(str(exc.problem or exc.context or "not valid YAML").split())
        raise StackFileProblem([(where, f"not valid YAML: {what}; fix: correct the YAML there")]) from None
    except yaml.YAMLError as exc:
        raise StackFileProblem([("(document)", f"not valid YAML: {' '.join(str(exc).split())[:200]}; "
                                               f"fix: correct the YAML")]) from None
    except RecursionError:
        raise StackFileProblem([("(document)", "nested too deeply; fix: write the config as the schema shows "
                                               "(docs/stack-reference.md)")]) from None
    if doc is None:
        doc = {}
    if not isinstance(doc, Mapping):
        raise StackFileProblem([("(document)", f"is a {_kind(doc)}, not a mapping; fix: write `config:` at the top, "
                                               f"with blackwell-serving:… keys under it")])
    problems: Problems = [(str(k)[:80], "unknown key of a stack file; fix: remove it (config keys go under `config:`)")
                          for k in doc if k not in STACK_FILE_KEYS]
    config = doc.get("config")
    if config is None:
        config = {}
    if not isinstance(config, Mapping):
        problems.append(("config", f"is a {_kind(config)}, not a mapping; fix: write blackwell-serving:… keys "
                                   f"under `config:`"))
        config = {}
    if problems:
        raise StackFileProblem(problems)
    secure = {k for k, v in config.items() if _is_secure(v)}
    inside = {k for k, v in config.items() if k not in secure and _has_secure(v)}
    return dict(config), secure, inside


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    return type(value).__name__
