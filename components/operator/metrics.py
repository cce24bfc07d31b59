"""The stack's Prometheus scrape config: every deployment's /metrics (vLLM serves it on the API
port; SGLang with --enable-metrics, which components/engines/sglang.py passes) as one file_sd JSON,
`.state/metrics/<stack>.json` under the project, also the stack output `metrics`.

Written by the program, not by a step: its content is the stack config alone (hosts, ports,
names: known when the plan is made, nothing a node reports), so there is nothing for a step to
wait for or to undo on a node. The program writes it during `up` only (a preview changes
nothing), atomically (a temporary file renamed over it, so Prometheus never reads half a file),
and only when its content changed (a second `up` leaves it as it is). Point Prometheus at it:

    scrape_configs:
      - job_name: blackwell-serving
        file_sd_configs: [{files: [/path/to/project/.state/metrics/*.json]}]
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from components.config.schema import StackSpec
from components.engines import ENGINES, Engine

# Under the Pulumi project that runs the program (the engine runs it in the project's folder),
# whether this package is that project or a library it imports.
METRICS_SUBDIR = Path(".state") / "metrics"


def target_host(spec: StackSpec, deployment) -> str:
    """Where a scraper reaches the head's API port."""
    return reach(spec, deployment.nodes[0], str(deployment.bind))


def reach(spec: StackSpec, node: str, bind: str) -> str:
    """Where a scraper reaches a server of `node` listening on `bind`: the node's management host
    when it listens on every address, else the address it listens on."""
    host = spec.node(node).host if bind in ("0.0.0.0", "::") else bind
    return f"[{host}]" if ":" in host else host


def file_sd(stack: str, spec: StackSpec) -> list[dict]:
    """One target group per deployment: its head's API port (the one process that serves
    /metrics for every rank), labelled with the stack, deployment, engine, node and model."""
    return [{"targets": [f"{target_host(spec, d)}:{d.port}"],
             "labels": {"stack": stack, "deployment": d.name, "engine": d.engine, "node": d.nodes[0],
                        "served_name": d.served_name, **metrics_path_label(ENGINES[d.engine])}}
            for d in spec.deployments]


def metrics_path_label(engine: Engine) -> dict[str, str]:
    """Prometheus's own label for a scrape path other than its default /metrics."""
    return {} if engine.metrics_path == "/metrics" else {"__metrics_path__": engine.metrics_path}


def file_sd_path(stack: str, directory: Path | None = None) -> Path:
    return (directory or Path.cwd() / METRICS_SUBDIR) / f"{stack}.json"


def write_file_sd(stack: str, spec: StackSpec, directory: Path | None = None) -> tuple[Path, bool]:
    """(the path, whether it was written): nothing is written when the file already holds it."""
    path = file_sd_path(stack, directory)
    text = json.dumps(file_sd(stack, spec), indent=2, sort_keys=True) + "\n"
    try:
        if path.read_text() == text:
            return path, False
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{stack}.", suffix=".json.tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path, True
