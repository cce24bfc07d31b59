"""Gateway: one OpenAI-compatible endpoint for every model of the stack, on one of its nodes.

The router is LiteLLM's proxy (`litellm[proxy]`, pinned exactly in the gateway image's pip layer;
components/config/gateway.py names the version checked here). Why LiteLLM rather than another:
it is the OpenAI-compatible router most widely run in front of vLLM and SGLang, kept up with
frequent releases; it routes by model name from one YAML file, lists every routed name in
`/v1/models`, passes streaming (SSE) through, enforces one master key (401 without it), and each
route carries its own upstream key — all from a config file, no database. The alternatives
checked were narrower: vLLM's own router serves one model's replicas, not several models; a
plain nginx/Caddy in front cannot list the models nor route on the JSON body's `model` field
without scripting; SGLang's router is for data-parallel replicas of one model.

What runs on the gateway's node, as ONE step (its own: the engines are not part of it):
- /etc/blackwell-serving/gateway/litellm.yaml, root-only, mounted read-only into the container:
  the routes (templates/gateway/litellm.yaml.j2). It names keys as `os.environ/VAR` only, so
  it holds no secret;
- /etc/blackwell-serving/gateway.env, root-only: the gateway's key (LITELLM_MASTER_KEY) and each
  route's upstream key. It travels on the step's stdin (a secret), is mounted read-only into the
  container and read into the proxy's environment at start (as the engines do,
  components/deployment.py): never `-e KEY=…`, the unit's text or argv;
- bws-gateway.service (templates/units/container.service.j2) running the container.
The step's command line names the digest of the config (and of the unit): a change of the routes
or keys re-runs it, which rewrites the files and restarts the gateway alone. LiteLLM reads its
config file only at start, so "reload" is a restart of the gateway (a few seconds in which the
gateway refuses connections); the engines keep running and keep serving on their own ports.

Routes: each deployment by its served_name to its head — 127.0.0.1 when the head is the
gateway's node, else the deployment's bind address, or for 0.0.0.0 the head's fabric address
(its management host without a fabric) — with the deployment's own key when it has one; and each
declared upstream's models to its URL. The engines may therefore listen on loopback (a
deployment on the gateway's node with `bind: 127.0.0.1`) or on the fabric only (`bind:` the
head's fabric address); nothing forces it. Then a health gate sends, through the gateway with
its key, a real chat completion (or an embedding) for every routed model, after checking that
`/v1/models` lists them all and that a request without the key is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Mapping, Sequence

import pulumi

from . import types
from .config.schema import DeploymentSpec, StackSpec
from .node import Node
from .observe import EndpointAnswers, UnitRunning
from .remote import run, started
from .render import digest, render
from .secrets import resolve
from .steps import StepInfo
from .unit import UNIT_DELIMITER, container_unit_text, env_file_text, env_step, generation_of

UNIT = "bws-gateway.service"
CONTAINER = "bws-gateway"
CONFIG_DIR = "/etc/blackwell-serving/gateway"
CONFIG_FILE = f"{CONFIG_DIR}/litellm.yaml"
ENV_FILE = "/etc/blackwell-serving/gateway.env"
CONFIG_IN_CONTAINER = "/etc/litellm/config.yaml"
SECRETS_IN_CONTAINER = "/run/secrets/blackwell-serving.env"
MASTER_KEY_VAR = "LITELLM_MASTER_KEY"
CONFIG_DELIMITER = "BWS_GATEWAY_CONFIG_EOF"
# The proxy's command, run with the NAME=value lines of the secrets file in its environment (each
# line exported as it is: no shell evaluation of a value), as components/deployment.py does.
SOURCE_SECRETS = ["/bin/sh", "-c",
                  f'while IFS= read -r kv; do export "$kv"; done < {SECRETS_IN_CONTAINER} && exec "$@"',
                  "gateway"]
# Not secrets: LiteLLM's own switches. The cost map is the one in the package (no download at
# start: a node may have no way out), and no telemetry.
ENVIRONMENT = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY": "False"}


@dataclass(frozen=True)
class Route:
    """One model name the gateway answers for, and where it sends it."""
    model: str
    api_base: str          # the upstream's OpenAI-compatible base URL, /v1 included
    key_var: str | None    # the variable of the gateway's env file holding the upstream's key
    mode: str              # chat | embedding: what the health gate asks it
    source: str            # "deployment NAME" | "upstream NAME"


def key_var(kind: str, name: str) -> str:
    return f"BWS_{kind.upper()}_KEY_{name.upper().replace('-', '_')}"


def _url_host(address: str) -> str:
    return f"[{address}]" if ":" in address else address


def deployment_address(spec: StackSpec, d: DeploymentSpec) -> str:
    """Where the gateway's node reaches deployment d's API (its head)."""
    gw = spec.gateway
    head = spec.node(d.nodes[0])
    bind = str(d.bind)
    if head.name == gw.node:
        return "127.0.0.1" if bind == "0.0.0.0" else bind
    if bind != "0.0.0.0":
        return bind
    return str(head.fabric_address) if head.fabric_address is not None else head.host


def routes(spec: StackSpec) -> list[Route]:
    """Every model the gateway routes: the deployments' served names, then the upstreams' models."""
    out = [Route(d.served_name, f"http://{_url_host(deployment_address(spec, d))}:{d.port}/v1",
                 key_var("deployment", d.name) if d.api_key is not None else None, "chat", f"deployment {d.name}")
           for d in spec.deployments]
    for u in spec.gateway.upstreams:
        out += [Route(m, u.url, key_var("upstream", u.name) if u.api_key is not None else None, u.mode,
                      f"upstream {u.name}") for m in u.models]
    return out


def litellm_config(spec: StackSpec) -> str:
    """The proxy's config file: no secret in it (keys are `os.environ/VAR` of the env file)."""
    text = render("gateway/litellm.yaml.j2", routes=routes(spec), master_key_var=MASTER_KEY_VAR,
                  timeout_s=spec.gateway.request_timeout_s)
    if CONFIG_DELIMITER in text:
        raise ValueError(f"the gateway's config may not contain {CONFIG_DELIMITER}")
    return text


