"""The stack file reference (docs/stack-reference.md), generated from the schema: every key, its
type and limits, its default and its description.

    python -m components.config.reference           # write docs/stack-reference.md
    python -m components.config.reference --check   # exit 1 if it is out of date
"""

from __future__ import annotations

import ipaddress
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from components import names
from components.config.crosscheck import FIRST_USER_PORT
from components.config.namespace import PROJECT
from components.config.schema import PROTECTED_UNITS, StackSpec
from components.engines import ENGINES
from components.names import LAYER_REGISTRY_CONTAINER, PREFIX, RAY_CLIENT_PORT, RAY_DASHBOARD_PORT

OUTPUT = Path(__file__).resolve().parents[2] / "docs" / "stack-reference.md"
COMMAND = "python -m components.config.reference"


def _constraints(metadata: typing.Iterable[Any], unit: str) -> list[str]:
    out = []
    for m in metadata:
        for attr, text in (("ge", "≥ {}"), ("gt", "> {}"), ("le", "≤ {}"), ("lt", "< {}"),
                           ("min_length", "at least {} " + unit), ("max_length", "at most {} " + unit)):
            value = getattr(m, attr, None)
            if value is not None:
                out.append(text.format(value))
        pattern = getattr(m, "pattern", None)
        if pattern:
            out.append(f"matches `{pattern}`")
    return out


def describe_type(annotation: Any, metadata: typing.Iterable[Any] = ()) -> tuple[str, bool]:
    """(a short text for the type, whether None is allowed)."""
    origin = typing.get_origin(annotation)
    limits = _constraints(metadata, "items" if origin in (list, dict) else "characters")
    if origin is typing.Annotated:
        inner, *extra = typing.get_args(annotation)
        more = [m for e in extra for m in (getattr(e, "metadata", None) or [e])]
        return describe_type(inner, [*metadata, *more])
    if origin in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        optional = len(members) < len(typing.get_args(annotation))
        texts = [describe_type(a, metadata)[0] for a in members]
        return " or ".join(texts), optional
    if origin is typing.Literal:
        text = "one of " + ", ".join(f"`{v}`" for v in typing.get_args(annotation))
    elif origin is list:
        text = f"list of {describe_type(typing.get_args(annotation)[0])[0]}"
    elif origin is dict:
        key, value = (describe_type(a)[0] for a in typing.get_args(annotation))
        text = f"mapping of {key} to {value}"
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        text = f"mapping ({annotation.__name__}, below)"
    elif annotation is ipaddress.IPv4Address:
        text = "IPv4 address"
    else:
        text = {str: "string", int: "integer", float: "number", bool: "boolean"}.get(annotation, str(annotation))
    if limits:
        text += " (" + ", ".join(limits) + ")"
    return text, False


def _default(field) -> str:
    if field.default_factory is not None:
        value = field.default_factory()
    elif field.default is PydanticUndefined:
        return "**required**"
    else:
        value = field.default
    if isinstance(value, BaseModel):
        return "its defaults"
    if value is None:
        return "absent"
    if isinstance(value, ipaddress.IPv4Address):
        value = str(value)
    return f"`{json.dumps(value)}`"


def _models(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for a in typing.get_args(annotation) for m in _models(a)]


def sections(model: type[BaseModel] = StackSpec, path: str = f"{PROJECT}:") -> list[tuple[str, type[BaseModel]]]:
    """(key path, model) of every mapping of the schema, depth first."""
    out = [(path, model)]
    for name, field in model.model_fields.items():
        sub = f"{path}{name}" if path.endswith(":") else f"{path}.{name}"
        if typing.get_origin(field.annotation) is list or "list[" in str(field.annotation):
            sub += "[]"
        for m in _models(field.annotation):
            out += sections(m, sub)
    return out


def _cell(text: str) -> str:
    return _text(text).replace("|", "\\|").replace("\n", " ")


def _text(text: str) -> str:
    """Markdown that shows < and > (a bare <deployment> would be read as HTML); code spans are
    shown as they are."""
    parts = text.split("`")
    return "`".join(p if i % 2 else p.replace("<", "&lt;").replace(">", "&gt;") for i, p in enumerate(parts))


def _engine_rule(e) -> str:
    memory = (f"`memory_fraction` is its `{e.memory_fraction_flag}`" if e.memory_fraction_flag
              else f"no `memory_fraction` ({e.memory_sized_by})")
    return (f"- `engine: {e.name}`: topology {' or '.join(f'`{t}`' for t in sorted(e.launches))}; {memory}; "
            f"`kv_cache_dtype` one of {', '.join(f'`{k}`' for k in e.kv_cache_dtypes)}.")


# Generated from the engines (components/engines/), so a new engine documents itself; vLLM's
# native launch gives every node world / nnodes ranks.
ENGINE_RULES = "\n".join(_engine_rule(e) for e in ENGINES.values()) + (
    "\n  Under vLLM's `native`, tensor_parallel × pipeline_parallel is a multiple of the node count.")


