"""The gateway's config, the top-level `gateway:` mapping: one OpenAI-compatible endpoint on a node
of the stack (components/resources/gateway.py) that routes by model name to every deployment of the stack
(its served_name, at its head's address and port, with its own API key) and to declared external
OpenAI-compatible servers (`upstreams:`). One API key at the gateway.

Kept apart from schema.py, which only names GatewaySpec on StackSpec: the gateway's rules live
here, built on the plain types of fields.py. Every problem is "key.path: what; fix: how", relative
to the stack; load.validate runs them with the other cross-key checks (checks.py)."""

from __future__ import annotations

import ipaddress
import re
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field, model_validator

from components.config.fields import HealthSpec, Name, SecretRef, Strict, documented
from components.names import GATEWAY_UNIT

if TYPE_CHECKING:
    from components.config.schema import StackSpec

# The exact pin the image's pip layer must carry (components/resources/gateway.py runs LiteLLM's proxy).
LITELLM_PIN = re.compile(r"^litellm(\[[A-Za-z0-9_.,-]+\])?==[A-Za-z0-9.+!_-]+$")
LITELLM_ANY = re.compile(r"^litellm(\[[^\]]*\])?([=<>~!]|$)")
# The version this project was checked with (pip resolves `litellm[proxy]` at it from PyPI; newer
# 1.108/1.109/1.110 name proxy extras PyPI does not serve, so their [proxy] install fails).
LITELLM_VERSION = "1.106.12"
# LiteLLM's proxy without a database imports `prisma` while it refuses a request without a key;
# `litellm[proxy]` does not install it, so every auth failure became HTTP 500 (seen on the lab;
# upstream BerriAI/litellm#35457). Importable without `prisma generate`; checked in the lab image.
PRISMA_PIN = "prisma==0.15.0"
# A model name clients send (as a deployment's served_name).
ModelName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._/:-]{0,127}$")]
# An OpenAI-compatible base URL: http(s)://host[:port][/path], nothing a shell or YAML would read.
BaseUrl = Annotated[str, Field(pattern=r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~/-]*)?$",
                               max_length=512)]


class UpstreamSpec(Strict):
    """An OpenAI-compatible server the stack does not run (e.g. the embeddings server kept on a
    node), routed by the gateway under the model names listed here."""

    name: Name = Field(description="the upstream's name in this stack (names its key's variable in the gateway)")
    url: BaseUrl = Field(description="its OpenAI-compatible base URL, /v1 included, as the gateway's node reaches it "
                                     "(e.g. http://192.168.200.13:8001/v1)")
    models: list[ModelName] = Field(min_length=1, description="the model names it serves, as clients send them")
    mode: Literal["chat", "embedding"] = Field(
        "chat", description="what its models answer, and so what the gateway's health gate asks each of them: "
                            "chat (a chat completion) or embedding (an embedding)")
    api_key: SecretRef | None = Field(None, description="the key it wants (a secret reference); absent: none")

    @model_validator(mode="after")
    def _models_once(self):
        if len(set(self.models)) != len(self.models):
            raise ValueError("models: a model is listed twice; fix: list each once")
        return self


@documented(f"""One OpenAI-compatible endpoint for every model of the stack: LiteLLM's proxy in a container
    under a systemd unit ({GATEWAY_UNIT}) on `node`. It routes by model name to each
    deployment (its served_name, at its head's address and port, with the deployment's own key)
    and to `upstreams`; `/v1/models` lists them all; streaming passes through. Clients send
    `api_key`; the engines may then listen on loopback (a deployment on the gateway's node, `bind:
    127.0.0.1`) or on the fabric only (`bind:` its fabric address). A change of the routes or keys
    rewrites the gateway's config and restarts the gateway alone: the engines are not touched.""")
class GatewaySpec(Strict):

    node: Name = Field(description="the node the gateway runs on")
    port: int = Field(4000, ge=1, le=65535, description="the gateway's port on its node (1024 or above, unique there)")
    bind: ipaddress.IPv4Address = Field(ipaddress.IPv4Address("0.0.0.0"), description="the gateway's listen address")
    api_key: SecretRef = Field(description="the key clients must send (`Authorization: Bearer KEY`; a secret "
                                           "reference): it reaches the gateway only in a root-only file")
    image: Name = Field(description=f"an entry of images: (runtime docker) placed on `node` whose pip layer carries "
                                    f"LiteLLM's proxy pinned exactly (e.g. pip: ['litellm[proxy]=={LITELLM_VERSION}', '{PRISMA_PIN}']), "
                                    f"or whose base is a LiteLLM image")
    upstreams: list[UpstreamSpec] = Field(default_factory=list,
                                          description="external OpenAI-compatible servers routed besides the "
                                                      "deployments")
    request_timeout_s: int = Field(600, ge=5, le=14400, description="how long the gateway waits for an upstream's "
                                                                    "answer")
    health: HealthSpec = Field(HealthSpec(timeout_s=600), description="the gateway's health gate: every model listed, "
                               "a request without the key and one with a wrong key refused with 401, then a real "
                               "request through it for each model")


