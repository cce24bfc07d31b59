"""Property: the shipped stack files (copies; the originals are never written), mutated at random
— a key deleted, a key renamed with a typo, a value of another type, an extreme number, a long
string, None, a nested list, a list item duplicated, two ports swapped — are either valid or
one ConfigError whose message names the file, a key path and a fix. Never another exception,
never a remote action, and the same verdict from the stack file and from the engine's config."""

from __future__ import annotations

import copy
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from components.config import ConfigError, load_stack_file
from tests.unit.config.stacks import (REPO, SHIPPED, check_message, load_engine_path, no_remote_action,
                                      shipped_doc, write_doc)

ORIGINALS = {s: (REPO / "stacks" / f"Pulumi.{s}.yaml").read_bytes() for s in SHIPPED}

# Values that have broken loaders before, and some that only look dangerous.
SPECIAL = ["", " ", "x" * 5000, "Qwen/" + "y" * 5000, "../etc/passwd", "/srv/../root", "/srv/x", "~", "yes", "no",
           "on", "null", "2024-01-01", "1e400", "ssh.service", "bws-tiny.service", "systemd-logind.service",
           "--api-key=abc", "hf_" + "a" * 34, "$(id)", "a\nb", "\x00", "é", "[]", "{}"]
NUMBERS = [0, -1, 1, 22, 80, 1023, 1024, 6379, 8000, 10001, 29555, 65535, 65536, 2 ** 31, 2 ** 63, -(2 ** 63),
           10 ** 30, 0.5, -0.0, 1e308, -1e308, float("inf"), float("-inf"), float("nan")]

values = st.one_of(
    st.sampled_from(SPECIAL),
    st.sampled_from(NUMBERS),
    st.integers(),
    st.floats(),
    st.booleans(),
    st.none(),
    st.text(max_size=40),
    st.builds(lambda: [[[[[1]]]]]),
    st.lists(st.one_of(st.integers(), st.text(max_size=5)), max_size=3),
    st.dictionaries(st.text(string.ascii_letters + "_", min_size=1, max_size=8), st.integers(), max_size=3),
)


def slots(value: Any, path: tuple = ()) -> list[tuple]:
    """Every place in a document: paths of mapping keys and list items."""
    out = []
    if isinstance(value, dict):
        for k, v in value.items():
            out.append(path + (k,))
            out += slots(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.append(path + (i,))
            out += slots(v, path + (i,))
    return out


def parent(doc: Any, path: tuple) -> Any:
    for p in path[:-1]:
        doc = doc[p]
    return doc


def typo(word: str, data) -> str:
    i = data.draw(st.integers(0, max(len(word) - 1, 0)))
    kind = data.draw(st.sampled_from(["drop", "double", "swap", "replace", "underscore"]))
    if not word:
        return "x"
    if kind == "drop":
        return word[:i] + word[i + 1:] or "x"
    if kind == "double":
        return word[:i] + word[i] + word[i:]
    if kind == "swap" and i + 1 < len(word):
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    if kind == "underscore":
        return word.replace("-", "_", 1) if "-" in word else word.replace("_", "-", 1) + "_"
    return word[:i] + data.draw(st.sampled_from("aeiouxz:")) + word[i + 1:]


def ports(config: dict) -> list[tuple]:
    return [p for p in slots(config) if p[-1] in ("port", "dist_port") and isinstance(parent(config, p)[p[-1]], int)]


def mutate(config: dict, data) -> str:
    """One random mutation of `config` in place; returns what it did (for the failure report)."""
    op = data.draw(st.sampled_from(["delete", "rename", "value", "value", "duplicate", "swap-ports", "add-key"]))
    where = slots(config)
    if op == "swap-ports":
        found = ports(config)
        if len(found) >= 2:
            a, b = data.draw(st.permutations(found))[:2]
            pa, pb = parent(config, a), parent(config, b)
            pa[a[-1]], pb[b[-1]] = pb[b[-1]], pa[a[-1]]
            return f"swap {a} {b}"
        op = "value"
    if op == "add-key":
        target = data.draw(st.sampled_from([()] + [p for p in where if isinstance(parent(config, p + (None,)), dict)]))
        key = data.draw(st.sampled_from(["blackwell-serving:deploymnets", "blackwell_serving:nodes", "extra",
                                         "tensor_paralel", "pulumi:tags", "aws:region", "image"]))
        holder = config
        for p in target:
            holder = holder[p]
        holder[key] = data.draw(values)
        return f"add {target}.{key}"
    path = data.draw(st.sampled_from(where))
    holder = parent(config, path)
    last = path[-1]
    if op == "delete":
        del holder[last]
    elif op == "rename" and isinstance(last, str):
        holder[typo(last, data)] = holder.pop(last)
    elif op == "duplicate" and isinstance(holder, list):
        holder.append(copy.deepcopy(holder[last]))
    else:
        holder[last] = data.draw(values)
        op = "value"
    return f"{op} {path}"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("mutated")


@settings(max_examples=300, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(data=st.data())
def test_mutated_shipped_stacks_are_valid_or_one_clear_message(workdir, data):
    stack = data.draw(st.sampled_from(SHIPPED))
    doc = shipped_doc(stack)
    done = [mutate(doc["config"], data) for _ in range(data.draw(st.integers(1, 3)))]
    path = write_doc(workdir, doc, stack)
    verdicts = []
    with no_remote_action():
        for name, load, file in (("stack file", lambda: load_stack_file(path), str(path)),
                                 ("engine", lambda: load_engine_path(doc["config"], stack),
                                  f"stacks/Pulumi.{stack}.yaml")):
            try:
                load()
            except ConfigError as err:
                problems = check_message(str(err), file)
                assert any(key for key, _ in problems), str(err)
                verdicts.append(False)
            else:
                verdicts.append(True)
    assert verdicts[0] == verdicts[1], f"{stack} after {done}: stack file valid={verdicts[0]}, engine valid={verdicts[1]}"
    event("valid" if verdicts[0] else "refused")
    assert (REPO / "stacks" / f"Pulumi.{stack}.yaml").read_bytes() == ORIGINALS[stack], "a shipped stack was written"


def test_the_guard_stops_a_remote_action():
    import socket
    import subprocess

    from tests.unit.config.stacks import RemoteAction

    with no_remote_action():
        with pytest.raises(RemoteAction):
            socket.create_connection(("198.18.0.11", 22), timeout=1)
        with pytest.raises(RemoteAction):
            subprocess.run(["true"])
