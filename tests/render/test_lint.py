"""Tier 2: every rendered script passes `bash -n` and `shellcheck -s bash` (all severities, no
exclusions); every rendered unit passes `systemd-analyze verify` next to the other units of its
node (so that After=/Requires=/BindsTo= between our units resolve) — which also checks that each
ExecStart= program exists (/usr/bin/docker: Debian's docker.io on this machine)."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.tools import require
from tests.render.golden import render_stack, unit_placements
from tests.unit.mocked import STACKS



def shellcheck(folder: Path, names: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([require("shellcheck"), "-s", "bash", "-S", "style", "-f", "gcc", *names],
                          cwd=folder, capture_output=True, text=True, timeout=60)


def verify_units(folder: Path, names: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([require("systemd-analyze"), "verify", "--man=no", *(f"./{n}" for n in names)],
                          cwd=folder, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("stack", STACKS)
def test_scripts_parse_with_bash(stack, tmp_path):
    for name, text in render_stack(stack).items():
        if name.endswith(".sh"):
            (tmp_path / name).write_text(text)
            done = subprocess.run(["bash", "-n", name], cwd=tmp_path, capture_output=True, text=True)
            assert done.returncode == 0, f"{stack}/{name}: {done.stderr}"


@pytest.mark.parametrize("stack", STACKS)
def test_scripts_pass_shellcheck(stack, tmp_path):
    scripts = {n: t for n, t in render_stack(stack).items() if n.endswith(".sh")}
    assert scripts
    for name, text in scripts.items():
        assert text.startswith("#!/usr/bin/env bash\n"), f"{name}: no bash shebang"
        (tmp_path / name).write_text(text)
    done = shellcheck(tmp_path, sorted(scripts))
    assert done.returncode == 0 and not done.stdout.strip(), f"{stack}:\n{done.stdout}{done.stderr}"


@pytest.mark.parametrize("stack", STACKS)
def test_units_pass_systemd_analyze_verify(stack):
    renders = render_stack(stack)
    by_node: dict[str, list[tuple[str, str]]] = {}
    for node, unit_name, golden_name in unit_placements(stack):
        by_node.setdefault(node, []).append((unit_name, renders[golden_name]))
    assert by_node
    for node, units in by_node.items():
        with tempfile.TemporaryDirectory() as d:
            for unit_name, text in units:
                (Path(d) / unit_name).write_text(stub_venv_program(text, Path(d) / "root"))
            done = verify_units(Path(d), [u for u, _ in units])
            # Any message counts: systemd-analyze reports some problems without failing.
            assert done.returncode == 0 and not (done.stdout + done.stderr).strip(), \
                f"{stack} on {node}:\n{done.stdout}{done.stderr}"


def stub_venv_program(text: str, stubs: Path) -> str:
    """A unit of runtime venv runs ROOT/IMAGE/current/bin/PROGRAM, which exists only on a node
    where the venv is built, and monitoring's units a program of a Debian package the step installs
    on the node (components/monitoring/deploy.py): the check runs it against an executable stub at
    the same path under `stubs` (every other check of the unit is unchanged)."""
    import re

    from components.monitoring.deploy import PROGRAMS

    m = (re.search(r"^ExecStart=(/\S+/current/bin/[A-Za-z0-9._-]+)", text, re.M)
         or re.search(rf"^ExecStart=({'|'.join(map(re.escape, PROGRAMS))})\s", text, re.M))
    if m is None:
        return text
    fake = stubs / m.group(1).lstrip("/")
    fake.parent.mkdir(parents=True, exist_ok=True)
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    return text.replace(f"ExecStart={m.group(1)}", f"ExecStart={fake}")


# The checks can fail: each tool flags a known-bad sample.

def test_shellcheck_flags_an_unquoted_expansion(tmp_path):
    (tmp_path / "bad.sh").write_text('#!/usr/bin/env bash\nf=$1\nrm -rf $f/tmp\n')
    assert "SC2086" in shellcheck(tmp_path, ["bad.sh"]).stdout


def test_systemd_analyze_flags_a_missing_program_and_unknown_keys(tmp_path):
    good = render_stack(STACKS[0])
    text = next(t for n, t in good.items() if n.endswith(".service"))
    (tmp_path / "bad1.service").write_text(text.replace("ExecStart=/usr/bin/docker", "ExecStart=/usr/bin/no-such-docker"))
    (tmp_path / "bad2.service").write_text(text.replace("Restart=", "Restrat="))
    for name in ("bad1.service", "bad2.service"):
        done = verify_units(tmp_path, [name])
        assert done.returncode != 0 or (done.stdout + done.stderr).strip(), name


# Every value a script template interpolates is shell-quoted (`| q`), except the ones below,
# which are not shell words: quoted here-document bodies, a comment, Python-made integers, a
# fixed variable name, and the rsync -e command string (its key path is a NodePath: [A-Za-z0-9._/-]).
NOT_SHELL_WORDS = {"dockerfile", "unit_text", "request_json", "engine_digest", "key_var", "peer_key",
                   "expected | int", "timeout_s | int", "expected | string | q",
                   # the watchdog: its script is a quoted here-document, its figures Python integers
                   "script_text", "interval_s | int", "failures | int", "metrics_timeout_s | int", "grace_s | int", "restarts | int",
                   "bound_bytes | int", "join_grace_s | int", "head_port | int",
                   # the gateway's scripts: its config, key check and request bodies are quoted
                   # here-documents
                   "config_text", "key_check_text", "r.body", "gateway_digest", "requests | length | int",
                   # Prometheus's rules: a quoted here-document
                   "rules_text"}


def test_script_templates_quote_every_interpolated_value():
    import re

    from components.steps.render import TEMPLATES

    bad = []
    for path in sorted((TEMPLATES / "scripts").glob("*.j2")):
        text = re.sub(r"{% raw %}.*?{% endraw %}", "", path.read_text(), flags=re.S)
        text = re.sub(r"{%.*?%}", "", text, flags=re.S)
        for expr in re.findall(r'{{\s*((?:"[^"]*"|[^}"])*?)\s*}}', text):
            if expr not in NOT_SHELL_WORDS and not re.search(r"\|\s*q\s*$", expr):
                bad.append(f"{path.name}: {{{{ {expr} }}}}")
    assert not bad, "unquoted interpolations:\n" + "\n".join(bad)
