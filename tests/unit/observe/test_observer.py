"""The Observer without nodes: a fake prober stands in for SSH (the lab tests run the real one)."""

from __future__ import annotations

import pytest

from components.facts.observer import ObserveError, Observer
from components.facts import UnitRunning, sha256_text
from components.facts.observation import NodeFacts, UnitFacts
from components.steps.ssh import Connection, RemoteError

TEXT = "[Service]\nExecStart=/bin/true\n"


def facts_of(active: str) -> NodeFacts:
    return NodeFacts(units={"bws-x.service": UnitFacts("loaded", active, "enabled", sha256_text(TEXT))})


class FakeProber:
    def __init__(self, answers):
        self.answers, self.calls = answers, []

    def __call__(self, node, watch):
        self.calls.append((node, watch))
        answer = self.answers[node]
        if isinstance(answer, Exception):
            raise answer
        return answer


def observer(answers, dry_run=True):
    prober = FakeProber(answers)
    connections = {n: Connection(host=n, user="root", port=22, host_key="ssh-ed25519 AAAA") for n in answers}
    return Observer(connections, dry_run=dry_run, prober=prober, log=lambda _: None), prober


def test_one_probe_per_node_with_everything_it_must_look_at():
    obs, prober = observer({"n1": facts_of("inactive"), "n2": facts_of("active"), "idle": NodeFacts()})
    a, b = UnitRunning("n1", "bws-x.service", TEXT), UnitRunning("n2", "bws-x.service", TEXT)
    for e in (a, b, UnitRunning("n1", "bws-y.service", TEXT)):
        obs.verdict(e)
    obs.observe()
    assert sorted(n for n, _ in prober.calls) == ["n1", "n2"]       # a node nobody watches is not probed
    watched = dict(prober.calls)
    assert watched["n1"].units == {"bws-x.service", "bws-y.service"}
    assert obs.evaluate(a) == "drift: observed inactive"
    assert obs.evaluate(b) == ""
    assert obs.evaluate(None) == ""


def test_an_unreachable_node_makes_its_steps_pending_in_a_preview(monkeypatch):
    monkeypatch.setattr("pulumi.log.warn", lambda *_: None)
    obs, _ = observer({"n1": RemoteError("observe n1: cannot reach root@n1:22 by SSH"), "n2": facts_of("active")})
    a, b = UnitRunning("n1", "bws-x.service", TEXT), UnitRunning("n2", "bws-x.service", TEXT)
    obs.verdict(a), obs.verdict(b)
    obs.observe()
    assert obs.evaluate(a) == "unreachable: observe n1: cannot reach root@n1:22 by SSH"
    assert obs.evaluate(b) == ""


def test_an_unreachable_node_stops_up_before_any_step():
    obs, _ = observer({"n1": RemoteError("observe n1: cannot reach root@n1:22 by SSH")}, dry_run=False)
    obs.verdict(UnitRunning("n1", "bws-x.service", TEXT))
    with pytest.raises(ObserveError, match="n1: observe n1: cannot reach.*Nothing was changed"):
        obs.observe()


def test_steps_cannot_be_evaluated_before_observation_nor_added_after():
    obs, _ = observer({"n1": facts_of("active")})
    with pytest.raises(RuntimeError, match="stopped before the nodes were observed"):
        obs.evaluate(None)
    obs.observe()
    with pytest.raises(RuntimeError, match="after the nodes were observed"):
        obs.verdict(UnitRunning("n1", "bws-x.service", TEXT))


def test_probe_script_is_read_only_and_quotes_every_name():
    from components.facts.observation import Watch, probe_script
    script = probe_script(Watch(units={"a b;rm -rf /.service"}, images={"x:$(id)"},
                                dirs={"/m/d"}, links={"eth1"}, rdma_ports={"mlx5_0/1"},
                                urls={"http://127.0.0.1:8000/health"}, ray={"c"}))
    assert "unit_state 'a b;rm -rf /.service'" in script and "image_state 'x:$(id)'" in script
    for verb in ("systemctl start", "systemctl stop", "systemctl restart", "docker rm", "docker run", " rm ",
                 "mkdir", "> /", "ip link set"):
        assert verb not in script


def test_after_a_failed_observation_in_up_no_step_can_be_planned():
    obs, _ = observer({"n1": RemoteError("observe n1: cannot reach root@n1:22 by SSH")}, dry_run=False)
    obs.verdict(UnitRunning("n1", "bws-x.service", TEXT))
    with pytest.raises(ObserveError):
        obs.observe()
    with pytest.raises(ObserveError, match="Nothing was changed"):
        obs.evaluate(None)
