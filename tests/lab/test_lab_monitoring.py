"""Monitoring on the lab, on the real engine: a one-engine stack (the engine on lab-1) with
`monitoring:` on lab-2, so that Prometheus scrapes the engine and lab-1's exporter across the
management network. After the `up`: Prometheus answers, every target is up (itself, the engine,
both exporters), a few completions make the deployment's decode tok/s recorded series return data
above 0, and every query of the stack's dashboard returns data. The destroy removes Prometheus,
the exporters, their files, and the packages the `up` installed (a package the node already had
stays). Short scrape and evaluation intervals (5 s) keep it to a few minutes.

Between the two, the wedged engine as its users meet it: requests run, the engine's core process
is stopped (SIGSTOP: its API process still answers /health and /metrics, so `up` stays 1), and the
wedged alert goes pending, then fires, once the progress rate's window has seen no work and its
`for` (the stack's alerts.wedged_s, 30 s here) has passed; the engine-down alert does not fire
meanwhile. Then the watchdog, set slower here than the alert (WATCHDOG: its checks fail once the
core stopped, its work counters flat, and `failures` of them in a row restart the engine), restarts
the engine, and the alert clears; the timeline is printed.

The packages come from the node's own apt (a real node) or from the lab's rootfs (tests/lab/rootfs.sh
carries them, their units off); a node that has neither fails the `up` with apt's own words."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from dataclasses import dataclass

import pytest

from components import names
from components.config.load import load_stack_file
from components.monitoring.alerts import ENGINE_DOWN, ENGINE_WEDGED
from components.monitoring.dashboard import stack_dashboard
from components.monitoring.deploy import EXPORTER_PACKAGE, PROMETHEUS_PACKAGE
from components.monitoring.promapi import Prometheus
from components.monitoring.series import DECODE_TOKENS, REQUESTS_RUNNING, matchers
from tests.lab import topology as lab
from tests.lab.helpers import (Stack, api_key, base_image_only, completion, destroy_lab_stack, journal_since,
                               node_now, one_node, ours_left, prometheus_answers, require_lab, sh, unhealthy_targets,
                               unit_prop)
from tests.wait import wait_until

pytestmark = pytest.mark.lab
LAB_STATE = "clean"  # tests/lab/conftest.py: the lab tests run grouped by the state they share

NODE1, NODE2 = lab.nodes(2)
STACK_NAME = "lab-monitoring"
PORT = 9090
SCRAPE_S = 5
WEDGED_S = 30
# Slower than the alert (its 2-minute rate window, then WEDGED_S): about 3 × (60 + 30) s after the
# stop, where the alert fires about 150 s after it. A check waits 60 s: the lab's CPU engine, on
# two cores the other lab tests share, can take tens of seconds for eight tokens.
WATCHDOG = {"interval_s": 30, "timeout_s": 60, "failures": 3}


def packages_on(node: lab.Node) -> dict[str, str]:
    """Each monitoring package's dpkg status on the node ("" when absent)."""
    return {p: sh(node, f"dpkg-query -W -f '${{Status}}' {p} 2>/dev/null || true")
            for p in (PROMETHEUS_PACKAGE, EXPORTER_PACKAGE)}


@pytest.fixture(scope="module")
def lab_clean():
    require_lab(NODE1, NODE2)
    api_key()
    destroy_lab_stack()


def monitored(c: dict) -> None:
    one_node(c)
    base_image_only(c)
    c["blackwell-serving:monitoring"] = {
        "node": "lab-2", "port": PORT, "scrape_interval_s": SCRAPE_S, "evaluation_interval_s": SCRAPE_S,
        "alerts": {"engine_down_s": 30, "wedged_s": WEDGED_S, "memory_pressure_s": 30}}
    c["blackwell-serving:deployments"][0]["watchdog"] = WATCHDOG


@dataclass
class Monitored:
    stack: Stack
    spec: object
    prom: Prometheus
    packages_before: dict
    destroyed: bool = False


@pytest.fixture(scope="module")
def monitored_stack(lab_clean, tmp_path_factory):
    before = {n.name: packages_on(n) for n in (NODE1, NODE2)}
    stack = Stack(tmp_path_factory.mktemp("monitoring"), STACK_NAME, monitored)
    state = Monitored(stack, load_stack_file(stack.project / "stacks" / f"Pulumi.{STACK_NAME}.yaml"),
                      Prometheus(f"http://{NODE2.mgmt_ip}:{PORT}"), before)
    try:
        up = stack.run("up", "--yes", "--skip-preview")
        assert up.returncode == 0, failure_of(up)
        yield state
    finally:
        if not state.destroyed:
            stack.run("destroy", "--yes", "--skip-preview")


