"""SystemdUnit: a unit we own, rendered, installed, enabled and started; restarted only when
its content (or its secret environment) changed; removed on destroy."""

from __future__ import annotations

from typing import Sequence

import pulumi

from . import types
from .node import Node
from .observe import UnitRunning
from .remote import run, started
from .render import digest, render
from .steps import StepInfo

UNIT_DELIMITER = "BWS_UNIT_EOF"
# ExecStartPre of the units that load weights (the engine, its Ray nodes): on unified memory the
# page cache of the weights competes with the ranks' memory.
DROP_PAGE_CACHE = ["/bin/sh", "-c", "sync && echo 3 > /proc/sys/vm/drop_caches"]


class SystemdUnit(pulumi.ComponentResource):
    def __init__(self, name: str, node: Node, unit_name: str, unit_text: str, *,
                 env_file: str | None = None, env_text: pulumi.Input[str] | None = None,
                 must_stay_up: bool = True, step: StepInfo | None = None, depends_on: Sequence[pulumi.Resource] = (),
                 triggers: Sequence[pulumi.Input] = (), opts: pulumi.ResourceOptions | None = None):
        super().__init__(types.SYSTEMD_UNIT, name, None, opts)
        if UNIT_DELIMITER in unit_text:
            raise ValueError(f"unit {unit_name}: its text may not contain {UNIT_DELIMITER}")
        self.node = node
        self.unit_name = unit_name
        self.unit_text = unit_text
        self.digest = digest(unit_text)
        values = dict(unit_name=unit_name, env_file=env_file if env_text is not None else None)
        step = step or StepInfo(node.name, "serve", do=f"Install and start {unit_name} on {node.name}",
                                redo=f"Rewrite and restart {unit_name} on {node.name}",
                                undo=f"Stop and remove {unit_name} from {node.name}")
        self.command = run(f"{name}-install", node, parent=self, depends_on=depends_on, step=step,
                           create=render("scripts/install-unit.sh.j2", unit_text=unit_text,
                                         must_stay_up=must_stay_up, **values),
                           delete=render("scripts/remove-unit.sh.j2", **values),
                           stdin=env_text, triggers=triggers, undo="previous", unit=unit_name,
                           expect=UnitRunning(node.name, unit_name, unit_text))
        self.started = started(self.command)
        self.register_outputs({"unit": unit_name, "node": node.name, "digest": self.digest})


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
