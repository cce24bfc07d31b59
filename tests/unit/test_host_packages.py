"""Every external command that something of ours runs on the operator's machine is installed by
the README's commands: it belongs to a package of scripts/host-packages.txt, or to Debian's
essential set (read from this machine's dpkg database), or it is one of the few things the
setup scripts build or the machine is documented to bring (ALSO_PROVIDED).

The operator-side code is read, not run: the shell scripts (`scripts/`, the lab's scripts, the
upload template that runs on the operator's machine) by their command words, the Python code by
the first word of every argv it hands to subprocess."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from components.steps.render import package_list

REPO = Path(__file__).resolve().parents[2]
PACKAGES = REPO / "scripts" / "host-packages.txt"

# Not from Debian: what the setup scripts build or create, and what the README asks of the machine.
ALSO_PROVIDED = {
    "pulumi": "scripts/install-engine.sh builds it into .engine/bin",
    "python": "the project's .venv (scripts/setup-python.sh)",
    "pulumi-language-python": "scripts/install-engine.sh builds it into .engine/bin",
    "go": "the README's machine: Go (scripts/install-engine.sh builds the engine with it)",
}

SHELL_SOURCES = [*sorted((REPO / "scripts").glob("*.sh")), REPO / "tests/lab/lab",
                 *sorted((REPO / "tests/lab").glob("*.sh")), *sorted((REPO / "tests/lab/engine").glob("*.sh")),
                 REPO / "templates/scripts/upload-dir.sh.j2"]
PYTHON_SOURCES = [p for d in ("components", "scripts", "tests", "bench") for p in sorted((REPO / d).rglob("*.py"))]

SHELL_WORDS = set("""
if then else elif fi for while until do done case esac in function select time coproc
{ } [ [[ ]] ! : . source alias bg bind break builtin caller cd command compgen complete continue
declare dirs disown echo enable eval exec exit export false fc fg getopts hash help history jobs
kill let local logout mapfile popd printf pushd pwd read readarray readonly return set shift
shopt suspend test times trap true type typeset ulimit umask unalias unset wait
""".split())


def package_commands() -> dict[str, str]:
    """command -> package, from scripts/host-packages.txt."""
    return {command: package for package, commands in package_list(PACKAGES) for command in commands}


def essential_commands() -> set[str]:
    """The commands in Debian's essential packages on this machine (dpkg's own database)."""
    listed = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Essential}\\n"],
                            capture_output=True, text=True, check=True).stdout
    essential = [p.split(":")[0] for p, flag in (ln.split() for ln in listed.splitlines() if ln.strip()) if flag == "yes"]
    files = subprocess.run(["dpkg", "-L", *essential], capture_output=True, text=True).stdout.split()
    return {Path(f).name for f in files if re.search(r"/s?bin/[^/]+$", f)}


def _drop_heredocs(text: str) -> str:
    """The script without the bodies of its here-documents (they are another language's text)."""
    out, end = [], None
    for line in text.splitlines():
        if end is not None:
            if line.strip() == end:
                end = None
            continue
        out.append(line)
        m = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", line)
        if m and "<<<" not in line:
            end = m.group(1)
    return "\n".join(out)


def _double_quoted(match: re.Match) -> str:
    """A double-quoted string stands for a plain word, followed by the commands it substitutes."""
    inner = re.findall(r"\$\(((?:[^()]|\([^()]*\))*)\)", match.group(1))
    return " S " + "".join(f"; {c} ;" for c in inner)


def shell_functions(text: str) -> set[str]:
    return set(re.findall(r"(?m)^\s*(?:function\s+)?([\w-]+)\s*\(\)", text))


def shell_commands(text: str, defined: set[str] = frozenset()) -> set[str]:
    """The words in command position of a bash script (or a Jinja2 template of one), but the
    functions `defined` there or in what it sources."""
    defined = defined | shell_functions(text)
    text = re.sub(r"\{[{%#].*?[}%#]\}", " X ", text, flags=re.S)  # Jinja2 expressions and tags
    text = _drop_heredocs(text)
    text = re.sub(r"(?m)(^|\s)#.*$", " ", text)                     # comments
    text = re.sub(r"'[^'\n]*'", " S ", text)                        # single-quoted strings
    text = re.sub(r"\$\{[^{}]*\}", "X", text)                         # ${parameter} expansions
    text = re.sub(r"\$?\(\((?:[^()]|\([^()]*\))*\)\)", " X ", text)     # arithmetic
    text = re.sub(r'"((?:[^"\\]|\\.)*)"', _double_quoted, text)     # only their $(...) runs
    text = re.sub(r"(?m)\b[A-Za-z_]\w*\+?=\([^()]*\)", " ", text)      # array literals
    text = re.sub(r"(?m)^\s*[\w*. |-]+\)", " ", text)                 # case patterns
    text = text.replace("\\\n", " ")
    commands = set()
    for piece in re.split(r"\|\||&&|[|;&\n`]|\$\(|\(|\bthen\b|\bdo\b|\belse\b|\{|\}|!", text):
        words = piece.split()
        while words and (re.match(r"^[A-Za-z_]\w*(\[.*\])?\+?=", words[0]) or words[0] in {"exec", "command", "time", "nohup", "sudo", "timeout"}):
            if words[0] in {"command"} and len(words) > 1 and words[1].startswith("-"):
                words = []  # command -v NAME: a lookup, not a run
                break
            words = words[1:] if words[0] != "timeout" else [w for w in words[1:] if not re.match(r"^(-|\d)", w)]
        if not words:
            continue
        word = words[0].strip('"').rstrip(")")
        if (word in SHELL_WORDS or word in defined or not re.fullmatch(r"[A-Za-z][\w.+-]*", word) or word in {"S", "X"}):
            continue
        commands.add(word)
    return commands


def python_commands(text: str) -> set[str]:
    """The first word of every literal argv given to subprocess (run, Popen, check_output, ...),
    and every name given to shutil.which or tests.tools.require."""
    found = set()
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        first = node.args[0]
        if name in {"run", "Popen", "check_output", "check_call", "call"} and isinstance(first, (ast.List, ast.Tuple)) and first.elts:
            first = first.elts[0]
        elif name not in {"which", "require"}:
            continue
        if isinstance(first, ast.Constant) and isinstance(first.value, str) and re.fullmatch(r"[a-z][\w.+-]*", first.value):
            found.add(first.value)
    return found


def operator_commands() -> dict[str, set[str]]:
    """command -> the files that run it."""
    uses: dict[str, set[str]] = {}
    # the functions of the files the scripts source or include (lib.sh, _progress.sh.j2, ...)
    library = set().union(*(shell_functions(p.read_text()) for p in
                            [*SHELL_SOURCES, *(REPO / "templates/scripts").glob("_*.sh.j2")]))
    for path in SHELL_SOURCES:
        for c in shell_commands(path.read_text(), library):
            uses.setdefault(c, set()).add(str(path.relative_to(REPO)))
    for path in PYTHON_SOURCES:
        for c in python_commands(path.read_text()):
            uses.setdefault(c, set()).add(str(path.relative_to(REPO)))
    return uses


def not_installed(uses: dict[str, set[str]]) -> dict[str, list[str]]:
    """The commands of `uses` that neither the list, nor the essential set, nor ALSO_PROVIDED give."""
    listed, essential = package_commands(), essential_commands()
    ours = {p.name for p in SHELL_SOURCES}
    return {c: sorted(files) for c, files in uses.items()
            if c not in listed and c not in essential and c not in ALSO_PROVIDED and c not in ours}


needs_dpkg = pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="not a Debian machine: no essential set to read")