def failure_of(run) -> str:
    """A failed run's FAILED blocks first (the first failure starts a rollback whose own failures
    come last), then the end of its output."""
    out = run.stdout + run.stderr
    blocks = [out[i:i + 1500] for i in range(len(out)) if out.startswith("FAILED:", i)]
    return "\n---\n".join(blocks[:3]) + "\n...\n" + out[-3000:]


def test_prometheus_scrapes_every_target_and_the_dashboard_has_data(monitored_stack):
    stack, spec, prom = monitored_stack.stack, monitored_stack.spec, monitored_stack.prom

    # Itself, the engine, an exporter on each node.
    unhealthy = lambda: unhealthy_targets(prom, 4)  # noqa: E731
    wait_until(lambda: not unhealthy(), 90, "every target up", seen=unhealthy)
    for t in prom.targets():
        assert t.labels["stack"] == STACK_NAME and t.labels["node"] in ("lab-1", "lab-2"), t.labels

    decode = f"{DECODE_TOKENS.name}{{{matchers(stack=STACK_NAME, deployment='tiny')}}}"

    def decoding() -> bool:
        completion()
        return any(s.value > 0 for s in prometheus_answers(prom, decode))
    wait_until(decoding, 180, f"{decode} above 0 after completions", seen=lambda: prometheus_answers(prom, decode),
               every_s=SCRAPE_S)

    queries = [t.expr for row in stack_dashboard(STACK_NAME, spec).rows for p in row.panels for t in p.targets]
    assert len(queries) >= 8 + 2 * 3, queries   # vLLM's eight series, three per node

    def empty() -> list[str]:
        return [q for q in queries if not prometheus_answers(prom, q)]
    # The 5-minute percentiles and the node series need a few evaluations.
    wait_until(lambda: not empty(), 120, "every dashboard query returns data", seen=empty, every_s=SCRAPE_S)


TIMELINE = {}   # what test_a_wedged_engine... saw: seconds from the stop to each state


def test_a_wedged_engine_raises_its_alert_and_the_watchdogs_restart_clears_it(monitored_stack):
    prom, engine = monitored_stack.prom, monitored_stack.spec.deployments[0]
    where = matchers(stack=STACK_NAME, deployment="tiny")
    wedged = f'ALERTS{{alertname="{ENGINE_WEDGED}",{where}}}'
    down = f'ALERTS{{alertname="{ENGINE_DOWN}",{where}}}'
    running = f"{REQUESTS_RUNNING.name}{{{where}}}"
    restarts = f'{names.WATCHDOG_RESTARTS_METRIC}{{deployment="tiny"}}'
    watchdog = names.watchdog_units("tiny")[0]
    since = node_now(NODE1)
    # The watchdog judges a start only once it has answered (before: it is loading its weights):
    # one of its checks has seen this start of the engine answer before the load begins.
    engine_unit = names.engine_unit("tiny")
    answered = f"{names.WATCHDOG_RUN_DIR}/tiny.answered"
    confirmed = lambda: sh(NODE1, f"cat {answered} 2>/dev/null || true") == unit_prop(NODE1, engine_unit, "InvocationID")  # noqa: E731
    wait_until(confirmed, 4 * (WATCHDOG["interval_s"] + WATCHDOG["timeout_s"]), "the watchdog's first answer",
               seen=lambda: journal_since(NODE1, watchdog, since)[-1500:], every_s=5)
    with Load(NODE1.mgmt_ip, engine.port, api_key(), engine.served_name) as load:
        wait_until(lambda: load.answered >= 2, 120, "completions under load", seen=lambda: load.errors[-3:])
        core = engine_core_pid()
        for attempt in range(3):
            # The stop must catch requests in flight: the gauge keeps what the core last reported.
            wait_until(lambda: any(s.value > 0 for s in prometheus_answers(prom, running)), 60, "requests running",
                       seen=lambda: prometheus_answers(prom, running), every_s=1)
            sh(NODE1, f"kill -STOP {core}")
            stopped = time.monotonic()
            try:
                time.sleep(2 * SCRAPE_S)   # let Prometheus scrape the stopped engine's last figures
                still = [s.value for s in prometheus_answers(prom, running)]
                if still and still[0] > 0:
                    break
            except BaseException:
                sh(NODE1, f"kill -CONT {core}")
                raise
            sh(NODE1, f"kill -CONT {core}")
        else:
            pytest.fail(f"no requests running when the core was stopped, in 3 tries: {still}")
        try:
            def state() -> str:
                return next((s.labels.get("alertstate", "") for s in prometheus_answers(prom, wedged)), "")
            wait_until(lambda: state() == "pending", 240, "the wedged alert pending", seen=state, every_s=SCRAPE_S)
            TIMELINE["pending_s"] = round(time.monotonic() - stopped)
            wait_until(lambda: state() == "firing", 120, "the wedged alert firing", seen=state, every_s=SCRAPE_S)
            TIMELINE["firing_s"] = round(time.monotonic() - stopped)
            assert prometheus_answers(prom, down) == [], "the engine's API answered all along: not down"
            assert all(s.value == 1 for s in prometheus_answers(prom, f'up{{{where}}}')), prometheus_answers(prom, f'up{{{where}}}')
            restarted = lambda: any(s.value >= 1 for s in prometheus_answers(prom, restarts))  # noqa: E731
            assert not restarted(), "the watchdog restarted the engine before the alert fired: set it slower"
            wait_until(restarted, WATCHDOG["failures"] * (WATCHDOG["interval_s"] + WATCHDOG["timeout_s"] + 10) + 60,
                       "the watchdog's restart", seen=lambda: journal_since(NODE1, watchdog, since)[-1500:],
                       every_s=SCRAPE_S)
            restarted_at = time.monotonic()
            TIMELINE["restarted_s"] = round(restarted_at - stopped)
            wait_until(lambda: prometheus_answers(prom, wedged) == [], 120, "the wedged alert cleared",
                       seen=lambda: prometheus_answers(prom, wedged), every_s=SCRAPE_S)
            TIMELINE["cleared_s"] = round(time.monotonic() - stopped)
        finally:
            sh(NODE1, f"kill -CONT {core} 2>/dev/null || true")   # gone once restarted
        wait_until(lambda: load.answered_since(restarted_at) >= 1, 300,
                   "completions from the restarted engine", seen=lambda: load.errors[-3:])
        TIMELINE["serving_again_s"] = round(time.monotonic() - stopped)
    journal = journal_since(NODE1, watchdog, since)
    print(f"wedged timeline (s from SIGSTOP): {TIMELINE}")
    # It cannot fire before its `for` has passed in pending.
    assert TIMELINE["firing_s"] - TIMELINE["pending_s"] >= WEDGED_S - SCRAPE_S, TIMELINE
    failures = [line for line in journal.splitlines() if "no completion (" in line]
    assert len(failures) >= WATCHDOG["failures"] and "restarting" in journal, journal[-3000:]


