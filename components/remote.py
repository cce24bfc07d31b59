"""The one place that turns a rendered script into a pulumi-command remote.Command, so that
every command on a node gets the same options: its node's pinned connection, its parent, and
secrets kept out of logs and plain state."""

from __future__ import annotations

from typing import Sequence

import pulumi
from pulumi_command import remote

from .node import Node


def run(name: str, node: Node, *, create: str, delete: str | None = None, parent: pulumi.Resource,
        stdin: pulumi.Input[str] | None = None, depends_on: Sequence[pulumi.Resource] = (),
        sensitive: bool = False) -> remote.Command:
    """A script on `node`. create doubles as update: the engine runs it again only when its text
    (or stdin) changed, so every script is written to converge from any earlier state."""
    return remote.Command(
        name,
        connection=node.connection,
        create=create,
        update=create,
        delete=delete,
        stdin=stdin,
        logging=remote.Logging.NONE if sensitive else remote.Logging.STDOUT_AND_STDERR,
        opts=pulumi.ResourceOptions(
            parent=parent,
            depends_on=list(depends_on),
            additional_secret_outputs=["stdout", "stderr"] if sensitive else None,
        ),
    )


def tagged_line(stdout: pulumi.Output[str], key: str) -> pulumi.Output[str]:
    """The value of the last `key=value` line a script printed (e.g. image-id=sha256:…)."""
    def pick(text: str | None) -> str:
        for line in reversed((text or "").splitlines()):
            if line.startswith(key + "="):
                return line.split("=", 1)[1].strip()
        return ""
    return stdout.apply(pick)