def gateway_argv(spec: StackSpec) -> list[str]:
    gw = spec.gateway
    return [*SOURCE_SECRETS, "litellm", "--config", CONFIG_IN_CONTAINER, "--host", str(gw.bind),
            "--port", str(gw.port), "--num_workers", "1"]


def gateway_unit_text(spec: StackSpec, image: str, config_digest: str) -> str:
    gw = spec.gateway
    env = dict(ENVIRONMENT)
    args = ["--network", "host", "--init",
            "-v", f"{CONFIG_FILE}:{CONFIG_IN_CONTAINER}:ro",
            "-v", f"{ENV_FILE}:{SECRETS_IN_CONTAINER}:ro",
            # The config's content address: `docker inspect` says which routes the container runs.
            "--label", f"org.blackwell-serving.gateway-config={config_digest}"]
    for name in env:
        args += ["-e", name]
    return container_unit_text(component="Gateway", description=f"blackwell-serving gateway (LiteLLM) on port {gw.port}",
                               container=CONTAINER, image=image, command=gateway_argv(spec), docker_args=args,
                               environment=env)


def gateway_keys(spec: StackSpec) -> dict[str, pulumi.Output[str]]:
    """The env file's values: the gateway's key and every route's upstream key (Pulumi secrets)."""
    keys = {MASTER_KEY_VAR: resolve(spec.gateway.api_key, "gateway.api_key")}
    for i, d in enumerate(spec.deployments):
        if d.api_key is not None:
            keys[key_var("deployment", d.name)] = resolve(d.api_key, f"deployments[{i}].api_key")
    for i, u in enumerate(spec.gateway.upstreams):
        if u.api_key is not None:
            keys[key_var("upstream", u.name)] = resolve(u.api_key, f"gateway.upstreams[{i}].api_key")
    return keys


def health_requests(spec: StackSpec) -> list[dict]:
    """What the gate sends through the gateway for each routed model: (path, body)."""
    h = spec.gateway.health
    out = []
    for r in routes(spec):
        if r.mode == "embedding":
            out.append({"model": r.model, "path": "/v1/embeddings",
                        "body": json.dumps({"model": r.model, "input": h.prompt}), "expect": '"data"'})
        else:
            out.append({"model": r.model, "path": "/v1/chat/completions",
                        "body": json.dumps({"model": r.model, "max_tokens": h.max_tokens, "temperature": 0,
                                            "messages": [{"role": "user", "content": h.prompt}]}),
                        "expect": '"choices"'})
    return out


