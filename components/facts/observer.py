"""The Observer gathers every component's expectations while the program builds the stack, then
probes each node once (nodes in parallel, read-only, bounded) and gives each step its reason:
"" when the node is as the step left it, "drift: …" when it is not, "unreachable: …" when the
node could not be asked. In `up`, an unreachable node stops the program before any step runs."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Mapping

import pulumi

from components.facts import Expectation
from components.facts.observation import NodeFacts, ProbeOutputError, Watch, parse, probe_script
from components.steps.ssh import Connection, RemoteError, run_script

PROBE_TIMEOUT_S = 60


class ObserveError(Exception):
    """A node could not be observed before `up`: nothing was changed on any node."""


Prober = Callable[[str, Watch], NodeFacts]


class Observer:
    def __init__(self, connections: Mapping[str, Connection], *, dry_run: bool,
                 prober: Prober | None = None, log: Callable[[str], None] = pulumi.log.info):
        self._connections = dict(connections)      # node → its SSH (components/steps/ssh.py)
        self._dry_run = dry_run
        self._prober = prober or self._ssh_probe
        self._log = log
        self._watch: dict[str, Watch] = {n: Watch() for n in self._connections}
        self._facts: dict[str, NodeFacts] | None = None
        self._failure: ObserveError | None = None

    def verdict(self, expectation: Expectation | None) -> Callable[[], str]:
        """The step's observed reason, to be asked once observe() ran (it runs at the end of the
        program body, before any step is registered with the engine)."""
        if expectation is not None:
            if self._facts is not None:
                raise RuntimeError("an expectation was added after the nodes were observed")
            for node, kind, key in expectation.watch():
                getattr(self._watch[node], kind).add(key)
        return lambda: self.evaluate(expectation)

    def evaluate(self, expectation: Expectation | None) -> str:
        if self._failure is not None:
            raise self._failure     # `up` with a node unobserved: no step may be planned at all
        if self._facts is None:
            # The program stopped before it reached observe(): its own error says why.
            raise RuntimeError("the program stopped before the nodes were observed (see the error above)")
        if expectation is None:
            return ""
        for node, _, _ in expectation.watch():
            if self._facts[node].unreachable:
                return f"unreachable: {self._facts[node].unreachable}"
        return expectation.drift(self._facts) or ""

    def observe(self) -> dict[str, NodeFacts]:
        todo = {n: w for n, w in self._watch.items() if not w.empty()}
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=max(1, min(16, len(todo)))) as pool:
            found = dict(zip(todo, pool.map(self._observe_one, todo, todo.values())))
        self._facts = {n: found.get(n, NodeFacts()) for n in self._watch}
        seconds = time.monotonic() - started
        for n, f in found.items():
            if not f.unreachable:
                self._log(f"observed {n}: {len(f.units)} units, {len(f.images)} images, "
                          f"{len(f.dirs)} model caches, {len(f.links)} links, {len(f.urls)} endpoints "
                          f"({len(found)} nodes in {seconds:.1f} s)")
        lost = {n: f.unreachable for n, f in self._facts.items() if f.unreachable}
        if lost and not self._dry_run:
            self._failure = ObserveError(
                "cannot observe " + "; ".join(f"{n}: {why}" for n, why in lost.items())
                + ". Nothing was changed on any node; bring the node back (or remove it from the stack "
                "config) and run again.")
            raise self._failure
        for n, why in lost.items():
            pulumi.log.warn(f"node {n} is unreachable, its steps show as pending: {why}")
        return self._facts

    def _observe_one(self, node: str, watch: Watch) -> NodeFacts:
        try:
            return self._prober(node, watch)
        except (RemoteError, ProbeOutputError, OSError) as err:
            return NodeFacts(unreachable=str(err).strip().splitlines()[0][:300])

    def _ssh_probe(self, node: str, watch: Watch) -> NodeFacts:
        out, _ = run_script(self._connections[node], probe_script(watch), timeout_s=PROBE_TIMEOUT_S,
                            what=f"observe {node}")
        return parse(out)
