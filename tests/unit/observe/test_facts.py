"""The probe's output format, as observe.sh.j2 writes it, and what the parser makes of it."""

from __future__ import annotations

import pytest

from components.facts.observation import LinkFacts, ProbeOutputError, UnitFacts, parse

SAMPLE = "\n".join([
    "unit\tbws-tiny.service\tloaded\tactive\tenabled\t" + "a" * 64,
    "unit\tglm.service\tloaded\tinactive\tdisabled\tabsent",
    "unit\tbws-dead.service\tloaded\tfailed\tenabled\tabsent\tstart-limit-hit\t" + "b" * 64 + "\t",
    "unit\tbws-back.service\tloaded\tactive\tenabled\t" + "c" * 64 + "\tsuccess\t" + "c" * 64 + "\tput-back",
    "unit\tgone.service\tnot-found\tinactive\t\tabsent",
    "image\tblackwell-serving/lab:abc\tsha256:1234",
    "image\tmissing:1\tabsent",
    "dir\t/var/lib/m/x\tabsent",
    "link\teth1\tup\tup\t1500\t198.19.0.11,fe80::1",
    "link\teth9\tabsent\t\t\t",
    "rdma\tmlx5_0/1\t4: ACTIVE",
    "url\thttp://127.0.0.1:8000/health\t200",
    "ray\tbws-tiny-ray-head\t2",
    "",
])


def test_parse_every_kind():
    f = parse(SAMPLE)
    assert f.units["bws-tiny.service"] == UnitFacts("loaded", "active", "enabled", "a" * 64)
    assert f.units["gone.service"].enabled == ""
    assert f.units["bws-dead.service"].result == "start-limit-hit"
    assert f.units["bws-dead.service"].written == "b" * 64 and not f.units["bws-dead.service"].put_back
    assert f.units["bws-back.service"].put_back
    assert f.units["glm.service"].result == ""  # a probe of an earlier version printed none
    assert f.images == {"blackwell-serving/lab:abc": "sha256:1234", "missing:1": "absent"}
    assert f.dirs == {"/var/lib/m/x": "absent"}
    assert f.links["eth1"] == LinkFacts("up", "up", 1500, ("198.19.0.11", "fe80::1"))
    assert f.links["eth9"] == LinkFacts("absent", "", None, ())
    assert f.rdma_ports == {"mlx5_0/1": "4: ACTIVE"}
    assert f.urls == {"http://127.0.0.1:8000/health": "200"}
    assert f.ray == {"bws-tiny-ray-head": 2}
    assert f.unreachable is None


@pytest.mark.parametrize("bad", ["unit\tonly-a-name", "bogus\tx\ty"])
def test_unreadable_lines_are_errors(bad):
    with pytest.raises(ProbeOutputError, match="line 1"):
        parse(bad)