class Gateway(pulumi.ComponentResource):
    def __init__(self, spec: StackSpec, node: Node, *, image: str, image_id: pulumi.Input[str],
                 engines_ready: Sequence[pulumi.Resource] = (), depends_on: Sequence[pulumi.Resource] = (),
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__(types.GATEWAY, "gateway", None, opts)
        gw = spec.gateway
        self.config_text = litellm_config(spec)
        self.config_digest = digest(self.config_text)
        self.unit_text = gateway_unit_text(spec, image, self.config_digest)
        if UNIT_DELIMITER in self.unit_text:
            raise ValueError(f"the gateway's unit may not contain {UNIT_DELIMITER}")
        values = dict(unit_name=UNIT, container=CONTAINER, config_dir=CONFIG_DIR)
        step = StepInfo(node.name, "serve", do=f"Install and start the gateway ({UNIT}) on {node.name}, port {gw.port}",
                        redo=f"Rewrite the gateway's routes and restart {UNIT} on {node.name} (engines untouched)",
                        undo=f"Stop and remove the gateway ({UNIT}) from {node.name}")
        # Its keys travel apart, as an engine's (components/unit.py): a step of their own, whose
        # generation restarts the gateway; this step's inputs (its unit, its routes) stay plain.
        self.env = env_step("gateway", node, UNIT, ENV_FILE, env_file_text(gateway_keys(spec)), step, self, depends_on)
        # Its own step: the routes' digest, the image it runs and its keys' generation are its
        # triggers; the engines' steps do not depend on it, so a new config restarts the gateway alone.
        self.install = run(
            "gateway-install", node, parent=self, depends_on=[*depends_on, self.env], step=step,
            create=render("scripts/install-gateway.sh.j2", unit_text=self.unit_text, config_text=self.config_text,
                          config_file=CONFIG_FILE, **values),
            delete=render("scripts/remove-gateway.sh.j2", **values),
            triggers=[image_id, self.config_digest, generation_of(self.env)], undo="previous", unit=UNIT,
            expect=UnitRunning(node.name, UNIT, self.unit_text))
        address = "127.0.0.1" if str(gw.bind) == "0.0.0.0" else str(gw.bind)
        self.health = run(
            "gateway-health", node, parent=self, depends_on=[self.install, *engines_ready],
            step=StepInfo(node.name, "verify", do="Health gate: a real request through the gateway for every model",
                          undo="Drop the gateway's health gate"),
            create=render("scripts/gateway-health.sh.j2", address=address, port=gw.port, unit=UNIT, env_file=ENV_FILE,
                          key_var=MASTER_KEY_VAR, timeout_s=gw.health.timeout_s, requests=health_requests(spec),
                          gateway_digest=digest(self.unit_text, self.config_text)),
            triggers=[started(self.install)],
            expect=EndpointAnswers(node.name, f"http://{_url_host(address)}:{gw.port}/health/liveliness"))
        self.endpoint = f"http://{node.spec.host}:{gw.port}/v1"
        self.models = [r.model for r in routes(spec)]
        self.register_outputs({"endpoint": self.endpoint, "models": self.models, "config_digest": self.config_digest})


def gateway_for(spec: StackSpec, nodes: Mapping[str, Node], images: Mapping, image_ready: Mapping,
                deployments: Mapping, gates: Sequence[pulumi.Resource], opts: pulumi.ResourceOptions) -> Gateway | None:
    """The stack's gateway (None without `gateway:`): after its image is on its node and after the
    checks and retirements that gate anything of ours there; its gate after every engine's."""
    if spec.gateway is None:
        return None
    gw = spec.gateway
    image = images[gw.image]
    return Gateway(spec, nodes[gw.node], image=image.tag, image_id=image.image_id,
                   engines_ready=[d.health for d in deployments.values()],
                   depends_on=[image_ready[gw.image][gw.node], *gates], opts=opts)
