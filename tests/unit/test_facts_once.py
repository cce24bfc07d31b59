"""Each node fact is read by one shell, its own (components/facts): a template that holds one of
a fact's command texts outside that shell reads the fact a second time, and may come to disagree
with it. Also: each fact's shell defines the function its descriptor names and reads the fact,
and the one meaning of "running" is the same in the shell and in Python."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from components.facts import ALL, READINGS, unit_state
from components.facts.observation import parse
from components.steps.render import TEMPLATES, render

# (template, fact command text): where a second reading is left on purpose, and why.
KEPT_ON_PURPOSE = {
    # A peer's MTU, read on the peer for the message of an MTU that differs (the fact's shell runs
    # on this node only).
    ("scripts/preflight-fabric.sh.j2", "/sys/class/net/"): "a peer's MTU in the failure message",
    # Discovery's inventory (plain POSIX sh, run before any stack exists): every netdev and RDMA
    # device of a machine, not one stack's fabric link (its memory and GPUs are the readings').
    ("scripts/discover.sh.j2", "/operstate"): "discovery's inventory",
    ("scripts/discover.sh.j2", "/sys/class/net/"): "discovery's inventory",
    ("scripts/discover.sh.j2", "/sys/class/infiniband/"): "discovery's inventory",
    # The link's speed, on each rank's node at the time of the measurement (the floor's basis):
    # not a fact the observation reads.
    ("scripts/preflight-bandwidth.sh.j2", "/sys/class/net/"): "link speed for the bandwidth floor",
    # Our own unit just (re)started: these fail fast unless it is exactly `active` (a unit in an
    # auto-restart shows `activating`, which the observation counts as running).
    **{(f"scripts/{t}", "systemctl is-active"): "our unit just started"
       for t in ("install-unit.sh.j2", "install-gateway.sh.j2", "gateway-health.sh.j2", "rank-watch.sh.j2",
                 "watchdog.sh.j2")},
}


def second_readings(templates: Path = TEMPLATES) -> list[str]:
    found = []
    for path in sorted(p for p in templates.rglob("*") if p.is_file()):
        name = str(path.relative_to(templates))
        text = path.read_text(errors="replace")
        for fact in (*ALL, *READINGS):
            if name in fact.home():
                continue
            for signature in fact.signatures:
                if signature in text and (name, signature) not in KEPT_ON_PURPOSE:
                    found.append(f"{name}: reads the {fact.kind} fact itself ({signature!r}); "
                                 f"include one of {', '.join(fact.home())}")
    return found


def test_no_fact_is_read_outside_its_own_shell():
    assert second_readings() == []


def test_the_scan_finds_a_second_reading(tmp_path):
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "x.sh.j2").write_text('state=$(cat "/sys/class/net/$dev/operstate")\n')
    found = second_readings(tmp_path)
    assert found and all(f.startswith("scripts/x.sh.j2: reads the link fact itself") for f in found)


def test_every_kept_reading_is_still_there():
    for template, signature in KEPT_ON_PURPOSE:
        assert signature in (TEMPLATES / template).read_text(), (template, signature)


@pytest.mark.parametrize("fact", (*ALL, *READINGS), ids=lambda f: f.kind)
def test_each_shell_defines_its_function_and_reads_its_fact(fact):
    """(A fact's signatures also name other ways to read it, which its shell does not take.)"""
    shell = (TEMPLATES / fact.shell).read_text()
    assert f"\n{fact.function}() {{" in shell
    assert any(signature in render(fact.shell) for signature in fact.signatures), fact.kind


def test_running_means_the_same_in_shell_and_python():
    shell = (TEMPLATES / "scripts/facts/unit_running.sh.j2").read_text()
    [states] = re.findall(r'case "\$\(systemctl is-active "\$1" 2>/dev/null\)" in ([a-z|]+)\)', shell)
    assert tuple(states.split("|")) == unit_state.RUNNING


def run_fact(fact_shell: str, call: str) -> str:
    script = render(fact_shell) + call + "\n"
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30).stdout


def test_the_link_fact_on_real_netdevs():
    """The loopback is UP with carrier; a netdev that does not exist is absent."""
    facts = parse(run_fact("scripts/facts/fabric_link.sh.j2", "fabric_link lo; fabric_link bws-none0"))
    assert facts.links["lo"].state == "up" and "127.0.0.1" in facts.links["lo"].addresses
    assert facts.links["bws-none0"].state == "absent"
