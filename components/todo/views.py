"""Todo items → text for a terminal, a Markdown checklist, JSON (the seeds' shape, or every
field), a Mermaid graph and a Graphviz dot graph. Items arrive already ordered; the text and
Markdown views group them by node and keep each item's number in the global order."""

from __future__ import annotations

import json
from typing import Callable, Sequence

from components.todo.plan import Item

MARK = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]", "failed": "[!]"}


def _groups(items: Sequence[Item]) -> list[tuple[str, list[tuple[int, Item]]]]:
    """(node, [(number, item)]) in order of each node's first item; numbers are 1-based."""
    groups: dict[str, list[tuple[int, Item]]] = {}
    for i, it in enumerate(items, 1):
        groups.setdefault(it.node or "(no node)", []).append((i, it))
    return list(groups.items())


def _counts(items: Sequence[Item]) -> str:
    high = sum(1 for it in items if it.priority == "high")
    by = {s: sum(1 for it in items if it.status == s) for s in MARK}
    parts = [f"{len(items)} item{'s' if len(items) != 1 else ''}", f"{high} high"]
    parts += [f"{n} {s.replace('_', ' ')}" for s, n in by.items() if n and s != "pending"]
    return ", ".join(parts)


def item_line(number: int, it: Item, width: int = 60) -> str:
    prio = "!" if it.priority == "high" else " "
    return f"{number:>3}. {MARK.get(it.status, '[?]')} {prio} {it.phase:<7} {it.content:<{width}}  ({it.reason})"


def text(items: Sequence[Item], stack: str = "") -> str:
    title = f"Todo for stack {stack}" if stack else "Todo"
    if not items:
        return f"{title}: nothing to do (every resource is already as declared)\n"
    width = min(72, max(len(it.content) for it in items))
    lines = [f"{title}: {_counts(items)}  (! = high priority)"]
    for node, group in _groups(items):
        lines += ["", f"{node}"]
        lines += ["  " + item_line(n, it, width) for n, it in group]
    return "\n".join(lines) + "\n"


def markdown(items: Sequence[Item], stack: str = "") -> str:
    title = f"## Todo: stack `{stack}`" if stack else "## Todo"
    if not items:
        return f"{title}\n\nNothing to do: every resource is already as declared.\n"
    lines = [title, "", _counts(items) + "."]
    for node, group in _groups(items):
        lines += ["", f"### {node}", ""]
        for n, it in group:
            box = "[x]" if it.status == "completed" else "[ ]"
            extra = {"in_progress": " — *in progress*", "failed": " — **failed**"}.get(it.status, "")
            prio = " **(high)**" if it.priority == "high" else ""
            lines.append(f"- {box} {n}. {_md_escape(it.content)}{prio} · {it.phase} · {_md_escape(it.reason)}{extra}")
    return "\n".join(lines) + "\n"


def _md_escape(s: str) -> str:
    return "".join("\\" + c if c in "\\`*_[]<|" else c for c in s)


def seed_json(items: Sequence[Item]) -> str:
    """Exactly the seeds' shape: [{"content", "priority", "status"}], in order."""
    return json.dumps([it.seed() for it in items], indent=2) + "\n"


def full_json(items: Sequence[Item]) -> str:
    return json.dumps([{"number": i, **it.full()} for i, it in enumerate(items, 1)], indent=2) + "\n"


def _node_ids(items: Sequence[Item]) -> dict[str, str]:
    return {it.id: f"i{i}" for i, it in enumerate(items, 1)}


def _edges(items: Sequence[Item]) -> list[tuple[str, str]]:
    """(dependency id, dependent id), in item order; only edges between listed items."""
    known = {it.id for it in items}
    return [(d, it.id) for it in items for d in it.depends_on if d in known]


def mermaid(items: Sequence[Item], stack: str = "") -> str:
    ids = _node_ids(items)
    lines = ["graph TD"]
    if stack:
        lines.insert(0, f"%% todo for stack {stack}")
    for g, (node, group) in enumerate(_groups(items), 1):
        lines.append(f'  subgraph n{g}["{_mermaid_text(node)}"]')
        for n, it in group:
            lines.append(f'    {ids[it.id]}["{n}. {_mermaid_text(it.content)}"]:::{it.status}')
        lines.append("  end")
    for a, b in _edges(items):
        lines.append(f"  {ids[a]} --> {ids[b]}")
    lines += ["  classDef pending fill:#fff,stroke:#888",
              "  classDef in_progress fill:#fff3c4,stroke:#c90",
              "  classDef completed fill:#d8f5d0,stroke:#393",
              "  classDef failed fill:#f8d0d0,stroke:#c33"]
    return "\n".join(lines) + "\n"


def _mermaid_text(s: str) -> str:
    return s.replace("&", "#amp;").replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")


def dot(items: Sequence[Item], stack: str = "") -> str:
    ids = _node_ids(items)
    color = {"pending": "white", "in_progress": "lightgoldenrod1", "completed": "palegreen",
             "failed": "lightpink"}
    lines = [f"digraph {_dot_str('todo ' + stack if stack else 'todo')} {{", "  rankdir=TB;",
             "  node [shape=box, style=filled, fontname=Helvetica];"]
    for g, (node, group) in enumerate(_groups(items), 1):
        lines.append(f"  subgraph cluster_{g} {{")
        lines.append(f"    label={_dot_str(node)};")
        for n, it in group:
            lines.append(f"    {ids[it.id]} [label={_dot_str(f'{n}. {it.content}')}, "
                         f"fillcolor={color.get(it.status, 'white')}];")
        lines.append("  }")
    for a, b in _edges(items):
        lines.append(f"  {ids[a]} -> {ids[b]};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _dot_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


FORMATS: dict[str, Callable[..., str]] = {
    "text": text,
    "markdown": markdown,
    "json": lambda items, stack="": seed_json(items),
    "json-full": lambda items, stack="": full_json(items),
    "mermaid": mermaid,
    "dot": dot,
}


def render(items: Sequence[Item], fmt: str, stack: str = "") -> str:
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; one of: {', '.join(FORMATS)}")
    return FORMATS[fmt](items, stack)
