"""The resource transform that carries a step's observation (components/remote.drift_transform):
a drifted step gets a fresh stamped environment entry (an update: its converge script runs
again, in place), a step as expected gets ignore_changes on its environment (the old stamp in
the state is no change)."""

from __future__ import annotations

import time

import pulumi

from components.steps.remote import DRIFT_VAR, drift_reason, drift_transform


def args(props: dict) -> pulumi.ResourceTransformArgs:
    return pulumi.ResourceTransformArgs(custom=True, type_="command:remote:Command", name="x", props=props,
                                        opts=pulumi.ResourceOptions(delete_before_replace=True))


def test_a_drifted_step_carries_a_stamped_observation():
    result = drift_transform(lambda: "drift: observed inactive")(args({"create": "c"}))
    value = result.props["environment"][DRIFT_VAR]
    assert value.startswith("drift: observed inactive (observed 20") and result.props["create"] == "c"
    assert drift_reason(result.props["environment"]) == "drift: observed inactive"
    assert not result.opts.ignore_changes and result.opts.delete_before_replace


def test_two_observations_of_the_same_drift_differ_so_the_engine_always_sees_a_change():
    transform = drift_transform(lambda: "drift: x")
    first = transform(args({})).props["environment"]
    time.sleep(0.002)
    assert transform(args({})).props["environment"] != first


def test_a_step_as_expected_ignores_its_environment():
    result = drift_transform(lambda: "")(args({"create": "c", "environment": {DRIFT_VAR: "old (observed t)"}}))
    assert result.props == {"create": "c", "environment": {DRIFT_VAR: "old (observed t)"}}
    assert result.opts.ignore_changes == ["environment"] and result.opts.delete_before_replace
