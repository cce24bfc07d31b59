"""Gateway: one OpenAI-compatible endpoint for every model of the stack, on one of its nodes.

The router is LiteLLM's proxy (`litellm[proxy]`, pinned exactly in the gateway image's pip layer;
components/config/gateway.py names the version checked here). Why LiteLLM rather than another:
it is the OpenAI-compatible router most widely run in front of vLLM and SGLang, kept up with
frequent releases; it routes by model name from one YAML file, lists every routed name in
`/v1/models`, passes streaming (SSE) through, enforces one key, and each route carries its own
upstream key — all from a config file, no database. The alternatives
checked were narrower: vLLM's own router serves one model's replicas, not several models; a
plain nginx/Caddy in front cannot list the models nor route on the JSON body's `model` field
without scripting; SGLang's router is for data-parallel replicas of one model.

The key: without a database, LiteLLM answers its master key, and refuses a request without a key
with 401, but answers any other key with HTTP 400 "No connected db." (it looks such a key up as a
virtual key; user_api_key_auth.py), which OpenAI clients raise as a bad request, not as a wrong key.
No setting changes that answer, so the check is LiteLLM's own extension point for it,
`general_settings.custom_auth`: templates/gateway/bws_key_check.py, a dozen lines beside the
config, accepts the stack's key (LiteLLM's master key as the config resolves it, compared in
constant time) and refuses anything else with 401 and OpenAI's error body ({"error": {"message",
"type", "param", "code"}}); `custom_auth_run_common_checks` keeps LiteLLM's own checks after it. No
proxy of our own in front: the check lives in the process that already parses the request.

What runs on the gateway's node, as ONE step (its own: the engines are not part of it):
- /etc/blackwell-serving/gateway/litellm.yaml, root-only, mounted read-only into the container:
  the routes (templates/gateway/litellm.yaml.j2). It names keys as `os.environ/VAR` only, so
  it holds no secret;
- /etc/blackwell-serving/gateway/bws_key_check.py beside it, root-only and mounted read-only the
  same way: the key check the config names (no secret either: it reads the resolved master key);
- /etc/blackwell-serving/gateway.env, root-only: the gateway's key (LITELLM_MASTER_KEY) and each
  route's upstream key. It travels on the step's stdin (a secret), is mounted read-only into the
  container and read into the proxy's environment at start (as the engines do,
  components/serving/deployment.py): never `-e KEY=…`, the unit's text or argv;
- its unit, names.GATEWAY_UNIT (templates/units/container.service.j2) running the container.
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

from components import names
from components.config.gateway import GatewaySpec
from components.facts import EndpointAnswers, UnitRunning
from components.resources.api import DeploymentApi
from components.resources.component import Component, Ready
from components.resources.containers import file_mount
from components.resources.node import Node
from components.resources.unit import (
    UNIT_DELIMITER,
    container_unit_text,
    env_file_text,
    env_step,
    generation_of,
)
from components.steps import types
from components.steps.info import StepInfo
from components.steps.remote import run, started
from components.steps.render import TEMPLATES, digest, render
from components.steps.secrets import resolve

UNIT = names.GATEWAY_UNIT
CONTAINER = names.GATEWAY_CONTAINER
CONFIG_DIR = names.GATEWAY_CONFIG_DIR
CONFIG_FILE = f"{CONFIG_DIR}/litellm.yaml"
ENV_FILE = names.GATEWAY_ENV_FILE
CONFIG_IN_CONTAINER = "/etc/litellm/config.yaml"
# The key check (LiteLLM's custom_auth): a module beside the config in the container, which is
# where LiteLLM looks for `custom_auth: MODULE.FUNCTION` first.
KEY_CHECK_MODULE = "bws_key_check"
KEY_CHECK = f"{KEY_CHECK_MODULE}.check_key"
KEY_CHECK_FILE = f"{CONFIG_DIR}/{KEY_CHECK_MODULE}.py"
KEY_CHECK_IN_CONTAINER = f"/etc/litellm/{KEY_CHECK_MODULE}.py"
KEY_CHECK_TEXT = (TEMPLATES / "gateway" / f"{KEY_CHECK_MODULE}.py").read_text()
SECRETS_IN_CONTAINER = "/run/secrets/blackwell-serving.env"
MASTER_KEY_VAR = "LITELLM_MASTER_KEY"
CONFIG_DELIMITER = "BWS_GATEWAY_CONFIG_EOF"
# The proxy's command, run with the NAME=value lines of the secrets file in its environment (each
# line exported as it is: no shell evaluation of a value), as components/serving/deployment.py does.
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


def routes(gateway: GatewaySpec, apis: Sequence[DeploymentApi]) -> list[Route]:
    """Every model the gateway routes: the deployments' served names (as each publishes its API),
    then the upstreams' models."""
    out = [Route(a.served_name, f"http://{_url_host(a.address_from(gateway.node))}:{a.port}/v1",
                 key_var("deployment", a.name) if a.key is not None else None, "chat", f"deployment {a.name}")
           for a in apis]
    for u in gateway.upstreams:
        out += [Route(m, u.url, key_var("upstream", u.name) if u.api_key is not None else None, u.mode,
                      f"upstream {u.name}") for m in u.models]
    return out


