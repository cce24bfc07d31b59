"""The configuration of the stack's own Prometheus (components/resources/monitoring.py): what it
scrapes and the rule file it loads. Every target carries the labels the rules select on:
`stack` and `node`, and for an engine its `deployment` (the same groups as the file_sd of
components/operator/metrics.py, which stays for a Prometheus of the operator's own).

An engine or gateway with an API key is scraped with it: llama-server and LiteLLM answer /metrics
only with the key (a scrape without it reads as the engine being down). Each such target is a job
of its own, whose bearer token Prometheus reads from a file of the keys step (deploy.py), never
from the configuration, which is no secret (the state holds it)."""

from __future__ import annotations

import yaml

from components import names
from components.config.fields import SecretRef
from components.config.schema import StackSpec
from components.operator.metrics import file_sd, reach

# LiteLLM mounts prometheus_client's ASGI app at /metrics: the path without the slash answers
# with a redirect to it.
GATEWAY_METRICS_PATH = "/metrics/"
GATEWAY_JOB = "gateway"
KEYS_DIR = f"{names.PROMETHEUS_CONFIG_DIR}/keys"


def engine_job(deployment: str) -> str:
    return f"engine-{deployment}"


def key_file(job: str) -> str:
    return f"{KEYS_DIR}/{job}"


def scrape_keys(spec: StackSpec) -> dict[str, tuple[SecretRef, str]]:
    """The jobs scraped with a key: job -> (the key's reference, its key path for messages)."""
    keys = {engine_job(d.name): (d.api_key, f"deployments[{i}].api_key")
            for i, d in enumerate(spec.deployments) if d.api_key is not None}
    if spec.gateway is not None and spec.gateway.api_key is not None:
        keys[GATEWAY_JOB] = (spec.gateway.api_key, "gateway.api_key")
    return keys


def _job(name: str, groups: list[dict], metrics_path: str | None = None, keyed: bool = False) -> dict:
    job = {"job_name": name, **({"metrics_path": metrics_path} if metrics_path else {})}
    if keyed:
        job["authorization"] = {"type": "Bearer", "credentials_file": key_file(name)}
    return {**job, "static_configs": groups}


def scrape_jobs(stack: str, spec: StackSpec) -> list[dict]:
    """Prometheus itself, every engine, the gateway, every node's exporter."""
    m = spec.monitoring
    jobs = [_job("prometheus", [{"targets": [f"127.0.0.1:{m.port}"], "labels": {"stack": stack, "node": m.node}}])]
    keyed = scrape_keys(spec)
    groups = file_sd(stack, spec)
    open_groups = [g for g in groups if engine_job(g["labels"]["deployment"]) not in keyed]
    if open_groups:
        jobs.append(_job("engines", open_groups))
    jobs += [_job(engine_job(g["labels"]["deployment"]), [g], keyed=True)
             for g in groups if engine_job(g["labels"]["deployment"]) in keyed]
    gw = spec.gateway
    if gw is not None:
        jobs.append(_job(GATEWAY_JOB, [{"targets": [f"{reach(spec, gw.node, str(gw.bind))}:{gw.port}"],
                                        "labels": {"stack": stack, "node": gw.node}}], GATEWAY_METRICS_PATH,
                         keyed=GATEWAY_JOB in keyed))
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
