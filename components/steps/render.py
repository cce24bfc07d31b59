"""Rendering of every text that runs on a node (units, scripts, Dockerfiles) from templates/.

Python never assembles shell text: templates quote every value with the `q` filter (POSIX
shell) or `sd` (systemd's command-line syntax, where `$` and `%` are special too).
"""

from __future__ import annotations

import hashlib
import re
import shlex
from functools import lru_cache
from pathlib import Path

import jinja2

from components import TEMPLATES, names


def shell_quote(value) -> str:
    return shlex.quote(str(value))


def systemd_quote(value) -> str:
    """One systemd ExecStart= argument: double-quoted, with \\ " escaped and $ % doubled."""
    text = str(value)
    if "\n" in text:
        raise ValueError(f"a newline cannot reach a unit's command line: {text!r}")
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("$", "$$").replace("%", "%%")
    return f'"{text}"'


def systemd_env_value(value) -> str:
    """A value of Environment="NAME=value": quoted as one word, specifiers escaped. Unlike
    Exec*= lines, Environment= expands no variables: "$ has no special meaning" (systemd.exec(5)),
    so a $ is written as it is ($$ would reach the process as $$)."""
    text = str(value)
    if "\n" in text:
        raise ValueError(f"a newline cannot reach a unit's environment: {text!r}")
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")


def slug(value) -> str:
    """A file name from free text ("model tiny -> lab-2" → "model-tiny-lab-2")."""
    return re.sub(r"[^A-Za-z0-9._]+", "-", str(value)).strip("-") or "step"


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["q"] = shell_quote
    env.filters["sd"] = systemd_quote
    env.filters["sdenv"] = systemd_env_value
    env.filters["slug"] = slug
    env.globals["names"] = names  # the generated names (components/names.py), defined once
    return env


@lru_cache(maxsize=1)
def package_list(path: Path) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(package, the commands of it we run) of a package list: templates/node-packages.txt for
    the nodes, scripts/host-packages.txt for the operator's machine (one format: a package, then
    its commands; `#` comments)."""
    out = []
    for line in path.read_text().splitlines():
        words = line.split("#", 1)[0].split()
        if len(words) > 1:
            out.append((words[0], tuple(words[1:])))
    return tuple(out)


def node_packages() -> tuple[tuple[str, tuple[str, ...]], ...]:
    return package_list(TEMPLATES / "node-packages.txt")


# Where a step's failure block (templates/scripts/_failure.sh.j2) takes its table of packages.
PACKAGES_MARK = "#@node-packages@"


def fill_node_packages(text: str, packages=None) -> str:
    """The failure block's table, with the Debian package of each command the script names (of
    templates/node-packages.txt): what the block names as the fix when one is not found on the
    node. Only those: a script says nothing of tools it does not use."""
    if PACKAGES_MARK not in text:
        return text
    head, _, tail = text.partition(PACKAGES_MARK)
    indent = head[head.rfind("\n") + 1:]
    head = head[:len(head) - len(indent)]
    body = head + tail
    entries = []
    for package, commands in packages if packages is not None else node_packages():
        used = [c for c in commands if re.search(rf"(?<![\w.-]){re.escape(c)}(?![\w.-])", body)]
        if used:
            entries.append(f"{indent}{'|'.join(shlex.quote(c) for c in used)}) package={shlex.quote(package)} ;;")
    return head + "\n".join(entries) + tail if entries else head + tail.removeprefix("\n")


def render(template: str, **values) -> str:
    return fill_node_packages(environment().get_template(template).render(**values))


def digest(*parts: str, length: int = 12) -> str:
    """A short content address of rendered text (image tags, change detection)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:length]


def python_program(main: str, *modules: str) -> str:
    """One Python program (run as `python3 -` or `python3 -c`) made of templates/scripts/MAIN.py
    and the modules it imports from there (MODULES), so that a check shared by two scripts exists
    once and still reaches the node as one text on stdin. The modules are registered in
    sys.modules before MAIN runs as __main__."""
    scripts = TEMPLATES / "scripts"
    lines = ["import sys, types", "", "def _bws_module(name, source):",
             "    module = types.ModuleType(name)", "    module.__file__ = name + '.py'",
             "    sys.modules[name] = module", "    exec(compile(source, module.__file__, 'exec'), module.__dict__)",
             ""]
    for name in modules:
        lines.append(f"_bws_module({name!r}, {(scripts / f'{name}.py').read_text()!r})")
    lines.append(f"exec(compile({(scripts / f'{main}.py').read_text()!r}, {main + '.py'!r}, 'exec'), "
                 "{'__name__': '__main__'})")
    return "\n".join(lines) + "\n"
