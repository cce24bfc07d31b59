"""The bandwidth floor a stack gets by default, on the real engine: with no min_bus_gbps, the
all-reduce preflight holds the bus bandwidth to a fraction of the link speed the nodes report
(gloo: 1 % of the 10000 Mb/s of the lab's veth). The lab's fabric as it is passes; the same fabric
throttled with `tc` (a 50 Mbit/s token bucket on each node's fabric netdev) stops the next `up`
at the preflight, with the measured and the expected figures, before anything is stopped. The
lab stack's config with its first deployment (tests/lab/helpers.py: Stack), as its own stack."""

from __future__ import annotations

import re

import pytest

from tests.lab import topology as lab
from tests.lab.helpers import SPEC, Stack, destroy_lab_stack, nodes_as_found, require_lab, sh

pytestmark = pytest.mark.lab
LAB_STATE = "clean"  # tests/lab/conftest.py: the lab tests run grouped by the state they share
# Only when asked (BWS_LAB_LONG=1): a long lab test of what unit tests also cover, left out of the default run and
# CI, which the whole suite would otherwise push past its 90 minutes (README, "the tests").
LAB_OPT_IN = "BWS_LAB_LONG"

NODE1, NODE2 = lab.nodes(2)
FABRIC = lab.ENV["LAB_FABRIC_IFACE"]
# 50 Mbit/s, 1/200 of what the veth reports; the bucket holds a few 9000-byte frames (a smaller
# burst than one frame drops every frame of the fabric's MTU).
THROTTLE = f"tc qdisc replace dev {FABRIC} root tbf rate 50mbit burst 64kb latency 400ms"
UNTHROTTLE = f"tc qdisc del dev {FABRIC} root 2>/dev/null || true"


@pytest.fixture(scope="module")
def lab_clean():
    require_lab(NODE1, NODE2)
    destroy_lab_stack()


def bandwidth_check(size_mb: int):
    """fabric.bandwidth_check small enough for seconds on the throttled link; no min_bus_gbps."""
    def change(c):
        c["blackwell-serving:fabric"]["bandwidth_check"] = {"size_mb": size_mb, "iterations": 2}
    return change


def test_a_throttled_fabric_fails_the_derived_floor_before_anything_is_stopped(lab_clean, tmp_path):
    stack = Stack(tmp_path, "lab-bandwidth-floor", bandwidth_check(8))
    try:
        up = stack.run("up", "--yes", "--skip-preview")
        out = up.stdout + up.stderr
        assert up.returncode == 0, out[-4000:]
        passed = re.search(r"bus bandwidth ([0-9.]+) Gbit/s between lab-1 and lab-2 \(floor ([0-9.]+) Gbit/s: "
                           r"derived: 0\.01 of the ([0-9]+) Mb/s link speed of lab-[12] [^\n]*", out)
        assert passed, out[-4000:]
        print(passed[0])   # the unthrottled figure and its floor, for the record
        measured, floor, mbps = float(passed[1]), float(passed[2]), int(passed[3])
        assert floor == pytest.approx(mbps * 0.01 / 1000, rel=0.01) and measured >= floor

        before = nodes_as_found()
        for node in (NODE1, NODE2):
            sh(node, THROTTLE)
        # Another size: the check runs again, and only the check.
        stack.change(bandwidth_check(4))
        up = stack.run("up", "--yes", "--skip-preview")
        out = up.stdout + up.stderr
        assert up.returncode != 0, out[-4000:]
        failed = re.search(r"the bus bandwidth between lab-1 and lab-2 is ([0-9.]+) Gbit/s, below the expected "
                           r"([0-9.]+) Gbit/s \(derived: 0\.01 of the ([0-9]+) Mb/s link speed of lab-[12] "
                           rf"\(/sys/class/net/{re.escape(SPEC.fabric.netdev)}/speed\), the slowest node's, as "
                           r"fabric\.bandwidth_check\.min_bus_gbps is not set\); "
                           r"likely cause: gloo moves its data over TCP[^\n]*nothing was stopped", out)
        assert failed, out[-4000:]
        assert float(failed[1]) < float(failed[2]) == floor
        print(failed[0])   # the message, for the record
        assert nodes_as_found() == before
    finally:
        for node in (NODE1, NODE2):
            sh(node, UNTHROTTLE, check=False)
        stack.destroy()
