"""SystemdUnit: a unit we own, rendered, installed, enabled and started; restarted only when
its content, its image or its secret environment changed; removed on destroy. Its secret
EnvironmentFile is a step of its own (`<name>-env`), so the install step's inputs are plain."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import pulumi

from components.config.fields import MemoryReleaseSpec
from components.facts import EnvFileWritten, UnitRunning
from components.resources.component import Component, Ready
from components.resources.node import Node
from components.steps import types
from components.steps.info import StepInfo
from components.steps.remote import run, started, tagged_line
from components.steps.render import digest, render

UNIT_DELIMITER = "BWS_UNIT_EOF"
# ExecStartPre of the units that load weights (the engine, its Ray nodes): on unified memory the
# page cache of the weights competes with the ranks' memory.
DROP_PAGE_CACHE = ["/bin/sh", "-c", "sync && echo 3 > /proc/sys/vm/drop_caches"]


@dataclass(frozen=True)
class SystemdUnitArgs:
    """unit_text: the rendered unit; env_file/env_text: its root-only EnvironmentFile and secret
    content (both or neither); step: the todo list's sentences (default: install and start);
    triggers: what restarts it besides its text (the image ID it runs); container: the container
    the unit runs (container_unit_text), whose image the install script compares with its
    triggers when it adopts a unit an earlier version installed; image: the tag that container
    runs (once it runs, the other tags of a derived image that no container uses go:
    templates/scripts/_retire_tags.sh.j2); release: for an engine's unit, how a swap waits for the
    old engine's memory (templates/scripts/_memory_release.sh.j2)."""
    node: Node
    unit_name: str
    unit_text: str
    env_file: str | None = None
    env_text: pulumi.Input[str] | None = None
    must_stay_up: bool = True
    step: StepInfo | None = None
    depends_on: Sequence[pulumi.Resource] = ()
    triggers: Sequence[pulumi.Input] = ()
    container: str | None = None
    image: str | None = None
    release: MemoryReleaseSpec | None = None


class SystemdUnit(Component):
    TYPE = types.SYSTEMD_UNIT

    def __init__(self, name: str, args: SystemdUnitArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        node, unit_name, unit_text, env_file = args.node, args.unit_name, args.unit_text, args.env_file
        if UNIT_DELIMITER in unit_text:
            raise ValueError(f"unit {unit_name}: its text may not contain {UNIT_DELIMITER}")
        self.node = node
        self.unit_name = unit_name
        self.unit_text = unit_text
        self.digest = digest(unit_text)
        step = args.step or StepInfo(node.name, "serve", do=f"Install and start {unit_name} on {node.name}",
                                     redo=f"Rewrite {unit_name} on {node.name} and restart it if what it runs changed",
                                     undo=f"Stop and remove {unit_name} from {node.name}")
        # The secrets travel apart (principle 7): the env step's stdin is a secret, so this step's
        # inputs (the unit's text, its argv) stay plain and a preview shows their change. A new
        # secret restarts the unit through the env step's `generation`, a random token drawn on
        # the node whenever the file's content changes (templates/scripts/install-env.sh.j2):
        # taken here as a trigger, it re-runs this step, whose script restarts the unit and prints
        # a new `started`, which re-runs the gates after it. Chosen over the env step restarting
        # the unit itself: one step restarts, once, also when the text and the secret change
        # together, and the gates keep one trigger per unit. Not a hash of the secret: the state
        # holds nothing derived from it.
        self.env = (env_step(name, node, unit_name, env_file, args.env_text, step, self, args.depends_on)
                    if args.env_text is not None and env_file else None)
        generation = [generation_of(self.env)] if self.env is not None else []
        values = dict(unit_name=unit_name, env_file=env_file if self.env is not None else None)
        self.command = run(f"{name}-install", node, parent=self, step=step,
                           depends_on=[*args.depends_on, *([self.env] if self.env is not None else [])],
                           create=render("scripts/install-unit.sh.j2", unit_text=unit_text,
                                         container=args.container, image=args.image if args.container else None,
                                         must_stay_up=args.must_stay_up,
                                         release=args.release, **values),
                           delete=render("scripts/remove-unit.sh.j2", **values),
                           triggers=[*args.triggers, *generation], undo="previous", unit=unit_name,
                           expect=UnitRunning(node.name, unit_name, unit_text))
        self.started = started(self.command)
        # Its secret environment too: what waits for the unit waits for both.
        self.ready = Ready.of([*([(node.name, self.env)] if self.env is not None else []), (node.name, self.command)])
        self.register_outputs({"unit": unit_name, "node": node.name, "digest": self.digest})


def env_step(name: str, node: Node, unit_name: str, env_file: str, env_text: pulumi.Input[str],
             unit_step: StepInfo, parent: pulumi.Resource, depends_on: Sequence[pulumi.Resource]):
    """The step that writes a unit's root-only EnvironmentFile from its secret stdin. Never rolled
    back (undo None): after a failed `up` the node keeps the file the state records, and the
    unit's rollback restarts its previous text with it."""
    info = StepInfo(node.name, unit_step.phase, do=f"Write the secret environment of {unit_name} on {node.name}",
                    redo=f"Rewrite the secret environment of {unit_name} on {node.name} (then it restarts)",
                    undo=f"Remove the secret environment of {unit_name} from {node.name}")
    values = dict(unit_name=unit_name, env_file=env_file)
    return run(f"{name}-env", node, parent=parent, step=info, depends_on=depends_on,
               create=render("scripts/install-env.sh.j2", **values),
               delete=render("scripts/remove-env.sh.j2", **values), stdin=env_text,
               expect=EnvFileWritten(node.name, env_file))


def generation_of(env: "pulumi.Resource") -> pulumi.Output[str]:
    """The env step's `generation=` token: not a secret (random, no function of the content),
    although the step's stdin is one."""
    return pulumi.Output.unsecret(tagged_line(env.stdout, "generation"))


def env_file_text(values: dict[str, pulumi.Input[str]]) -> pulumi.Output[str]:
    """The content of a root-only EnvironmentFile from (secret) values; stays a secret."""
    def lines(resolved: dict[str, str]) -> str:
        for k, v in resolved.items():
            if "\n" in v:
                raise ValueError(f"{k}: a secret value may not contain a newline")
        return "".join(f"{k}={v}\n" for k, v in sorted(resolved.items()))
    return pulumi.Output.secret(pulumi.Output.all(**values).apply(lines))


def container_unit_text(*, component: str, description: str, container: str, image: str,
                        command: list[str], docker_args: list[str], environment: dict[str, str],
                        env_file: str | None = None, after: Sequence[str] = (), binds_to: Sequence[str] = (),
                        restart: str = "on-failure", pre_start: Sequence[list[str]] = ()) -> str:
    """A unit that runs one container in the foreground (docker run --rm), so systemd sees the
    engine's own life and exit status."""
    return render("units/container.service.j2", component=component, description=description,
                  container=container, image=image, command=command, docker_args=docker_args,
                  environment=environment, env_file=env_file, after=list(after), binds_to=list(binds_to),
                  restart=restart, pre_start=list(pre_start))
