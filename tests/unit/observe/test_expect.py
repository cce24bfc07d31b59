"""Desired versus observed, as data: each case is the facts a probe found and the reason the
step must run again (None: the node is as the step left it)."""

from __future__ import annotations

import pytest

from components.facts import (CacheComplete, CacheCopied, EndpointAnswers, FabricUp, ImageCopied,
                              ImagePresent, RayMembers, UnitKept, UnitRetired, UnitRunning, sha256_text)
from components.facts import LinkFacts, UnitFacts
from components.facts.observation import NodeFacts

TEXT = "[Service]\nExecStart=/bin/true\n"
OURS = sha256_text(TEXT)


def unit(active="active", enabled="enabled", sha=OURS, load="loaded", result="", written="", put_back=False):
    return NodeFacts(units={"bws-x.service": UnitFacts(load, active, enabled, sha, result, written, put_back)})


WRITTEN = sha256_text("[Service]\nExecStart=/bin/true --max-model-len 256\n")  # what the last up wrote


def link(state="up", oper="up", mtu=9000, addresses=("198.19.0.11",)):
    return LinkFacts(state=state, operstate=oper, mtu=mtu, addresses=tuple(addresses))


RUNNING = UnitRunning("n1", "bws-x.service", TEXT)
RETIRED = UnitRetired("n1", "glm.service")
FABRIC = FabricUp("n1", "eth1", "198.19.0.11", 9000, ("mlx5_0/1",))

