"""A tiny stack for the team-backend tests and bench: one project whose single step appends
`start <operator> <trial> <time>` to a marks file, sleeps, and appends `end …`. By default the step
is a local `command.local.Command` (no node, no network; the operator is $BWS_OPERATOR); given a
node, it is a `command.remote.Command` on that node over SSH with its host key pinned, the marks
file is the node's, and the operator is the address the node saw the SSH session come from
(`$SSH_CLIENT`): the node itself says which machine ran it, and when, by its one clock. The trial
comes from the stack's config and is the step's trigger, so each new trial is a change that runs
the step once. Each operator has its own copy of the project (its own checkout) on one shared
backend."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROJECT = "blackwell-serving"   # the guard and Pulumi's lock rows are keyed by it (components.config.load)
PASSPHRASE = "team-tests"       # the team's shared passphrase, for these throwaway stacks

PROGRAM = """
import shlex

import pulumi
import pulumi_command as command

trial = pulumi.Config().get("trial") or "0"
{kind}.Command("step", create="TRIAL=" + shlex.quote(trial) + "; " + {script!r}, triggers=[trial]{connection})
"""


@dataclass(frozen=True)
class Node:
    """Where a remote step runs: the node's address, user, pinned host key and the operator's key
    (a file read by the program, sent as a secret)."""
    host: str
    user: str
    host_key: str
    key_file: str


def hold_until(release: str, limit_s: int = 120) -> str:
    """A step's work that lasts until the file `release` exists (where the step runs), at most
    limit_s: a run that stays live while a test acts on it, and ends when told."""
    return (f"i=0; while [ ! -e {shlex.quote(release)} ] && [ $i -lt {limit_s * 5} ]; do sleep 0.2; i=$((i+1)); "
            f"done")


def make_project(root: Path, marks: Path, sleep: float = 2, node: Node | None = None, hold: str | None = None) -> Path:
    """The project in `root`: its step marks its start, sleeps `sleep` s (or does `hold`), marks its end."""
    root.mkdir(parents=True)
    who = "$BWS_OPERATOR" if node is None else "${SSH_CLIENT%% *}"
    def mark(what: str) -> str:
        return f'echo "{what} {who} $TRIAL $(date +%s.%N)" >> {shlex.quote(str(marks))}'

    script = f"{mark('start')}; {hold or f'sleep {float(sleep)}'}; {mark('end')}"
    connection = "" if node is None else (
        f", connection=command.remote.ConnectionArgs(host={node.host!r}, user={node.user!r}, "
        f"host_key={node.host_key!r}, private_key=pulumi.Output.secret(open({node.key_file!r}).read()))")
    (root / "Pulumi.yaml").write_text(f"name: {PROJECT}\nruntime: python\n")
    (root / "__main__.py").write_text(PROGRAM.format(kind="command.local" if node is None else "command.remote",
                                                     script=script, connection=connection))
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
    return [(what, who) for what, who, of, _ in parse_marks(marks.read_text() if marks.exists() else "")
            if of == trial]


def parse_marks(text: str) -> list[tuple[str, str, str, float]]:
    """(start|end, operator, trial, time) of every mark, in file order."""
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] in ("start", "end"):
            out.append((parts[0], parts[1], parts[2], float(parts[3])))
    return out
