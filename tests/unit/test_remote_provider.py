"""When the provider re-runs a script: a change of what runs, or drift the program observed; a
change of how the node is reached, or drift that went away, re-runs nothing."""

from __future__ import annotations

import pytest

from components import remote
from components.remote import SshCommandProvider

BASE = {"connection": {"host": "n1"}, "create": "echo hi", "delete": None, "stdin": None, "label": "x on n1",
        "timeout_s": 60, "upload_from": None, "upload_to": None, "upload_digest": None, "triggers": [],
        "observed": ""}
STATE = {**BASE, "stdout": "hi\n", "stderr": ""}


@pytest.fixture
def executed(monkeypatch):
    calls = []
    monkeypatch.setattr(remote, "_execute", lambda props: calls.append(props) or {"stdout": "ran", "stderr": ""})
    return calls


@pytest.mark.parametrize("change,pending,reruns", [
    ({}, False, False),
    ({"create": "echo bye"}, True, True),
    ({"triggers": ["sha256:new"]}, True, True),
    ({"observed": "drift: observed inactive"}, True, True),
    ({"connection": {"host": "n1.new"}}, True, False),
    ({"delete": "echo undo"}, True, False),
])
def test_diff_and_update(change, pending, reruns, executed):
    provider, news = SshCommandProvider(), {**BASE, **change}
    assert provider.diff("id", STATE, news).changes is pending
    if pending:
        outs = provider.update("id", STATE, news).outs
        assert bool(executed) is reruns
        assert outs["stdout"] == ("ran" if reruns else "hi\n")


def test_drift_recorded_then_gone_is_no_change(executed):
    """The state of a step that ran for drift holds the reason; the next plan, with the node as
    it should be, observes "" and must not run it again."""
    after_drift = {**STATE, "observed": "drift: observed inactive"}
    assert SshCommandProvider().diff("id", after_drift, BASE).changes is False