def gateway_problems(spec: "StackSpec") -> list[str]:
    """What the gateway names must exist and fit: its node, its image (with LiteLLM, on that
    node), one route per model name, and every deployment reachable from the gateway's node.
    (Its port and unit/container names are checked with everything else's, crosscheck.py.)"""
    gw = spec.gateway
    if gw is None:
        return []
    problems: list[str] = []
    nodes = [n.name for n in spec.nodes]
    if gw.node not in nodes:
        problems.append(f"gateway.node: unknown node '{gw.node}'; fix: use one of {sorted(nodes)}")
    images = [i.name for i in spec.images]
    if gw.image not in images:
        problems.append(f"gateway.image: unknown image '{gw.image}'; fix: use one of {sorted(images)}, or add an "
                        f"images: entry with pip: ['litellm[proxy]=={LITELLM_VERSION}']")
    else:
        k = images.index(gw.image)
        img = spec.images[k]
        if img.runtime != "docker":
            problems.append(f"gateway.image: image '{gw.image}' (images[{k}]) is a {img.runtime} runtime; the gateway "
                            f"runs in a container; fix: name a runtime docker entry")
        else:
            if gw.node not in img.nodes:
                problems.append(f"gateway.image: image '{gw.image}' is not placed on '{gw.node}'; fix: add it to "
                                f"images[{k}].nodes")
            pins = [p for p in img.pip if LITELLM_ANY.match(p)]
            if pins and not all(LITELLM_PIN.fullmatch(p) for p in pins):
                problems.append(f"images[{k}].pip: {pins[0]!r} does not pin LiteLLM exactly; fix: write "
                                f"'litellm[proxy]=={LITELLM_VERSION}' (one exact version: the image's tag is its "
                                f"content)")
            elif pins and not any(p.startswith("prisma==") for p in img.pip):
                problems.append(f"images[{k}].pip: LiteLLM without the prisma package answers HTTP 500, not 401, to a "
                                f"request without the key; fix: add '{PRISMA_PIN}' to images[{k}].pip")
            elif not pins and "litellm" not in (img.base or ""):
                problems.append(f"gateway.image: image '{gw.image}' does not install LiteLLM (no litellm pin in its "
                                f"pip:, and its base is not a LiteLLM image); fix: add "
                                f"'litellm[proxy]=={LITELLM_VERSION}' to images[{k}].pip")
    if not spec.deployments and not gw.upstreams:
        problems.append("gateway: routes no model (no deployment, no upstream); fix: add gateway.upstreams or a "
                        "deployment, or remove gateway")

    # One route per model name: the gateway picks the upstream by the name alone.
    owner: dict[str, str] = {}

    def route(model: str, path: str, what: str) -> None:
        if model in owner:
            problems.append(f"{path}: model '{model}' is also {owner[model]}; the gateway routes by model name; "
                            f"fix: give each its own name")
        else:
            owner[model] = f"{what} ({path})"

    for i, d in enumerate(spec.deployments):
        route(d.served_name, f"deployments[{i}].served_name", f"served by deployment '{d.name}'")
    seen: dict[str, int] = {}
    for i, u in enumerate(gw.upstreams):
        if u.name in seen:
            problems.append(f"gateway.upstreams[{i}].name: '{u.name}' is used twice (gateway.upstreams[{seen[u.name]}]); "
                            f"fix: give each upstream its own name")
        seen.setdefault(u.name, i)
        for j, m in enumerate(u.models):
            route(m, f"gateway.upstreams[{i}].models[{j}]", f"served by upstream '{u.name}'")

    if gw.node in nodes:
        for i, d in enumerate(spec.deployments):
            if d.bind.is_loopback and d.nodes[0] != gw.node:
                problems.append(f"deployments[{i}].bind: {d.bind} is reachable only on its head '{d.nodes[0]}', but "
                                f"the gateway runs on '{gw.node}'; fix: bind the head's fabric address (or 0.0.0.0), "
                                f"or move the gateway to '{d.nodes[0]}'")
    return problems