def litellm_config(gateway: GatewaySpec, routed: Sequence[Route], metrics: bool = False) -> str:
    """The proxy's config file: no secret in it (keys are `os.environ/VAR` of the env file).
    metrics: serve /metrics (LiteLLM's prometheus callback) for the stack's Prometheus."""
    text = render("gateway/litellm.yaml.j2", routes=routed, master_key_var=MASTER_KEY_VAR,
                  key_check=KEY_CHECK, timeout_s=gateway.request_timeout_s, metrics=metrics)
    if CONFIG_DELIMITER in text:
        raise ValueError(f"the gateway's config may not contain {CONFIG_DELIMITER}")
    return text


def gateway_argv(gw: GatewaySpec) -> list[str]:
    return [*SOURCE_SECRETS, "litellm", "--config", CONFIG_IN_CONTAINER, "--host", str(gw.bind),
            "--port", str(gw.port), "--num_workers", "1"]


def gateway_unit_text(gw: GatewaySpec, image: str, config_digest: str) -> str:
    env = dict(ENVIRONMENT)
    args = ["--network", "host", "--init",
            *file_mount(CONFIG_FILE, CONFIG_IN_CONTAINER),
            *file_mount(KEY_CHECK_FILE, KEY_CHECK_IN_CONTAINER),
            *file_mount(ENV_FILE, SECRETS_IN_CONTAINER),
            # The config's content address: `docker inspect` says which routes the container runs.
            "--label", f"org.blackwell-serving.gateway-config={config_digest}"]
    for name in env:
        args += ["-e", name]
    return container_unit_text(component="Gateway", description=f"blackwell-serving gateway (LiteLLM) on port {gw.port}",
                               container=CONTAINER, image=image, command=gateway_argv(gw), docker_args=args,
                               environment=env)


def gateway_keys(gateway: GatewaySpec, apis: Sequence[DeploymentApi]) -> dict[str, pulumi.Output[str]]:
    """The env file's values: the gateway's key, every deployment's key as it publishes it, and
    every upstream's key (Pulumi secrets)."""
    keys = {MASTER_KEY_VAR: resolve(gateway.api_key, "gateway.api_key")}
    for a in apis:
        if a.key is not None:
            keys[key_var("deployment", a.name)] = a.key
    for i, u in enumerate(gateway.upstreams):
        if u.api_key is not None:
            keys[key_var("upstream", u.name)] = resolve(u.api_key, f"gateway.upstreams[{i}].api_key")
    return keys


def health_requests(gateway: GatewaySpec, routed: Sequence[Route]) -> list[dict]:
    """What the gate sends through the gateway for each routed model: (path, body)."""
    h = gateway.health
    out = []
    for r in routed:
        if r.mode == "embedding":
            out.append({"model": r.model, "path": "/v1/embeddings",
                        "body": json.dumps({"model": r.model, "input": h.prompt}), "expect": '"data"'})
        else:
            out.append({"model": r.model, "path": "/v1/chat/completions",
                        "body": json.dumps({"model": r.model, "max_tokens": h.max_tokens, "temperature": 0,
                                            "messages": [{"role": "user", "content": h.prompt}]}),
                        "expect": '"choices"'})
    return out


@dataclass(frozen=True)
class GatewayArgs:
    """gateway: its stack entry; apis: what each deployment publishes of its API (the routes and
    their keys); node: where it runs (gateway.node); image, image_id: the gateway image's tag and
    ID; engines_ready: what its health gate waits for (every deployment's); metrics: serve
    /metrics for the stack's Prometheus (monitoring:)."""
    gateway: GatewaySpec
    apis: Sequence[DeploymentApi]
    node: Node
    image: str
    image_id: pulumi.Input[str]
    engines_ready: Sequence[pulumi.Resource] = ()
    depends_on: Sequence[pulumi.Resource] = ()
    metrics: bool = False


