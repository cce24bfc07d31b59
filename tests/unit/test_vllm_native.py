"""vLLM's own multi-node launch (topology native, stack spark-duo-native): one `vllm serve` per
node with --nnodes/--node-rank, meeting on the head's fabric address, the other ranks
--headless and started first; no Ray; a rank watch on each other node (tests/lab found that a
rank whose head restarted alone waits for ever)."""

from __future__ import annotations

import subprocess

from components.engines import ENGINES
from tests.unit.mocked import script_of, snapshot
from tests.unit.test_graph import closure, dep_names

_SNAP = {}


def snap():
    if "s" not in _SNAP:
        _SNAP["s"] = snapshot("spark-duo-native")
    return _SNAP["s"]


def flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_each_rank_has_its_node_rank_and_meets_on_the_heads_fabric_address():
    d = snap().spec.deployments[0]
    vllm = ENGINES["vllm"]
    head, worker = vllm.argv(d, "/m", 0, "192.168.200.12"), vllm.argv(d, "/m", 1, "192.168.200.12")
    for rank, argv in enumerate((head, worker)):
        assert flag(argv, "--nnodes") == "2" and flag(argv, "--node-rank") == str(rank)
        assert flag(argv, "--master-addr") == "192.168.200.12" and flag(argv, "--master-port") == "29501"
        assert "--distributed-executor-backend" not in argv
    assert "--headless" in worker and "--headless" not in head
    # Everything but the rank's own flags is the same on both ranks (vLLM checks the configs agree).
    strip = lambda a: [x for x in a if x not in ("--headless", "0", "1")]
    assert strip(head) == strip(worker)


def test_units_on_both_nodes_the_worker_first_and_no_ray():
    s = snap()
    units = {u.node.name: u for u in s.units if u.unit_name == "bws-qwen35.service"}
    assert set(units) == {"spark-1a32", "spark-5be3"}
    assert "--headless" in units["spark-5be3"].unit_text and "--headless" not in units["spark-1a32"].unit_text
    assert 'Environment="VLLM_HOST_IP=192.168.200.13"' in units["spark-5be3"].unit_text
    assert 'Environment="GLOO_SOCKET_IFNAME=enp1s0f1np1"' in units["spark-5be3"].unit_text
    assert "qwen35-spark-5be3-install" in dep_names(s.by_name("qwen35-spark-1a32-install"))
    # A rank whose peer died exits 0 (vLLM 0.32): restarted all the same.
    assert all("\nRestart=always\n" in u.unit_text for u in units.values())
    assert not [r for r in s.steps() if "-ray-" in r.name]


def test_the_rank_watch_is_armed_on_the_worker_after_the_gate():
    s = snap()
    watch = s.by_name("qwen35-rank1-watch-timer")
    assert "qwen35-health" in closure(s, "qwen35-rank1-watch-timer")
    script = script_of(watch)
    assert "read -r a b c d <<< 192.168.200.12" in script
    assert "docker inspect -f '{{.State.Pid}}' bws-qwen35" in script
    assert 'systemctl restart "$engine"' in script and "engine=bws-qwen35.service" in script
    # Only the other ranks have one; the head has the completion watchdog.
    assert not [r for r in s.steps() if r.name.startswith("qwen35-rank0")]
    assert s.by_name("qwen35-watchdog-timer")


def test_the_rank_watch_counts_only_established_links_to_the_head(tmp_path):
    """The address conversion and the /proc/net/tcp match of the watch's script, run here on a
    made-up table: two sockets of the rank, one established to the head, one listening."""
    table = tmp_path / "tcp"
    table.write_text(
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
        "   0: 0DC8A8C0:9E7D 0CC8A8C0:8AB3 01 00000000:00000000 00:00000000 00000000     0        0 111 1\n"
        "   1: 0DC8A8C0:9E7E 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 222 1\n"
        "   2: 0DC8A8C0:9E7F 0CC8A8C0:8AB4 01 00000000:00000000 00:00000000 00000000     0        0 333 1\n")
    script = script_of(snap().by_name("qwen35-rank1-watch-timer"))
    body = script[script.index("IFS=. read -r a b c d"):script.index('if [ "$links" -gt 0 ]')]
    body = body.replace('"/proc/$pid/net/tcp"', str(table))
    out = subprocess.run(["bash", "-c", "set -euo pipefail\nsockets=$'111\\n222'\n" + body + 'echo "$links"'],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "1"  # socket 333 is not the rank's; 222 only listens
