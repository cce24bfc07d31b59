"""What changed in one of our systemd units, in an operator's words, from the old and new inputs
of its install step (a preview's step metadata): the engine's flags (`--max-model-len 32768 →
65536`), its Environment= values (`env VLLM_X: a → b`), and which of its other lines changed
(`unit ExecStartPre changed`).

The install step's stdin is plain (its secrets are its env step's, components/resources/unit.py), so both
versions of the unit's text are there, inside the script's here-document. Nothing here reads a
secret: a secret input reaches this module as the engine's mask, never as text, and the unit's
text never holds one. A display aid only: whatever it cannot read gives no change, and the
todo item keeps its plain reason."""

from __future__ import annotations

import difflib
import re
import shlex

# The here-document of templates/scripts/install-unit.sh.j2 (components/resources/unit.py UNIT_DELIMITER).
_UNIT = re.compile(r"<<'BWS_UNIT_EOF'\n(.*?)BWS_UNIT_EOF", re.S)
# How many changes an item names before "… n more".
MAX_SHOWN = 4


def unit_text(stdin: object) -> str | None:
    """The unit text an install step's stdin carries; None for anything else (a mask, another step)."""
    m = _UNIT.search(stdin) if isinstance(stdin, str) else None
    return m.group(1) if m else None


def _lines(text: str) -> list[str]:
    """The unit's lines, continuations joined, comments and blanks dropped."""
    out: list[str] = []
    for raw in text.replace("\\\n", " ").splitlines():
        line = raw.strip()
        if line and line[0] not in "#;":
            out.append(line)
    return out


def _words(value: str) -> list[str]:
    """A systemd value's words as a process sees them (our templates' quoting: "…" with \\ and \"
    escaped, $$ and %% doubled); ValueError on anything else."""
    return [w.replace("$$", "$").replace("%%", "%") for w in shlex.split(value)]


def parts(text: str) -> tuple[list[str], dict[str, str], list[str]]:
    """(ExecStart argv, Environment= values, every other line) of a unit's text."""
    argv: list[str] = []
    env: dict[str, str] = {}
    other: list[str] = []
    for line in _lines(text):
        key, _, value = line.partition("=")
        if key == "ExecStart":
            argv = _words(value)
        elif key == "Environment":
            for word in _words(value):
                name, _, val = word.partition("=")
                env[name] = val
        else:
            other.append(line)
    return argv, env, other


def _show(tokens: list[str]) -> str:
    return " ".join(t if t and not re.search(r"[\s'\"\\]", t) else shlex.quote(t) for t in tokens)


def _is_flag(token: str) -> bool:
    return token.startswith("-") and len(token) > 1


def argv_changes(old: list[str], new: list[str]) -> list[str]:
    """`--flag old → new` for a changed value (the flag before it named), `+tokens` / `-tokens`
    for added and removed ones, `old → new` otherwise."""
    out: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        was, now = old[i1:i2], new[j1:j2]
        if op == "equal":
            continue
        if op == "insert":
            out.append("+" + _show(now))
        elif op == "delete":
            out.append("-" + _show(was))
        else:  # token by token, then what is left over is added or removed
            k = min(len(was), len(now))
            for i in range(k):
                if was[i] == now[i]:
                    continue
                before = old[i1 + i - 1] if i1 + i > 0 else ""
                flag = before if _is_flag(before) and not _is_flag(was[i]) else None
                out.append((f"{flag} " if flag else "") + f"{_show([was[i]])} → {_show([now[i]])}")
            if was[k:]:
                out.append("-" + _show(was[k:]))
            if now[k:]:
                out.append("+" + _show(now[k:]))
    return out


def env_changes(old: dict[str, str], new: dict[str, str]) -> list[str]:
    out = []
    for name in sorted(old.keys() | new.keys()):
        if name not in new:
            out.append(f"env -{name}")
        elif name not in old:
            out.append(f"env +{name}={new[name]}")
        elif old[name] != new[name]:
            out.append(f"env {name}: {old[name]} → {new[name]}")
    return out


def changes(old_stdin: object, new_stdin: object) -> list[str] | None:
    """The changes of the unit between two stdins of its install step; None when either is not
    readable (a mask, a step of another kind, a unit this module cannot parse)."""
    old_text, new_text = unit_text(old_stdin), unit_text(new_stdin)
    if old_text is None or new_text is None:
        return None
    try:
        (old_argv, old_env, old_rest), (new_argv, new_env, new_rest) = parts(old_text), parts(new_text)
    except ValueError:
        return None
    found = argv_changes(old_argv, new_argv) + env_changes(old_env, new_env)
    if old_rest != new_rest:  # by key: which other lines (After=, ExecStartPre=, …) changed
        keys = dict.fromkeys(line.partition("=")[0] for line in [*old_rest, *new_rest]
                             if (line in old_rest) != (line in new_rest))
        found.append(f"unit {', '.join(keys) or 'lines'} changed")
    return found


def script_around(stdin: object) -> str | None:
    """The install step's stdin with the unit blanked out: what else its script changed."""
    return _UNIT.sub("<<unit>>", stdin) if isinstance(stdin, str) else None


def summary(found: list[str]) -> str:
    shown = found[:MAX_SHOWN]
    more = len(found) - len(shown)
    return ", ".join(shown) + (f", … {more} more" if more else "")
