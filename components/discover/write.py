"""The discovered parts as YAML text: one block per config key (nodes, fabric, retire, keep),
each value with its comments above it, and a new stack file around them with commented-out
placeholders for what the operator decides (images, models, deployments). Values are dumped
by PyYAML (quoted where YAML needs it); only the comments are our text."""

from __future__ import annotations

import yaml

from components.config.load import PROJECT
from components.discover.nodes import Discovered, Item

INDENT = "  "

PLACEHOLDERS = """\
  # What serves is yours to say (docs/writing-stacks.md, docs/stack-reference.md): uncomment and
  # fill in, then `pulumi preview`. For example, one vLLM engine on the first node:
  # blackwell-serving:images:
  #   - name: engine
  #     base: vllm/vllm-openai:TAG          # an engine image that knows your model; pin it
  #     build_node: NODE
  #     nodes: [NODE]
  # blackwell-serving:models:
  #   - name: model
  #     repo: OWNER/NAME                    # the Hugging Face repo
  #     revision: 40-HEX-COMMIT             # huggingface_hub.model_info(repo).sha
  #     fetch_node: NODE
  #     nodes: [NODE]
  # blackwell-serving:deployments:
  #   - name: serve
  #     engine: vllm
  #     image: engine
  #     model: model
  #     nodes: [NODE]
  #     served_name: NAME
"""


class _Dumper(yaml.SafeDumper):
    """Block style, but a short mapping or list of scalars on one line, as the shipped stacks
    write them (gpu: {kind: gb10, count: 1, memory_gb: 119.7}, hcas: [a, b])."""


def _short_flow(dumper: yaml.SafeDumper, value, tag: str, items):
    scalars = all(not isinstance(v, (dict, list)) for v in (value.values() if isinstance(value, dict) else value))
    flow = scalars and len(str(value)) <= 72
    if isinstance(value, dict):
        return dumper.represent_mapping(tag, items, flow_style=flow)
    return dumper.represent_sequence(tag, items, flow_style=flow)


_Dumper.add_representer(dict, lambda d, v: _short_flow(d, v, "tag:yaml.org,2002:map", v.items()))
_Dumper.add_representer(list, lambda d, v: _short_flow(d, v, "tag:yaml.org,2002:seq", v))


def _dump(value) -> list[str]:
    text = yaml.dump(value, Dumper=_Dumper, sort_keys=False, width=4096, allow_unicode=True)
    return text.removesuffix("...\n").splitlines()


def _comments(item: Item, indent: str) -> list[str]:
    return [f"{indent}# {line}".rstrip() for line in item.comments]


def _list_block(key: str, items: list[Item]) -> list[str]:
    lines = [f"{INDENT}{PROJECT}:{key}:"]
    for item in items:
        lines += _comments(item, INDENT * 2)
        lines += [f"{INDENT * 2}{line}" for line in _dump([item.value])]
    return lines


def _mapping_block(key: str, item: Item) -> list[str]:
    return [*_comments(item, INDENT), f"{INDENT}{PROJECT}:{key}:",
            *(f"{INDENT * 2}{line}" for line in _dump(item.value))]


def blocks(parts: Discovered) -> dict[str, list[str]]:
    """Config key (full, with the project) → its lines, for the parts that have a value."""
    out = {f"{PROJECT}:nodes": _list_block("nodes", parts.nodes)}
    if parts.fabric is not None:
        out[f"{PROJECT}:fabric"] = _mapping_block("fabric", parts.fabric)
    for key, items in (("retire", parts.retire), ("keep", parts.keep)):
        if items:
            out[f"{PROJECT}:{key}"] = _list_block(key, items)
    return out


def new_stack_file(stack: str, hosts: list[str], parts: Discovered) -> str:
    head = [f"# Stack {stack}: written by `python -m components.discover` from {', '.join(hosts)}.",
            "# The nodes, the fabric and the retire/keep proposals are what the machines showed: read them,",
            "# then fill in images, models and deployments (the commented example at the end) and preview:",
            f"#   pulumi preview --stack {stack}",
            "config:"]
    body = [line for block in blocks(parts).values() for line in block]
    return "\n".join(head + body) + "\n\n" + PLACEHOLDERS
