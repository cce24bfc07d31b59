"""Discovery into an existing stack file: the values merged (a node matched by its host keeps
its name and the operator's SSH settings; the fabric keeps keys discovery does not know, such as
bandwidth_check; retire and keep only grow, since a unit we retired is not running when the
machines are discovered again), then the text rewritten block by block, so that every other key
and comment of the file stays as the operator wrote it. The unified diff shows the change."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from components.discover.nodes import Discovered, Item
from components.discover.write import INDENT, blocks

# The fabric keys discovery decides; a key of these it did not write is removed (e.g. hcas on
# a fabric that turned out to have no RDMA device).
FABRIC_KEYS = ("netdev", "hcas", "gid_index", "mtu", "prefix_len", "disable_ib", "infiniband_device")
CONFIG_LINE = re.compile(r"^config:\s*(#.*)?$")
KEY_LINE = re.compile(r"^(\s*)([^\s#'\"-][^\s]*?):(\s|$)")


def merge_values(existing: dict, found: Discovered) -> Discovered:
    """The discovered parts merged with the file's (project keys without the prefix)."""
    nodes, renamed = _nodes(existing.get("nodes") or [], found.nodes)
    retire, keep = ([Item({**i.value, "node": renamed.get(i.value["node"], i.value["node"])}, i.comments) for i in items]
                    for items in (found.retire, found.keep))
    return Discovered(nodes=nodes, fabric=_fabric(existing.get("fabric"), found.fabric),
                      retire=_grown(existing.get("retire") or [], retire, existing.get("keep") or []),
                      keep=_grown(existing.get("keep") or [], keep, existing.get("retire") or []))


def _nodes(old: list, found: list[Item]) -> tuple[list[Item], dict[str, str]]:
    """The nodes merged, and the discovered names that became the file's (matched by host)."""
    by_host = {n.get("host"): n for n in old if isinstance(n, dict)}
    merged, seen, renamed = [], set(), {}
    for item in found:
        before = by_host.get(item.value["host"])
        if before is None:
            merged.append(item)
            continue
        seen.add(item.value["host"])
        renamed[item.value["name"]] = before.get("name", item.value["name"])
        ssh = {**(before.get("ssh") or {}), **item.value["ssh"]}
        if "private_key" in ssh:          # the operator's secret reference stays the key
            ssh.pop("private_key_path", None)
        merged.append(Item({**item.value, "name": before.get("name", item.value["name"]), "ssh": ssh},
                           item.comments))
    kept = [Item(n, ["not among the machines discovered this time: kept as it was"])
            for n in old if isinstance(n, dict) and n.get("host") not in seen]
    return merged + kept, renamed


def _fabric(old, found: Item | None) -> Item | None:
    if found is None:
        return Item(old, []) if isinstance(old, dict) else None
    if not isinstance(old, dict):
        return found
    value = {k: v for k, v in old.items() if k not in FABRIC_KEYS or k in found.value}
    value.update(found.value)
    return Item(value, found.comments)


def _grown(old: list, found: list[Item], other: list) -> list[Item]:
    """The file's entries and the new ones; nothing (the block left as written) when none is new."""
    listed = {(r.get("node"), r.get("unit")) for r in old + other if isinstance(r, dict)}
    new = [i for i in found if (i.value["node"], i.value["unit"]) not in listed]
    return [Item(r, []) for r in old] + new if new else []


@dataclass
class Segment:
    key: str | None          # the config key it holds; None: comments and blank lines between keys
    lines: list[str]


@dataclass
class Layout:
    before: list[str]        # up to and with `config:`
    indent: str | None       # the config keys' indentation
    segments: list[Segment]
    after: list[str]         # the top-level keys after config (encryptionsalt, …)


def split(text: str) -> Layout:
    """A stack file's lines cut into config keys, each with the comments right above it."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if CONFIG_LINE.match(line)), None)
    if start is None:
        return Layout(lines, None, [], [])
    layout = Layout(lines[:start + 1], None, [], [])
    pending: list[str] = []
    for i in range(start + 1, len(lines)):
        line = lines[i]
        if not line.strip() or line.lstrip().startswith("#"):
            pending.append(line)
            if not line.strip():     # comments apart from what follows
                layout.segments.append(Segment(None, pending))
                pending = []
            continue
        lead = line[:len(line) - len(line.lstrip())]
        if not lead:                 # a top-level key: config ends
            layout.after = pending + lines[i:]
            return layout
        layout.indent = layout.indent or lead
        key = KEY_LINE.match(line)
        if lead == layout.indent and key:
            layout.segments.append(Segment(key.group(2), pending + [line]))
        else:
            _inside_last_key(layout.segments).lines.extend(pending + [line])
        pending = []
    if pending:
        layout.segments.append(Segment(None, pending))
    return layout


def _inside_last_key(segments: list[Segment]) -> Segment:
    """The last key's segment, with the comments after it folded in (they were inside its value,
    after a blank line)."""
    keyed = [i for i, s in enumerate(segments) if s.key]
    if not keyed:
        segments.append(Segment(None, []))
        return segments[-1]
    last = keyed[-1]
    for loose in segments[last + 1:]:
        segments[last].lines.extend(loose.lines)
    del segments[last + 1:]
    return segments[last]


def compose(text: str, parts: Discovered) -> str:
    """The file's text with the discovered blocks in place of the ones it had (new keys: nodes
    and fabric first in config, retire and keep last)."""
    layout = split(text)
    new = blocks(parts)
    indent = layout.indent or INDENT
    new = {k: [indent + line[len(INDENT):] if line.startswith(INDENT) else line for line in v] for k, v in new.items()}
    if not layout.before or not CONFIG_LINE.match(layout.before[-1]):
        layout.before = layout.before + ["config:"]
    segments = [Segment(s.key, new.pop(s.key)) if s.key in new else s for s in layout.segments]
    first = [Segment(k, new.pop(k)) for k in list(new) if k.endswith((":nodes", ":fabric"))]
    last = [Segment(k, v) for k, v in new.items()]
    keyed = [i for i, s in enumerate(segments) if s.key]
    end = keyed[-1] + 1 if keyed else len(segments)
    segments = first + segments[:end] + last + segments[end:]
    lines = layout.before + [line for s in segments for line in s.lines] + layout.after
    return "\n".join(lines) + "\n"


def unified_diff(old: str, new: str, path: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                        fromfile=f"{path} (now)", tofile=f"{path} (discovered)"))
