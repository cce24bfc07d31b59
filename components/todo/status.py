"""python -m components.todo --status --stack STACK: each deployment's health (a real /health and
/v1/models on its head), its last benchmark (the stack output `benchmark` the last `up` left)
and its memory ledger (`memory_ledger`: the KV cache predicted beside the engine's own figure),
and each node's GPU memory (nvidia-smi where present) and MemAvailable, from ONE read-only SSH
probe per node (templates/scripts/status.sh.j2, run as the observer runs its probe:
components/steps/ssh.py run_script, host key pinned, nodes in parallel, bounded). An offline stack
(`offline`, or BLACKWELL_SERVING_OFFLINE=1) opens no connection and says so."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from components import names
from components.config.schema import StackSpec
from components.engines import ENGINES
from components.steps.render import render
from components.steps.ssh import Connection, RemoteError, run_script

PROBE_TIMEOUT_S = 60
Probe = Callable[[str, Connection, str], str]   # (node, connection, script) → stdout


@dataclass
class NodeStatus:
    health: dict[str, tuple[str, bool]] = field(default_factory=dict)   # deployment → (HTTP code, model listed)
    gpus: list[tuple[str, float | None, float | None]] = field(default_factory=list)   # (index, used MiB, total MiB)
    mem_kb: tuple[int, int] | None = None                                 # (MemAvailable, MemTotal)
    error: str | None = None


def probe_script(spec: StackSpec, node: str) -> str:
    """The node's probe: every deployment headed there, asked on loopback (as the health gate)."""
    deployments = []
    for d in spec.deployments:
        if d.nodes[0] != node:
            continue
        address = "127.0.0.1" if str(d.bind) == "0.0.0.0" else str(d.bind)
        deployments.append(dict(name=d.name, base=f"http://{address}:{d.port}", served_name=d.served_name,
                                env_file=names.engine_env_file(d.name) if d.api_key else None,
                                key_var=ENGINES[d.engine].api_key_var))
    return render("scripts/status.sh.j2", deployments=deployments)


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None   # "[N/A]": unified memory (GB10) has no GPU memory of its own


def parse(stdout: str) -> NodeStatus:
    st = NodeStatus()
    for line in stdout.splitlines():
        parts = line.split("\t")
        if parts[0] == "health" and len(parts) == 4:
            st.health[parts[1]] = (parts[2], parts[3] == "yes")
        elif parts[0] == "gpu" and len(parts) == 4:
            st.gpus.append((parts[1], _number(parts[2]), _number(parts[3])))
        elif parts[0] == "mem" and len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            st.mem_kb = (int(parts[1]), int(parts[2]))
    return st


def connection_for(node, secret: Callable[[str], str | None] | None = None) -> Connection:
    """The node's SSH connection as the program's probe makes it: private_key_path read here, a
    private_key reference resolved ({config: K} through `secret`, the stack's config), else the
    SSH agent."""
    key = None
    ref = node.ssh.private_key
    if ref is None and node.ssh.private_key_path:
        path = Path(os.path.expanduser(node.ssh.private_key_path))
        key = path.read_text() if path.is_file() else None
    elif ref is not None:
        if ref.env:
            key = os.environ.get(ref.env)
        elif ref.file:
            path = Path(os.path.expanduser(ref.file))
            key = path.read_text() if path.is_file() else None
        elif ref.config and secret is not None:
            key = secret(ref.config)
    return Connection.of_node(node, key)


def _ssh_probe(node: str, conn: Connection, script: str) -> str:
    out, _ = run_script(conn, script, timeout_s=PROBE_TIMEOUT_S, what=f"status of {node}")
    return out


def gather(spec: StackSpec, connections: Mapping[str, Connection], probe: Probe = _ssh_probe) -> dict[str, NodeStatus]:
    """node → its status, every node probed once, in parallel."""
    def one(name: str) -> NodeStatus:
        try:
            return parse(probe(name, connections[name], probe_script(spec, name)))
        except (RemoteError, OSError) as err:
            return NodeStatus(error=(str(err).strip().splitlines() or ["no answer"])[0][:300])
    names = [n.name for n in spec.nodes]
    with ThreadPoolExecutor(max_workers=max(1, min(16, len(names)))) as pool:
        return dict(zip(names, pool.map(one, names)))


def is_offline(spec: StackSpec) -> bool:
    return bool(spec.offline) or os.environ.get("BLACKWELL_SERVING_OFFLINE") == "1"


