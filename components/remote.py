"""The one place that turns a rendered script into a resource that runs on a node.

`RemoteCommand` is a Pulumi dynamic resource (type `pulumi-python:dynamic/remote:Command`)
whose provider runs scripts with the system's OpenSSH client (components/ssh.py). It plays
the part of pulumi-command's remote.Command, whose provider binary cannot be built here (its Go
module is not served by the only module proxy this machine reaches), with two differences that
matter to us: only a change of what runs (`create`, `stdin`, the upload's digest) re-runs it —
a new key or a new delete script is recorded without touching the node — and the script's
text is the only thing that crosses to the node besides stdin."""

from __future__ import annotations

import hashlib
import os
import uuid
from typing import Any, Sequence

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ResourceProvider, UpdateResult

from .node import Node
from .observe.expect import Expectation

# Inputs whose change means the script must run again on the node.
RERUN_ON = ("create", "stdin", "upload_digest", "triggers")
# `observed` is the program's reading of the node (components/observe): not empty means the node
# is not as this step left it, so the step is pending even though its inputs are the same. Its
# own change back to "" is no change.
NOT_COMPARED = ("stdout", "stderr", "__provider", "observed")


def _execute(props: dict[str, Any]) -> dict[str, str]:
    from .progress import step_reporter
    from .ssh import Connection, run_script, upload_dir

    conn = Connection.from_inputs(props["connection"])
    if props.get("upload_from"):
        upload_dir(conn, props["upload_from"], props["upload_to"])
    out, err = run_script(conn, props["create"], stdin=props.get("stdin"), timeout_s=int(props["timeout_s"]),
                          what=props["label"], on_line=step_reporter(props["label"]))
    return {"stdout": out, "stderr": err}


class SshCommandProvider(ResourceProvider):
    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=uuid.uuid4().hex, outs={**props, **_execute(props)})

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        keys = sorted(k for k in set(olds) | set(news)
                      if k not in NOT_COMPARED and olds.get(k) != news.get(k))
        return DiffResult(changes=bool(keys) or bool(news.get("observed")), replaces=[],
                          delete_before_replace=False)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        if any(olds.get(k) != news.get(k) for k in RERUN_ON) or news.get("observed"):
            return UpdateResult(outs={**news, **_execute(news)})
        # Only how we reach the node or how we undo changed: record it, run nothing.
        return UpdateResult(outs={**news, "stdout": olds.get("stdout", ""), "stderr": olds.get("stderr", "")})

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        if props.get("delete"):
            from .ssh import Connection, run_script

            from .progress import step_reporter

            run_script(Connection.from_inputs(props["connection"]), props["delete"],
                       timeout_s=int(props["timeout_s"]), what=f"{props['label']} (delete)",
                       on_line=step_reporter(props["label"]))


class RemoteCommand(pulumi.dynamic.Resource, module="remote", name="Command"):
    stdout: pulumi.Output[str]
    stderr: pulumi.Output[str]

    def __init__(self, name: str, props: dict[str, Any], opts: pulumi.ResourceOptions):
        super().__init__(SshCommandProvider(), name, {**props, "stdout": None, "stderr": None}, opts)


def run(name: str, node: Node, *, create: str, delete: str | None = None, parent: pulumi.Resource,
        stdin: pulumi.Input[str] | None = None, depends_on: Sequence[pulumi.Resource] = (),
        sensitive: bool = False, timeout_s: int = 4 * 3600,
        upload: tuple[str, str] | None = None, triggers: Sequence[pulumi.Input] = (),
        expect: Expectation | None = None) -> RemoteCommand:
    """A script on `node`. create doubles as update: it runs again only when its text, its stdin,
    its upload or one of its triggers (e.g. the ID of the image it uses) changed, so every script
    is written to converge from any earlier state.
    upload=(local_dir, remote_dir) streams a directory of the operator's machine there first.
    expect: what the node shows once the script has run; when the node is observed and shows
    otherwise, the step runs again (drift)."""
    props: dict[str, Any] = {"connection": node.connection, "create": create, "delete": delete,
                             "stdin": stdin, "timeout_s": timeout_s, "label": f"{name} on {node.name}",
                             "upload_from": None, "upload_to": None, "upload_digest": None,
                             "triggers": list(triggers),
                             "observed": node.observer.reason(expect) if node.observer else ""}
    if upload:
        props.update(upload_from=os.path.abspath(upload[0]), upload_to=upload[1],
                     upload_digest=directory_digest(upload[0]))
    # A forced replacement (`pulumi up --replace`) undoes first: old and new share their names on
    # the node (unit, tag, cache directory), so creating first and deleting after would undo the new.
    return RemoteCommand(name, props, pulumi.ResourceOptions(
        parent=parent, depends_on=list(depends_on), delete_before_replace=True,
        additional_secret_outputs=["stdout", "stderr"] if sensitive else None))


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


def tagged_line(stdout: pulumi.Output[str], key: str) -> pulumi.Output[str]:
    """The value of the last `key=value` line a script printed (e.g. image-id=sha256:…)."""
    def pick(text: str | None) -> str:
        for line in reversed((text or "").splitlines()):
            if line.startswith(key + "="):
                return line.split("=", 1)[1].strip()
        return ""
    return stdout.apply(pick)