CASES = [
    # our unit
    ("unit as written", RUNNING, {"n1": unit()}, None),
    ("unit stopped by hand", RUNNING, {"n1": unit(active="inactive")}, "drift: observed inactive"),
    ("unit crashed", RUNNING, {"n1": unit(active="failed")}, "drift: observed failed"),
    ("unit systemd gave up on", RUNNING, {"n1": unit(active="failed", result="start-limit-hit")},
     "drift: observed failed (start-limit-hit)"),
    ("unit failed on its exit code", RUNNING, {"n1": unit(active="failed", result="exit-code")},
     "drift: observed failed (exit-code)"),
    ("unit stopped cleanly names no result", RUNNING, {"n1": unit(active="inactive", result="success")},
     "drift: observed inactive"),
    ("unit starting counts as up", RUNNING, {"n1": unit(active="activating")}, None),
    ("unit disabled by hand", RUNNING, {"n1": unit(enabled="disabled")}, "drift: observed disabled"),
    ("unit file edited", RUNNING, {"n1": unit(sha="0" * 64)}, "drift: unit file bws-x.service edited on the node"),
    # A config change (the program's text differs from what was written; the node's file is what
    # was written) is the step's update, not a drift; an edit is the file differing from what was written.
    ("unit text changed in the config", RUNNING, {"n1": unit(sha=WRITTEN, written=WRITTEN)}, None),
    # A rollback put the previous text back while the state records the new one: no update shows it.
    ("unit put back by a rollback", RUNNING, {"n1": unit(sha=WRITTEN, written=WRITTEN, put_back=True)},
     "drift: unit file bws-x.service put back to its previous version by a rolled-back run"),
    ("unit file edited after a write", RUNNING, {"n1": unit(sha="0" * 64, written=WRITTEN)},
     "drift: unit file bws-x.service edited on the node"),
    ("config change of a stopped unit", RUNNING, {"n1": unit(sha=WRITTEN, written=WRITTEN, active="inactive")},
     "drift: observed inactive"),
    ("unit file deleted", RUNNING, {"n1": unit(sha="absent")}, "drift: unit file bws-x.service absent"),
    ("unit never probed", RUNNING, {"n1": NodeFacts()}, "drift: unit file bws-x.service absent"),
    # a foreign unit we retired
    ("retired stays down", RETIRED,
     {"n1": NodeFacts(units={"glm.service": UnitFacts("loaded", "inactive", "disabled", "absent")})}, None),
    ("retired started by hand", RETIRED,
     {"n1": NodeFacts(units={"glm.service": UnitFacts("loaded", "active", "disabled", "absent")})},
     "drift: glm.service observed active again"),
    ("retired re-enabled", RETIRED,
     {"n1": NodeFacts(units={"glm.service": UnitFacts("loaded", "inactive", "enabled", "absent")})},
     "drift: glm.service observed enabled again"),
    ("retired not installed", RETIRED,
     {"n1": NodeFacts(units={"glm.service": UnitFacts("not-found", "inactive", "", "absent")})}, None),
    # a foreign unit we keep
    ("kept running", UnitKept("n1", "emb.service"),
     {"n1": NodeFacts(units={"emb.service": UnitFacts("loaded", "active", "enabled", "absent")})}, None),
    ("kept stopped", UnitKept("n1", "emb.service"),
     {"n1": NodeFacts(units={"emb.service": UnitFacts("loaded", "failed", "enabled", "absent")})},
     "drift: kept unit emb.service observed failed"),
    # images
    ("image there", ImagePresent("n1", "img:1"), {"n1": NodeFacts(images={"img:1": "sha256:a"})}, None),
    ("image removed", ImagePresent("n1", "img:1"), {"n1": NodeFacts(images={"img:1": "absent"})},
     "drift: image img:1 absent on n1"),
    ("copy matches", ImageCopied("n1", "n2", "img:1"),
     {"n1": NodeFacts(images={"img:1": "sha256:a"}), "n2": NodeFacts(images={"img:1": "sha256:a"})}, None),
    ("copy missing", ImageCopied("n1", "n2", "img:1"),
     {"n1": NodeFacts(images={"img:1": "sha256:a"}), "n2": NodeFacts(images={"img:1": "absent"})},
     "drift: image img:1 absent on n2"),
    ("copy stale", ImageCopied("n1", "n2", "img:1"),
     {"n1": NodeFacts(images={"img:1": "sha256:b"}), "n2": NodeFacts(images={"img:1": "sha256:a"})},
     "drift: image img:1 on n2 differs from n1"),
    # model caches
    ("cache complete", CacheComplete("n1", "/m"), {"n1": NodeFacts(dirs={"/m": "abc"})}, None),
    ("cache deleted", CacheComplete("n1", "/m"), {"n1": NodeFacts(dirs={"/m": "absent"})},
     "drift: model cache /m absent or incomplete on n1"),
    ("cache copy deleted", CacheCopied("n1", "n2", "/m"),
     {"n1": NodeFacts(dirs={"/m": "abc"}), "n2": NodeFacts(dirs={"/m": "absent"})},
     "drift: model cache absent or incomplete on n2"),
    ("cache copy differs", CacheCopied("n1", "n2", "/m"),
     {"n1": NodeFacts(dirs={"/m": "abc"}), "n2": NodeFacts(dirs={"/m": "def"})},
     "drift: model cache on n2 differs from n1"),
    # fabric
    ("fabric up", FABRIC, {"n1": NodeFacts(links={"eth1": link()}, rdma_ports={"mlx5_0/1": "4: ACTIVE"})}, None),
    ("link set down", FABRIC, {"n1": NodeFacts(links={"eth1": link(state="admin-down", oper="down")},
                                               rdma_ports={"mlx5_0/1": "4: ACTIVE"})},
     "drift: fabric netdev eth1 observed administratively down"),
    ("cable out", FABRIC, {"n1": NodeFacts(links={"eth1": link(state="no-carrier", oper="down")},
                                             rdma_ports={"mlx5_0/1": "1: DOWN"})},
     "drift: fabric netdev eth1 observed without carrier (down)"),
    ("address lost", FABRIC, {"n1": NodeFacts(links={"eth1": link(addresses=())}, rdma_ports={"mlx5_0/1": "4: ACTIVE"})},
     "drift: fabric netdev eth1 does not hold 198.19.0.11"),
    ("mtu reset", FABRIC, {"n1": NodeFacts(links={"eth1": link(mtu=1500)}, rdma_ports={"mlx5_0/1": "4: ACTIVE"})},
     "drift: fabric netdev eth1 has MTU 1500, expected 9000"),
    ("rdma port down", FABRIC, {"n1": NodeFacts(links={"eth1": link()}, rdma_ports={"mlx5_0/1": "1: DOWN"})},
     "drift: RDMA port mlx5_0/1 observed 1: DOWN"),
    ("netdev gone", FABRIC, {"n1": NodeFacts(links={"eth1": link(state="absent", oper="")})},
     "drift: fabric netdev eth1 absent"),
    ("virtual link reports unknown", FabricUp("n1", "eth1", "198.19.0.11", 9000),
     {"n1": NodeFacts(links={"eth1": link(oper="unknown")})}, None),
    # cluster and engine
    ("ray complete", RayMembers("n1", "bws-ray-head", 2), {"n1": NodeFacts(ray={"bws-ray-head": 2})}, None),
    ("ray worker lost", RayMembers("n1", "bws-ray-head", 2), {"n1": NodeFacts(ray={"bws-ray-head": 1})},
     "drift: 1 of 2 Ray nodes alive"),
    ("engine answers", EndpointAnswers("n1", "http://127.0.0.1:8000/health"),
     {"n1": NodeFacts(urls={"http://127.0.0.1:8000/health": "200"})}, None),
    ("engine down", EndpointAnswers("n1", "http://127.0.0.1:8000/health"),
     {"n1": NodeFacts(urls={"http://127.0.0.1:8000/health": "000"})},
     "drift: http://127.0.0.1:8000/health not answering"),
    ("engine erroring", EndpointAnswers("n1", "http://127.0.0.1:8000/health"),
     {"n1": NodeFacts(urls={"http://127.0.0.1:8000/health": "503"})},
     "drift: http://127.0.0.1:8000/health not answering (HTTP 503)"),
]


@pytest.mark.parametrize("expectation,facts,reason", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_drift(expectation, facts, reason):
    assert expectation.drift(facts) == reason


@pytest.mark.parametrize("expectation", sorted({type(c[1]): c[1] for c in CASES}.values(), key=repr))
def test_every_expectation_watches_what_it_reads(expectation):
    """What drift() reads is what watch() asks the probe for, on the right node."""
    kinds = {"units", "images", "dirs", "links", "rdma_ports", "urls", "ray"}
    items = list(expectation.watch())
    assert items and all(kind in kinds for _, kind, _ in items)