class Gateway(Component):
    """ready: its health gate passed (a real request for every model through it)."""
    TYPE = types.GATEWAY

    def __init__(self, name: str, args: GatewayArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        gw, node, depends_on = args.gateway, args.node, args.depends_on
        routed = routes(gw, args.apis)
        self.config_text = litellm_config(gw, routed, args.metrics)
        # The routes and the key check they name: a change of either rewrites both and restarts.
        self.config_digest = digest(self.config_text, KEY_CHECK_TEXT)
        self.unit_text = gateway_unit_text(gw, args.image, self.config_digest)
        if UNIT_DELIMITER in self.unit_text:
            raise ValueError(f"the gateway's unit may not contain {UNIT_DELIMITER}")
        values = dict(unit_name=UNIT, container=CONTAINER, config_dir=CONFIG_DIR)
        step = StepInfo(node.name, "serve", do=f"Install and start the gateway ({UNIT}) on {node.name}, port {gw.port}",
                        redo=f"Rewrite the gateway's routes and restart {UNIT} on {node.name} (engines untouched)",
                        undo=f"Stop and remove the gateway ({UNIT}) from {node.name}")
        # Its keys travel apart, as an engine's (components/resources/unit.py): a step of their own, whose
        # generation restarts the gateway; this step's inputs (its unit, its routes) stay plain.
        self.env = env_step(name, node, UNIT, ENV_FILE, env_file_text(gateway_keys(gw, args.apis)), step, self, depends_on)
        # Its own step: the routes' digest, the image it runs and its keys' generation are its
        # triggers; the engines' steps do not depend on it, so a new config restarts the gateway alone.
        self.install = run(
            f"{name}-install", node, parent=self, depends_on=[*depends_on, self.env], step=step,
            create=render("scripts/install-gateway.sh.j2", unit_text=self.unit_text, config_text=self.config_text,
                          config_file=CONFIG_FILE, key_check_text=KEY_CHECK_TEXT, key_check_file=KEY_CHECK_FILE,
                          image=args.image, **values),
            delete=render("scripts/remove-gateway.sh.j2", **values),
            triggers=[args.image_id, self.config_digest, generation_of(self.env)], undo="previous", unit=UNIT,
            expect=UnitRunning(node.name, UNIT, self.unit_text))
        address = "127.0.0.1" if str(gw.bind) == "0.0.0.0" else str(gw.bind)
        self.health = run(
            f"{name}-health", node, parent=self, depends_on=[self.install, *args.engines_ready],
            step=StepInfo(node.name, "verify", do="Health gate: a real request through the gateway for every model",
                          undo="Drop the gateway's health gate"),
            create=render("scripts/gateway-health.sh.j2", address=address, port=gw.port, unit=UNIT, env_file=ENV_FILE,
                          key_var=MASTER_KEY_VAR, timeout_s=gw.health.timeout_s, requests=health_requests(gw, routed),
                          gateway_digest=digest(self.unit_text, self.config_text, KEY_CHECK_TEXT)),
            triggers=[started(self.install)],
            expect=EndpointAnswers(node.name, f"http://{_url_host(address)}:{gw.port}/health/liveliness"))
        self.endpoint = f"http://{node.spec.host}:{gw.port}/v1"
        self.models = [r.model for r in routed]
        self.ready = Ready.of([(node.name, self.health)])
        self.register_outputs({"endpoint": self.endpoint, "models": self.models, "config_digest": self.config_digest})


def gateway_for(gw: GatewaySpec | None, nodes: Mapping[str, Node], images: Mapping, deployments: Mapping,
                gates: Sequence[pulumi.Resource], opts: pulumi.ResourceOptions,
                metrics: bool = False) -> Gateway | None:
    """The stack's gateway (None without `gateway:`): after its image is on its node and after the
    checks and retirements that gate anything of ours there; its gate after every engine's."""
    if gw is None:
        return None
    image = images[gw.image]
    return Gateway("gateway", GatewayArgs(gw, [d.api for d in deployments.values()], nodes[gw.node],
                                          image=image.tag, image_id=image.image_id,
                                          engines_ready=[s for d in deployments.values() for s in d.ready.all()],
                                          depends_on=[*image.ready.on(gw.node), *gates], metrics=metrics), opts)
