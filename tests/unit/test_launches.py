"""The launches (components/launches): which node runs which rank, with what command line, what it
claims, and what it refuses; read for every deployment of every shipped stack."""

from __future__ import annotations

import copy
from typing import get_args

import pytest
from pydantic import ValidationError

from components.config import load_stack_file
from components.config.schema import DeploymentSpec
from components.engines import ENGINES, engine_of
from components.launches import LAUNCHES, Topology, launch_of
from tests.unit.config.stacks import REPO, SHIPPED


def deployments():
    for stack in SHIPPED:
        spec = load_stack_file(REPO / "stacks" / f"Pulumi.{stack}.yaml")
        yield from ((stack, d) for d in spec.deployments)


def test_the_schema_takes_exactly_the_launches_and_every_engine_names_only_those():
    assert set(get_args(Topology)) == set(LAUNCHES)
    assert all(e.launches <= set(LAUNCHES) for e in ENGINES.values())


@pytest.mark.parametrize(("stack", "d"), list(deployments()), ids=lambda v: v if isinstance(v, str) else v.name)
def test_each_rank_is_the_engines_argv_for_it_on_its_node(stack, d):
    ranks = launch_of(d).ranks(d, "/models/m", "198.19.0.11")
    # Spelled out here, not read from the launch: one rank per node for the engine's own launch,
    # one on the head otherwise (a Ray launch's other nodes run Ray, not the engine's unit).
    expected_nodes = list(d.nodes) if d.topology == "native" else [d.nodes[0]]
    assert [(r.rank, r.node) for r in ranks] == list(enumerate(expected_nodes))
    assert [list(r.argv) for r in ranks] == [engine_of(d).argv(d, "/models/m", r, "198.19.0.11")
                                            for r in range(len(expected_nodes))]


def lab_deployment(**changes) -> DeploymentSpec:
    spec = load_stack_file(REPO / "stacks" / "Pulumi.lab.yaml")
    d = next(d for d in spec.deployments if d.topology == "native")
    return DeploymentSpec.model_validate({**copy.deepcopy(d.model_dump()), **changes})


def test_the_native_launch_claims_its_rendezvous_port_on_the_head_and_vllm_answers_there_alone():
    d = lab_deployment()
    launch = launch_of(d)
    assert [tuple(c)[:3] for c in launch.port_claims(d, "deployments[0]")] == [
        (d.nodes[0], d.dist_port, "deployments[0].dist_port")]
    assert launch.api_nodes(d) == [d.nodes[0]]   # the other vLLM ranks run --headless
    assert not launch.ray_cluster and launch.spans_nodes


@pytest.mark.parametrize(("changes", "message"), [
    ({"topology": "single"}, "topology: 'single' takes exactly one node; fix: use 'ray' (vLLM) or 'native' "
                             "(SGLang) for more, or list one node"),
    ({"nodes": ["lab-1"]}, "topology: 'native' needs at least two nodes; fix: add a node or use 'single'"),
    ({"executor": "head"}, "executor: 'head' only applies to topology 'ray'; fix: remove it"),
])
def test_a_layout_the_launch_cannot_run_is_refused_with_the_key_and_the_fix(changes, message):
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        lab_deployment(**changes)
