"""The one shape of our components (components/resources/component.py): every ComponentResource under
components/ is `X(name, args, opts=None)` with a frozen args dataclass beside it, and exposes the
same `ready` handle; a node's SSH is one typed Connection; the step context is given to Node."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import typing

import pulumi
import pytest

import components
from components.steps import types
from components.resources.component import Component, Ready
from components.steps.ssh import Connection
from tests.unit.mocked import STACKS, snapshot

KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nnot-a-real-key\n-----END OPENSSH PRIVATE KEY-----\n"


def component_classes() -> list[type]:
    """Every ComponentResource subclass defined in the package (its CLIs, __main__, not run)."""
    for info in pkgutil.walk_packages(components.__path__, "components."):
        if info.name.rsplit(".", 1)[-1] != "__main__":
            importlib.import_module(info.name)
    found, todo = [], [pulumi.ComponentResource]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            if sub.__module__.startswith("components.") and sub is not Component:
                found.append(sub)
    return sorted(set(found), key=lambda c: c.__name__)


CLASSES = component_classes()


def test_the_components_are_found():
    names = {c.__name__ for c in CLASSES}
    assert {"Node", "ServingStack", "ModelCache", "SystemdUnit", "Deployment", "Gateway"} <= names
    assert len(CLASSES) == len({v for k, v in vars(types).items() if k.isupper()})  # one per type token


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_component_takes_name_args_opts_with_a_frozen_args_dataclass(cls):
    assert issubclass(cls, Component), f"{cls.__name__}: derive from components.resources.component.Component"
    assert cls.TYPE in vars(types).values(), f"{cls.__name__}: its TYPE is a token of components/steps/types.py"
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    assert [p.name for p in params] == ["name", "args", "opts"], f"{cls.__name__}{inspect.signature(cls.__init__)}"
    assert params[2].default is None and all(p.default is inspect.Parameter.empty for p in params[:2])
    hints = typing.get_type_hints(cls.__init__, vars(importlib.import_module(cls.__module__)))
    assert hints["name"] is str
    args = hints["args"]
    assert dataclasses.is_dataclass(args) and args.__dataclass_params__.frozen, f"{cls.__name__}: {args}"
    assert args.__name__ == f"{cls.__name__}Args" and args.__module__ == cls.__module__, \
        f"{cls.__name__}: its args are {cls.__name__}Args, beside it"


def components_of(resource: pulumi.Resource) -> list[pulumi.ComponentResource]:
    out = []
    for child in resource._childResources:
        if isinstance(child, pulumi.ComponentResource):
            out += [child, *components_of(child)]
    return out


def descendants(resource: pulumi.Resource) -> set[pulumi.Resource]:
    out = set()
    for child in resource._childResources:
        out |= {child, *descendants(child)}
    return out


@pytest.mark.parametrize("stack", STACKS)
def test_every_component_of_a_stack_exposes_ready_of_its_own_steps(stack):
    serving = snapshot(stack).serving
    built = [serving, *components_of(serving)]
    assert {type(c) for c in built} <= set(CLASSES)
    for c in built:
        assert isinstance(c.ready, Ready), f"{type(c).__name__} {c._name}: ready is {type(c.ready)}"
        # What another component waits for is this component's own work, on nodes of the stack.
        assert set(c.ready.all()) <= descendants(c), f"{type(c).__name__} {c._name}"
        assert set(c.ready.steps) <= set(serving.nodes), f"{type(c).__name__} {c._name}"
        if type(c).__name__ != "Node":  # a Node changes nothing by itself
            assert c.ready.all(), f"{type(c).__name__} {c._name}: nothing to wait for"


@pytest.mark.parametrize("stack", STACKS)
def test_each_node_holds_its_connection_and_the_stack_step_context(stack):
    serving = snapshot(stack).serving
    for node in serving.nodes.values():
        assert isinstance(node.connection, Connection) and node.connection.host == node.spec.host
        assert node.context.observer is serving.observer
        assert node.context.rollback is (serving.rollback if serving.rollback.enabled else None)


class NoMocks(pulumi.runtime.Mocks):
    def new_resource(self, args):
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args):
        return {}


def test_the_connection_hides_its_key_and_gives_the_steps_a_secret_one():
    conn = Connection(host="198.18.0.11", user="root", port=2222, host_key="ssh-ed25519 AAAA", private_key=KEY,
                      connect_timeout_s=30)
    assert "PRIVATE" not in repr(conn)
    assert dataclasses.replace(conn, private_key=None).secret_key() is None
    pulumi.runtime.set_mocks(NoMocks(), preview=True)

    @pulumi.runtime.test
    def check():
        args = conn.command_args()
        assert (args.host, args.port, args.user, args.host_key) == ("198.18.0.11", 2222, "root", "ssh-ed25519 AAAA")
        assert args.per_dial_timeout == 10  # bounded, whatever the node's own timeout
        return pulumi.Output.all(args.private_key.is_secret(), args.private_key).apply(
            lambda v: (assert_secret(*v)))

    check()


def assert_secret(is_secret: bool, key: str) -> None:
    assert is_secret and key == KEY


def test_the_openssh_client_pins_the_host_key_and_reads_no_user_config():
    conn = Connection(host="198.18.0.11", user="root", port=2222, host_key="ssh-ed25519 AAAA")
    with conn.openssh() as (argv, _):
        [option] = [a for a in argv if a.startswith("UserKnownHostsFile=")]
        with open(option.split("=", 1)[1]) as f:
            assert f.read() == "[198.18.0.11]:2222 ssh-ed25519 AAAA\n"
        assert argv[:3] == ["ssh", "-F", "/dev/null"] and "StrictHostKeyChecking=yes" in argv
        assert argv[-3:] == ["-l", "root", "198.18.0.11"]
