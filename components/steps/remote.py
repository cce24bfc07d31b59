"""The one place that turns a rendered script into a step: every change on a node is a
pulumi-command `remote.Command` (its provider dials the node with the host key pinned), every
change on the operator's machine a `local.Command`. No dynamic provider: nothing of our Python
code is kept in the state.

How a step reaches its node:
- The command line is short and fixed: it reads the script from the first bytes of stdin and
  runs it under `timeout`, so the node's `ps`, the state's `create` and a failure's message carry
  no script text and no data. What follows the scripts on stdin is the step's data (a secret
  EnvironmentFile, an HF token, a probe): secrets only ever travel on stdin.
- `create` names the digest of the script and the values of the step's triggers (e.g. the image
  ID it runs), so the engine re-runs the step exactly when what runs changed, in place (an
  update, never a replace: a replace would run the delete script first).
- Drift (components/facts): when the node does not show what the step left there, the step
  carries the observation in its `environment` (DRIFT_VAR, stamped with the time, so it always
  differs from the state) and the engine plans an update, which runs the converge script again —
  never the delete script. When the node is as expected, `environment` is ignored
  (`ignore_changes`), so the state's old stamp is no change. The decision is taken in a resource
  transform, at registration, once every node has been observed. DRIFT_VAR is an `LC_*` name
  because the stock sshd of Debian and Ubuntu accepts those (`AcceptEnv LANG LC_*`).
- Output: stderr carries only the scripts' progress lines (tagged log lines, percentages by
  tenths; the verbose rest goes to a log file on the node, see templates/scripts/_prelude.sh.j2)
  and is logged live by the provider under the step's URN; stdout carries `key=value` results
  and is not logged.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Callable, Sequence

import pulumi
from pulumi_command import local as command_local
from pulumi_command import remote as command_remote

from components.names import STEP_ARGV0
from components.steps.info import StepInfo
from components.steps.render import digest, render, slug
from components.steps.rollback import Undo

if TYPE_CHECKING:  # the steps floor sits below the facts and the components: protocols stand between
    from components.steps.target import Expectation, StepTarget

DRIFT_VAR = "LC_BLACKWELL_DRIFT"
DELETE_TIMEOUT_S = 1800
UPLOAD_TIMEOUT_S = 4 * 3600
# After its timeout a step's script gets TERM, then KILL this much later.
KILL_AFTER_S = 30
# Per-step locks on the node (a tmpfs: gone at reboot, as are the runs they guard).
LOCK_DIR = "/run/lock"


def command_line(*, label: str, lock: str, scripts: Sequence[str], which: int, timeout_s: int,
                 inputs: Sequence[str] = (), doing: str = "", node: str = "") -> str:
    """The login shell's command: take the step's lock on the node (an earlier run of the same
    step still going there — an interrupted `up` — is waited for, never raced), then skip the
    scripts before `which` on stdin, read that one, skip the ones after it, and run it with bash
    under `timeout`; what is left on stdin is the script's own data. `head -c` reads exactly
    that many bytes, never more. doing, node: the step's sentence and node, which a failing
    script prints in its failure block (templates/scripts/_failure.sh.j2)."""
    sizes = [len(s.encode()) for s in scripts]
    before, after = sum(sizes[:which]), sum(sizes[which + 1:])
    reader = ((f"head -c {before} >/dev/null && " if before else "") + f"s=$(head -c {sizes[which]}) && "
              + (f"head -c {after} >/dev/null && " if after else "") + 'eval "$s"')
    runner = ('exec 9>"$1" && { flock -n 9 || { printf "%s\\n" "$2" >&2; flock 9; }; } '
              f'&& exec timeout --kill-after={KILL_AFTER_S} "$3" bash -c "$4"')
    waiting = f"[blackwell {label}] waiting for an earlier run of this step on the node to end"
    env = [f"BWS_STEP={shlex.quote(label)}", f"BWS_SCRIPT={digest(scripts[which], length=16)}"]
    if inputs:
        env.append(f"BWS_INPUTS={shlex.quote(' '.join(inputs))}")
    if doing:
        env.append(f"BWS_DOING={shlex.quote(doing)}")
    if node:
        env.append(f"BWS_NODE={shlex.quote(node)}")
    args = [f"{LOCK_DIR}/blackwell-serving-{slug(lock)}.lock", waiting, str(timeout_s), reader]
    return f"exec env {' '.join(env)} bash -c {shlex.quote(runner)} {STEP_ARGV0} {' '.join(map(shlex.quote, args))}"


_READER = re.compile(r"(?:head -c (\d+) >/dev/null && )?s=\$\(head -c (\d+)\)")


def read_script(line: str, stdin: str) -> str:
    """The script a command line of command_line() runs, cut out of its stdin (for reading a
    state or a preview: `pulumi stack export`, tests)."""
    m = _READER.search(line)
    if m is None:
        raise ValueError("not a command line of components/steps/remote.py")
    skip, size = int(m.group(1) or 0), int(m.group(2))
    return stdin.encode()[skip:skip + size].decode()


def drift_transform(observed: Callable[[], str]):
    """The resource transform that carries the observation: a stamped DRIFT_VAR when the node
    differs from what the step left (or could not be asked: the preview shows it pending),
    `ignore_changes` on the environment when it does not."""
    def transform(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult:
        reason = observed()
        if reason:
            stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            props = {**args.props, "environment": {DRIFT_VAR: f"{reason} (observed {stamp})"}}
            return pulumi.ResourceTransformResult(props=props, opts=args.opts)
        opts = pulumi.ResourceOptions.merge(args.opts, pulumi.ResourceOptions(ignore_changes=["environment"]))
        return pulumi.ResourceTransformResult(props=args.props, opts=opts)
    return transform


def drift_reason(environment: object) -> str:
    """The observation a step carries (DRIFT_VAR), without its stamp; "" when none."""
    value = environment.get(DRIFT_VAR, "") if isinstance(environment, dict) else ""
    return str(value).rsplit(" (observed ", 1)[0] if value else ""


def run(name: str, node: StepTarget, *, step: StepInfo, create: str, delete: str | None = None,
        parent: pulumi.Resource, stdin: pulumi.Input[str] | None = None,
        depends_on: Sequence[pulumi.Resource] = (), sensitive: bool = False, timeout_s: int = 4 * 3600,
        triggers: Sequence[pulumi.Input] = (), expect: Expectation | None = None,
        undo: Undo | None = None, unit: str | None = None) -> command_remote.Command:
    """A script on `node`. create doubles as update: it runs again only when its text, its stdin
    or one of its triggers (e.g. the ID of the image it uses) changed, or when the node drifted
    from what it left there, so every script is written to converge from any earlier state.
    step: the sentence, phase and priority the todo list shows. expect: what the node shows once
    the script has run (components/facts). undo: how a failed run puts this step back
    (components/steps/rollback.py; None: never, e.g. images and caches); unit: our unit it runs, whose
    journal a failure message quotes."""
    scripts = [create, *([delete] if delete else [])]
    label = f"{name} on {node.name}"
    inputs = pulumi.Output.all(*triggers).apply(lambda values: [str(v) for v in values])
    create_line = inputs.apply(lambda values: command_line(label=label, lock=label, scripts=scripts, which=0,
                                                            timeout_s=timeout_s, inputs=values,
                                                            doing=step.sentence("create"), node=node.name))
    delete_line = (command_line(label=f"{label} (delete)", lock=label, scripts=scripts, which=1,
                                timeout_s=DELETE_TIMEOUT_S, doing=step.sentence("delete"), node=node.name)
                   if delete else None)
    stdin_text = pulumi.Output.all("".join(scripts), stdin if stdin is not None else "").apply("".join)
    command = command_remote.Command(
        name, connection=node.connection.command_args(), create=create_line, delete=delete_line, stdin=stdin_text,
        add_previous_output_in_env=False, logging=command_remote.Logging.STDERR,
        opts=step_options(node, parent, depends_on, expect,
                          hooks=_rollback_hooks(node, label, step, undo, unit),
                          # A forced replacement (`pulumi up --replace`) undoes first: old and new
                          # share their names on the node (unit, tag, cache directory).
                          delete_before_replace=True,
                          additional_secret_outputs=["stdout", "stderr"] if sensitive else None))
    node.record_step(command, step)
    return command


def upload(name: str, node: StepTarget, *, step: StepInfo, local_dir: str, remote_dir: str, copy_dest: str,
           parent: pulumi.Resource, depends_on: Sequence[pulumi.Resource] = (),
           expect: Expectation | None = None) -> command_local.Command:
    """Stream a directory of the operator's machine into remote_dir on the node with rsync over
    SSH (host key pinned): resumable (--partial), only what differs moves (files already in
    copy_dest, the installed copy, are copied on the node instead of sent). Runs again when the
    directory's content changed (its digest is the step's trigger: the upload has no undo, so
    the replacement is just the upload again). local_dir as the stack says it: relative to the
    project, where the engine runs the program and its local commands. Its command line is a
    remote step's (command_line): the script, then the key, on stdin; `create` and a failure's
    message carry neither."""
    key = node.connection.secret_key()
    label = f"{name} on {node.name}"
    script = render("scripts/upload-dir.sh.j2", label=label, local_dir=local_dir,
                    remote_dir=remote_dir, copy_dest=copy_dest, host=node.connection.host,
                    port=node.connection.port, user=node.connection.user, host_key=node.connection.host_key,
                    connect_timeout_s=node.connection.connect_timeout_s)
    line = command_line(label=label, lock=label, scripts=[script], which=0, timeout_s=UPLOAD_TIMEOUT_S,
                        doing=step.sentence("create"), node=node.name)
    stdin = pulumi.Output.all(script, key if key is not None else "").apply("".join)
    command = command_local.Command(
        name, create=line, interpreter=["/bin/bash", "-c"], stdin=stdin, triggers=[directory_digest(local_dir)],
        add_previous_output_in_env=False, logging=command_local.Logging.STDERR,
        opts=step_options(node, parent, depends_on, expect,
                          hooks=_rollback_hooks(node, label, step, None, None)))
    node.record_step(command, step)
    return command


def _rollback_hooks(node: StepTarget, label: str, step: StepInfo, undo: Undo | None, unit: str | None):
    rollback = node.context.rollback
    if rollback is None:
        return None
    restore = {"check": f"Again, for the previous deployment: {step.do}",
               "switch": f"Switch back to the previous build: {step.do}"}.get(
        undo or "", f"Put the previous {unit} back on {node.name} and restart it")
    return rollback.binding(label, node.name, undo=undo, undo_sentence=step.sentence("delete"),
                                 restore_sentence=restore, unit=unit)


def step_options(node: StepTarget, parent: pulumi.Resource, depends_on: Sequence[pulumi.Resource],
                 expect: Expectation | None, **more) -> pulumi.ResourceOptions:
    """Options every step shares: its parent and dependencies, and, when the nodes are observed,
    the transform that carries the observation of `expect`."""
    observer = node.context.observer
    verdict = observer.verdict(expect) if observer is not None else None
    return pulumi.ResourceOptions(parent=parent, depends_on=list(depends_on),
                                  transforms=[drift_transform(verdict)] if verdict is not None else None, **more)


def directory_digest(path: str) -> str:
    """A cheap content address of a local directory: names, sizes and modification times."""
    h = hashlib.sha256()
    if not os.path.isdir(path):
        return "absent"
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for f in sorted(files):
            st = os.stat(os.path.join(root, f))
            h.update(f"{os.path.relpath(os.path.join(root, f), path)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def started(command: command_remote.Command) -> pulumi.Output[str]:
    """The InvocationID of the start an install step did (its `started=` line): a trigger of the
    gates that check the unit, so every restart the step does is followed by its check, also when
    only the node drifted and the unit's text is the same. Not a secret, although the step's stdin
    may be one (a secret input makes every output of the command secret)."""
    return pulumi.Output.unsecret(tagged_line(command.stdout, "started"))


def tagged_line(stdout: pulumi.Output[str], key: str) -> pulumi.Output[str]:
    """The value of the last `key=value` line a script printed (e.g. image-id=sha256:…)."""
    def pick(text: str | None) -> str:
        for line in reversed((text or "").splitlines()):
            if line.startswith(key + "="):
                return line.split("=", 1)[1].strip()
        return ""
    return stdout.apply(pick)