@needs_dpkg
def test_every_command_we_run_is_installed_by_the_readme_commands():
    missing = not_installed(operator_commands())
    assert not missing, ("commands run on the operator's machine that scripts/setup-host.sh does not install; "
                         "fix: add their Debian package to scripts/host-packages.txt:\n"
                         + "\n".join(f"  {c}: {', '.join(f)}" for c, f in sorted(missing.items())))


def test_the_reader_finds_commands_in_every_position():
    script = """#!/usr/bin/env bash
x=$(rsync -a a b | gzip) && FOO=1 shellcheck f || timeout 5 unshare -r true
if ! docker info >/dev/null; then sha256sum f; fi
command -v notrun >/dev/null
f() { inner-tool; }
cat <<'EOF'
heredoc-word
EOF
# comment-word
echo 'quoted-word' "a (b; c) $(hostname -f) d"
ARR=(
  one two
)
: "${X:-$(nproc)}"
"""
    assert shell_commands(script) == {"rsync", "gzip", "shellcheck", "unshare", "docker", "sha256sum",
                                      "inner-tool", "cat", "hostname"}
    code = 'import subprocess, shutil\nsubprocess.run(["nsenter", "-t"])\nshutil.which("git")\nsubprocess.run(argv)\n'
    assert python_commands(code) == {"nsenter", "git"}


@needs_dpkg
def test_a_command_outside_the_list_is_named_with_its_file():
    uses = {"rsync": {"a.sh"}, "sed": {"a.sh"}, "pulumi": {"b.sh"}, "frobnicate-tool": {"c.sh", "d.py"}}
    assert not_installed(uses) == {"frobnicate-tool": ["c.sh", "d.py"]}
