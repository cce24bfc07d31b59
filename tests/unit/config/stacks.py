"""Helpers of the config tests: copies of the shipped stack files (the originals are never
written), both ways of reading them (the stack file, and the config the engine passes to the
program), and the shape every ConfigError must have."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import socket
import subprocess
from pathlib import Path
from typing import Any
from unittest import mock

import pulumi
import pytest
import yaml

from components.config import ConfigError, load_from_pulumi, load_stack_file
from components.config.load import PROJECT
from components.config.stackfile import parse_yaml

REPO = Path(__file__).resolve().parents[3]
SHIPPED = ("lab", "spark-duo", "spark-duo-sglang", "rtxpro-quad", "rtxpro-quad-docker")
P = f"{PROJECT}:"

# A problem line: two spaces, the key path, ": ", what is wrong, and the fix.
PROBLEM_LINE = re.compile(r"^  (?P<key>\S.*?): (?P<what>.*fix: .+)$")


def shipped_doc(stack: str) -> dict:
    """The parsed document of a shipped stack file (a fresh copy each time)."""
    return copy.deepcopy(_shipped(stack))


def lab_one_engine_doc() -> dict:
    """The shipped lab with its first deployment only and no gateway: the base the checks across
    deployments add their own deployments to (the lab's second model, tiny-b, and the gateway
    routing both would make each added one a clash of its own)."""
    doc = shipped_doc("lab")
    c = doc["config"]
    c[P + "deployments"] = c[P + "deployments"][:1]
    c.pop(P + "gateway", None)
    return doc


def lab_ray_doc() -> dict:
    """lab_one_engine_doc with its engine as the lab had it before vLLM's native launch: a Ray
    cluster over both nodes, the engine on the head alone (executor head): the base of the checks
    of Ray clusters and of a head executor."""
    doc = lab_one_engine_doc()
    c = doc["config"]
    d = c[P + "deployments"][0]
    for key in ("dist_port",):
        d.pop(key, None)
    d.update(topology="ray", executor="head", tensor_parallel=1)
    c[P + "ray"] = {"object_store_gb": 0.5, "join_timeout_s": 300}
    for node in c[P + "nodes"]:
        node["gpu"]["memory_gb"] = 8
    return doc


_CACHE: dict[str, Any] = {}


def _shipped(stack: str) -> dict:
    if stack not in _CACHE:
        _CACHE[stack] = parse_yaml((REPO / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    return _CACHE[stack]


def write_doc(directory: Path, doc: Any, stack: str = "t") -> Path:
    path = directory / f"Pulumi.{stack}.yaml"
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    path.write_text(yaml.dump(doc, Dumper=dumper, sort_keys=False, allow_unicode=True))
    return path


def engine_encoding(config: dict) -> tuple[dict[str, str], list[str]]:
    """What the engine hands the program for a stack file's config (PULUMI_CONFIG,
    PULUMI_CONFIG_SECRET_KEYS): strings as they are, everything else as JSON, `secure:` values
    decrypted (here: a stand-in plaintext) and their keys listed as secrets."""
    passed, secret = {}, []

    def decrypt(value, found: list):
        if isinstance(value, dict) and set(value) == {"secure"}:
            found.append(True)
            return "plaintext-of-" + str(value["secure"])
        if isinstance(value, dict):
            return {k: decrypt(v, found) for k, v in value.items()}
        if isinstance(value, list):
            return [decrypt(v, found) for v in value]
        return value

    for key, value in config.items():
        found: list = []
        plain = decrypt(value, found)
        if found:
            secret.append(key)
        passed[key] = plain if isinstance(plain, str) else json.dumps(plain, default=str)
    return passed, secret


def load_engine_path(config: dict, stack: str = "t"):
    """load_from_pulumi() on the engine's encoding of `config`, as the program sees it."""
    passed, secret = engine_encoding(config)
    env = {"PULUMI_CONFIG": json.dumps(passed), "PULUMI_CONFIG_SECRET_KEYS": json.dumps(secret)}
    with mock.patch.dict(os.environ, env), mock.patch.object(pulumi, "get_stack", lambda: stack):
        return load_from_pulumi()


def check_message(text: str, file: str) -> list[tuple[str, str]]:
    """A ConfigError's message: the file first, then one line per problem, each with its key path
    and a fix; nothing of pydantic or of a traceback. Returns [(key path, what)]."""
    lines = text.splitlines()
    assert lines[0] == f"{file}: the stack config is invalid; nothing was changed on any node.", text
    assert len(lines) > 1, text
    found = []
    for line in lines[1:]:
        m = PROBLEM_LINE.match(line)
        assert m, f"not a 'key path: what; fix: how' line: {line!r}\n{text}"
        found.append((m["key"], m["what"]))
    for word in ("Traceback", "errors.pydantic.dev", "input_value=", "[type="):
        assert word not in text, text
    return found


def expect_config_error(load, file: str, key: str, *words: str) -> str:
    """`load()` raises one ConfigError, not chained to any other exception, whose message names
    `file` and has a line for `key` that says each of `words`."""
    with pytest.raises(ConfigError) as caught:
        load()
    err = caught.value
    assert err.__cause__ is None and err.__suppress_context__, "another exception would be chained"
    text = str(err)
    problems = check_message(text, file)
    said = [what for k, what in problems if k == key]
    assert said, f"no line names {key}:\n{text}"
    for w in words:
        assert any(w in what for what in said), f"{w!r} not said about {key}:\n{text}"
    return text


def file_error(tmp_path: Path, doc: Any, key: str, *words: str) -> str:
    path = write_doc(tmp_path, doc)
    return expect_config_error(lambda: load_stack_file(path), str(path), key, *words)


def both_paths_error(tmp_path: Path, doc: dict, key: str, *words: str) -> None:
    """The same problem, reported the same way, from the stack file and from the engine."""
    file_error(tmp_path, doc, key, *words)
    expect_config_error(lambda: load_engine_path(doc["config"]), "stacks/Pulumi.t.yaml", key, *words)


class RemoteAction(Exception):
    """Raised by the guards of no_remote_action(): validation tried to reach out."""


@contextlib.contextmanager
def no_remote_action():
    """Inside: any socket connection or process start raises RemoteAction."""
    def refuse(*args, **kwargs):
        raise RemoteAction("validation tried to open a connection or start a process")

    with mock.patch.object(socket.socket, "connect", refuse), \
            mock.patch.object(socket.socket, "connect_ex", refuse), \
            mock.patch.object(socket, "create_connection", refuse), \
            mock.patch.object(subprocess.Popen, "_execute_child", refuse), \
            mock.patch.object(os, "system", refuse), \
            mock.patch.object(os, "posix_spawn", refuse), \
            mock.patch.object(os, "fork", refuse):
        yield