def engine_core_pid() -> str:
    """vLLM's core process (its title VLLM::EngineCore), the one that does the work: stopped, the
    API process in front of it still answers."""
    pids = sh(NODE1, "pgrep -f '^VLLM::EngineCore' || true").split()
    assert len(pids) == 1, f"one engine core expected on {NODE1.name}: {pids}"
    return pids[0]


class Load:
    """Chat completions sent back to back from CLIENTS threads (each ignore_eos, as long as the
    model's context allows), so that requests are running at any moment; ends with the block."""
    CLIENTS = 3

    def __init__(self, host: str, port: int, key: str, model: str):
        self.url, self.key, self.model = f"http://{host}:{port}/v1/chat/completions", key, model
        self.answered, self.errors, self.answers = 0, [], []
        self.done = threading.Event()
        self.threads = [threading.Thread(target=self.client, daemon=True) for _ in range(self.CLIENTS)]

    def client(self) -> None:
        body = json.dumps({"model": self.model, "max_tokens": 200, "ignore_eos": True, "temperature": 1.0,
                           "messages": [{"role": "user", "content": "Count."}]}).encode()
        while not self.done.is_set():
            request = urllib.request.Request(self.url, data=body, headers={
                "Content-Type": "application/json", "Authorization": f"Bearer {self.key}"})
            try:
                with urllib.request.urlopen(request, timeout=600) as reply:
                    json.loads(reply.read())
                self.answered += 1
                self.answers.append(time.monotonic())
            except Exception as err:  # noqa: BLE001 — what the load saw is shown if it never answers
                self.errors.append(repr(err))
                self.done.wait(1)

    def answered_since(self, moment: float) -> int:
        return sum(1 for t in self.answers if t > moment)

    def __enter__(self) -> "Load":
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc) -> None:
        self.done.set()
        for t in self.threads:
            t.join(timeout=600)


def test_destroy_gives_the_nodes_back(monitored_stack):
    monitored_stack.destroyed = True
    monitored_stack.stack.destroy()
    before = monitored_stack.packages_before
    for node in (NODE1, NODE2):
        left = ours_left(node)
        assert left == {"unit files": [], "containers": []}, (node.name, left)
        files = sh(node, f"ls -d {names.PROMETHEUS_CONFIG_DIR} {names.PROMETHEUS_DATA_DIR} "
                         f"{names.PACKAGE_RECORDS_DIR}/* 2>/dev/null || true")
        assert files == "", (node.name, files)
        assert packages_on(node) == before[node.name], node.name