RULES = f"""## Rules across keys

Checked on every path (a stack file, and the config the engine passes to `pulumi preview` / `up`),
before anything runs on a node:

- Every key of the `{PROJECT}:` namespace is a key above, or a secret that a `{{config: KEY}}`
  reference names; a misspelled key or namespace (`{PROJECT.replace("-", "_")}:`) is refused with
  the key it was probably meant to be. Keys of `pulumi:` are Pulumi's own and allowed.
- `{{config: KEY}}` names a key set with `pulumi config set --secret {PROJECT}:KEY VALUE` (a
  `secure:` value); a plain value is refused. No secret in a deployment's `env` (names with the
  words TOKEN, SECRET, PASSWORD, PASSWD, APIKEY, CREDENTIALS or API KEY) or `extra_args`
  (`--api-key …`, `--api-key=…`, any `hf_…` token): use `api_key` and `models[].hf_token`.
- Names refer to entries that exist; tensor_parallel × pipeline_parallel equals the GPUs of the
  deployment's engine nodes, and a deployment takes every GPU of those nodes: two deployments
  never share one (but may share a node of `gpu.kind: cpu`, whose cores its processes share).
- Ports: a deployment's `port` (every rank's node under SGLang's `native`; vLLM's other ranks
  run `--headless`, without the API), the `dist_port` of a `native` deployment (on its head),
  `ray.port`, Ray's client server ({RAY_CLIENT_PORT}) and dashboard ({RAY_DASHBOARD_PORT}, when
  enabled) on each Ray head, `fabric.bandwidth_check.port`, `gateway.port`, `monitoring.port` (on
  its node), `monitoring.exporter_port` (on every node) and
  `fabric.layer_registry.port` (on the build node of each image copied to peers) are unique on each
  node, differ from the node's SSH port, and are {FIRST_USER_PORT} or above. One Ray head per node.
- Unit and container names are unique on each node, the generated ones included: `{names.engine_container("NAME")}`
  (the engine), `{names.ray_container(names.ray_cluster("NAME"), "head")}` / `{names.ray_container(names.ray_cluster("NAME"), "worker")}` (its Ray cluster),
  `{names.bandwidth_container("NAME", "RANK")}` (the bandwidth check), `{names.GATEWAY_CONTAINER}` (the gateway), `{LAYER_REGISTRY_CONTAINER}`
  (the layer registry).
- One owner for every model cache directory: two `models` entries with the same `cache_dir` and
  REPO--REVISION directory on a node they share are refused (each would fetch the weights and
  remove them on destroy); keep one entry and name it as the `model` of every deployment that
  serves it. Image tags, venvs, env files and units carry the unique name of their entry.
- The gateway: its node and image exist, the image (runtime docker, placed on its node) pins
  `litellm[proxy]==VERSION` exactly in its `pip:` beside `prisma==0.15.0` (without it LiteLLM answers
  HTTP 500 to a request without the key), or its base is a LiteLLM image; each model name
  (deployments' `served_name`, upstreams' `models`) is routed once; a deployment bound to loopback
  has its head on the gateway's node.
- Monitoring: its node exists; a deployment or gateway bound to loopback is on Prometheus's node
  (Prometheus scrapes it from there).
- `retire` never lists our own `{PREFIX}*` units, nor {", ".join(f"`{u}`" for u in PROTECTED_UNITS)} or `systemd-*`
  (any suffix); `keep` never lists `{PREFIX}*`; a unit is listed once.
{ENGINE_RULES}
- No path has a `..` component; numbers are finite; no text is longer than 4096 characters.
"""


def render() -> str:
    lines = ["# Stack file reference", "",
             f"<!-- Generated from components/config/schema.py by `{COMMAND}`; do not edit. -->", "",
             f"A stack file `stacks/Pulumi.<stack>.yaml` holds its keys under `config:`, each as "
             f"`{PROJECT}:KEY`. `[]` marks a list of mappings.", ""]
    first: dict[type, str] = {}
    for path, model in sections():
        lines += [f"## `{path}`", ""]
        if model in first:
            lines += [f"The keys of `{first[model]}`.", ""]
            continue
        first[model] = path
        doc = (model.__doc__ or "").strip()
        if doc and model is not StackSpec:
            lines += [_text(" ".join(doc.split())), ""]
        lines += ["| key | type | default | description |", "|---|---|---|---|"]
        for name, field in model.model_fields.items():
            text, optional = describe_type(field.annotation, field.metadata)
            lines.append(f"| `{name}` | {_cell(text)} | {_cell(_default(field))} | {_cell(field.description or '')} |")
        lines.append("")
    return "\n".join(lines) + "\n" + RULES


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not OUTPUT.is_file() or OUTPUT.read_text() != text:
            print(f"{OUTPUT} is out of date; fix: run `{COMMAND}`", file=sys.stderr)
            return 1
        return 0
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