def benchmark_line(figures: Mapping | None) -> str:
    if not figures:
        return "no benchmark yet"
    try:
        return (f"{float(figures['decode_tok_s']):.1f} tok/s decode, first token in {float(figures['ttft_ms']):.0f} ms, "
                f"{float(figures['aggregate_tok_s']):.1f} tok/s aggregate at concurrency {int(figures['concurrency'])}")
    except (KeyError, TypeError, ValueError):
        return "no benchmark yet"


def ledger_line(entry: Mapping | None) -> str:
    """The memory ledger's entry (stack output `memory_ledger`): predicted KV tokens beside the
    engine's own, and what its container held after the health gate."""
    predicted = (entry or {}).get("predicted") or {}
    measured = (entry or {}).get("measured") or {}
    if not predicted:
        return "no prediction (the model's config was not read)"
    line = f"KV cache predicted {predicted['kv_tokens']:,} tokens"
    if measured.get("kv_tokens"):
        line += f", the engine's own {measured['kv_tokens']:,} ({entry.get('kv_tokens_error_pct', 0):+.1f} %)"
    else:
        line += ", the engine's own not read yet"
    if measured.get("memory_bytes"):
        line += f"; it held {measured['memory_bytes'] / 2**30:.2f} GiB"
    return line


def benchmark_lines(outputs: Mapping) -> list[str]:
    """The todo summary's lines after an `up`: one per deployment the stack output `benchmark` has."""
    figures = outputs.get("benchmark") or {}
    return [f"  benchmark {name}: {benchmark_line(f)}" for name, f in sorted(figures.items()) if f]


def _gib(mib: float) -> str:
    return f"{mib / 1024:.1f}"


def render_status(stack: str, spec: StackSpec, outputs: Mapping, found: Mapping[str, NodeStatus] | None) -> str:
    """The status view. found None: offline, nothing was asked."""
    lines = [f"Status of stack {stack}"]
    if found is None:
        lines.append("  offline: no node was contacted (health and memory unknown); the last benchmark is "
                     "the state's")
    bench = outputs.get("benchmark") or {}
    ledger = outputs.get("memory_ledger") or {}
    for d in spec.deployments:
        head = d.nodes[0]
        if found is None:
            health = "unknown (offline)"
        elif found[head].error:
            health = f"unknown: {head} did not answer ({found[head].error})"
        elif d.name not in found[head].health:
            health = "unknown (not probed)"
        else:
            code, listed = found[head].health[d.name]
            ok = code == "200" and listed
            health = ("healthy" if ok else "UNHEALTHY") + f" (/health {code if code != '000' else 'no answer'}, " \
                     f"/v1/models {'lists' if listed else 'does not list'} {d.served_name})"
        lines.append(f"  {d.name} ({d.engine} on {', '.join(d.nodes)}, port {d.port}): {health}")
        lines.append(f"      last benchmark: {benchmark_line(bench.get(d.name))}")
        lines.append(f"      memory: {ledger_line(ledger.get(d.name))}")
    if found is not None:
        lines.append("Nodes")
        for name, st in found.items():
            if st.error:
                lines.append(f"  {name}: unreachable: {st.error}")
                continue
            parts = []
            for index, used, total in st.gpus:
                parts.append(f"GPU {index} {_gib(used)}/{_gib(total)} GiB used" if used is not None and total is not None
                             else f"GPU {index} memory n/a (unified)")
            if st.mem_kb:
                parts.append(f"MemAvailable {st.mem_kb[0] / 2**20:.1f} of {st.mem_kb[1] / 2**20:.1f} GiB")
            lines.append(f"  {name}: " + ("; ".join(parts) or "no memory figures"))
    return "\n".join(lines) + "\n"


def stack_outputs(stack: str, work_dir: Path) -> tuple[dict, Callable[[str], str | None]]:
    """(the stack outputs as plain values, a reader of the stack's secret config) through the
    Automation API; no preview runs, no node is contacted."""
    from components.config.load import PROJECT
    from components.todo import engine
    st = engine.select(stack, work_dir)
    outputs = {k: v.value for k, v in st.outputs().items()}

    def secret(key: str) -> str | None:
        try:
            return st.get_config(f"{PROJECT}:{key}").value
        except Exception:   # absent: the agent is asked instead
            return None
    return outputs, secret


def status(stack: str, spec: StackSpec, outputs: Mapping, *, secret: Callable[[str], str | None] | None = None,
           probe: Probe = _ssh_probe) -> str:
    if is_offline(spec):
        return render_status(stack, spec, outputs, None)
    connections = {n.name: connection_for(n, secret) for n in spec.nodes}
    return render_status(stack, spec, outputs, gather(spec, connections, probe))
