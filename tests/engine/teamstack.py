"""A tiny stack for the team-backend tests and bench: one project whose single step is a local
`command.local.Command` that appends `start <operator> <trial>` to a marks file, sleeps, and
appends `end …` (no node, no network). The trial comes from the stack's config and is the step's
trigger, so each new trial is a change that runs the step once. Each operator has its own copy of
the project (its own checkout) on one shared backend."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROJECT = "blackwell-serving"   # the guard and Pulumi's lock rows are keyed by it (components.config.load)
PASSPHRASE = "team-tests"       # the team's shared passphrase, for these throwaway stacks

PROGRAM = """
import shlex

import pulumi
import pulumi_command as command

marks = shlex.quote({marks!r})
trial = pulumi.Config().get("trial") or "0"
command.local.Command(
    "step",
    create=f'echo "start $BWS_OPERATOR $TRIAL" >> {{marks}}; sleep {sleep}; echo "end $BWS_OPERATOR $TRIAL" >> {{marks}}',
    environment={{"TRIAL": trial}},
    triggers=[trial],
)
"""


def make_project(root: Path, marks: Path, sleep: float = 2) -> Path:
    root.mkdir(parents=True)
    (root / "Pulumi.yaml").write_text(f"name: {PROJECT}\nruntime: python\n")
    (root / "__main__.py").write_text(PROGRAM.format(marks=str(marks), sleep=float(sleep)))
    return root


def env(backend: str, operator: str = "?", extra: dict | None = None) -> dict:
    """A CLI run's environment: the shared backend, the team's passphrase, this Python first on PATH
    (the language host runs the program with it), no downloads."""
    out = {**os.environ, "PULUMI_BACKEND_URL": backend, "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
           "PULUMI_SKIP_UPDATE_CHECK": "true", "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
           "BWS_OPERATOR": operator,
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]),
           **(extra or {})}
    out.pop("PULUMI_CONFIG_PASSPHRASE_FILE", None)
    return out


def pulumi(project: Path, run_env: dict, *args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run(["pulumi", *args, "--non-interactive"], cwd=project, env=run_env,
                          capture_output=True, text=True, timeout=timeout)


def set_trial(project: Path, stack: str, trial: str) -> None:
    """The stack's config, written as `pulumi config set` would (keeping the secrets salt)."""
    path = project / f"Pulumi.{stack}.yaml"
    salt = [ln for ln in (path.read_text().splitlines() if path.exists() else []) if ln.startswith("encryptionsalt:")]
    path.write_text("\n".join([*salt, "config:", f"  {PROJECT}:trial: \"{trial}\""]) + "\n")


def up_argv(stack: str) -> list[str]:
    return ["pulumi", "up", "--yes", "--non-interactive", "--stack", stack]


def todo_up_argv(stack: str, project: Path) -> list[str]:
    return [sys.executable, "-m", "components.todo", "--stack", stack, "--up", "--work-dir", str(project)]


def marks_of(marks: Path, trial: str) -> list[tuple[str, str]]:
    """(start|end, operator) of one trial, in file order."""
    if not marks.exists():
        return []
    out = []
    for line in marks.read_text().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == trial:
            out.append((parts[0], parts[1]))
    return out
