"""The configuration of the stack's own Prometheus (components/resources/monitoring.py): what it
scrapes and the rule file it loads. Every target carries the labels the rules select on:
`stack` and `node`, and for an engine its `deployment` (the same groups as the file_sd of
components/operator/metrics.py, which stays for a Prometheus of the operator's own)."""

from __future__ import annotations

import yaml

from components.config.schema import StackSpec
from components.operator.metrics import file_sd, reach

# LiteLLM mounts prometheus_client's ASGI app at /metrics: the path without the slash answers
# with a redirect to it.
GATEWAY_METRICS_PATH = "/metrics/"


def _job(name: str, groups: list[dict], metrics_path: str | None = None) -> dict:
    job = {"job_name": name, **({"metrics_path": metrics_path} if metrics_path else {})}
    return {**job, "static_configs": groups}


def scrape_jobs(stack: str, spec: StackSpec) -> list[dict]:
    """Prometheus itself, every engine, the gateway, every node's exporter."""
    m = spec.monitoring
    jobs = [_job("prometheus", [{"targets": [f"127.0.0.1:{m.port}"], "labels": {"stack": stack, "node": m.node}}])]
    if spec.deployments:
        jobs.append(_job("engines", file_sd(stack, spec)))
    gw = spec.gateway
    if gw is not None:
        jobs.append(_job("gateway", [{"targets": [f"{reach(spec, gw.node, str(gw.bind))}:{gw.port}"],
                                      "labels": {"stack": stack, "node": gw.node}}], GATEWAY_METRICS_PATH))
    jobs.append(_job("node", [{"targets": [f"{reach(spec, n.name, '0.0.0.0')}:{m.exporter_port}"],
                               "labels": {"stack": stack, "node": n.name}} for n in spec.nodes]))
    return jobs


def prometheus_config(stack: str, spec: StackSpec, rule_file: str) -> str:
    m = spec.monitoring
    config = {"global": {"scrape_interval": f"{m.scrape_interval_s}s",
                         "scrape_timeout": f"{min(10, m.scrape_interval_s)}s",
                         "evaluation_interval": f"{m.evaluation_interval_s}s"},
              "rule_files": [rule_file],
              "scrape_configs": scrape_jobs(stack, spec)}
    return (f"# Managed by blackwell-serving (Monitoring) for stack {stack}: written by `pulumi up`, do not edit.\n"
            + yaml.safe_dump(config, sort_keys=False, width=1000))
