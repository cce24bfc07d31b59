"""Every external command that something of ours runs on the operator's machine is installed by
the README's commands: it belongs to a package of scripts/host-packages.txt, or to Debian's
essential set (read from this machine's dpkg database), or it is one of the few things the
setup scripts build or the machine is documented to bring (ALSO_PROVIDED).

The operator-side code is read, not run: the shell scripts (`scripts/`, the lab's scripts, the
upload template that runs on the operator's machine and the templates it includes) by their
command words, and the words a wrapper (setsid, xargs, timeout, ...) runs; the Python code by the
first word of every argv it hands to subprocess. The reverse holds too: every command the list
names is run by something of ours, so the list keeps no dead entries."""

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
TEST_PACKAGES = REPO / "scripts" / "test-packages.txt"   # the test command's own (setup-host.sh --tests)

# Not from Debian: what the setup scripts build or create, and what the README asks of the machine.
ALSO_PROVIDED = {
    "pulumi": "scripts/install-engine.sh builds it into .engine/bin",
    "python": "the project's .venv (scripts/setup-python.sh)",
    "pulumi-language-python": "scripts/install-engine.sh builds it into .engine/bin",
    "go": "the README's machine: Go (scripts/install-engine.sh builds the engine with it)",
}

TEMPLATES = REPO / "templates"


def with_includes(paths: list[Path]) -> list[Path]:
    """The paths and, recursively, the templates they `{% include %}`: what an included template
    runs, the including one runs (upload-dir.sh.j2 runs _prelude's, _failure's, _progress's)."""
    out: list[Path] = []
    todo = list(paths)
    while todo:
        path = todo.pop(0)
        if path in out:
            continue
        out.append(path)
        if path.suffix == ".j2":
            todo += [TEMPLATES / name for name in re.findall(r"\{%-?\s*include\s+[\"']([^\"']+)[\"']", path.read_text())]
    return out


SHELL_SOURCES = with_includes([*sorted((REPO / "scripts").glob("*.sh")), REPO / "tests/lab/lab",
                               *sorted((REPO / "tests/lab").glob("*.sh")), *sorted((REPO / "tests/lab/engine").glob("*.sh")),
                               TEMPLATES / "scripts/upload-dir.sh.j2"])
PYTHON_SOURCES = [p for d in ("components", "scripts", "tests", "bench") for p in sorted((REPO / d).rglob("*.py"))]

SHELL_WORDS = set("""
if then else elif fi for while until do done case esac in function select time coproc
{ } [ [[ ]] ! : . source alias bg bind break builtin caller cd command compgen complete continue
declare dirs disown echo enable eval exec exit export false fc fg getopts hash help history jobs
kill let local logout mapfile popd printf pushd pwd read readarray readonly return set shift
shopt suspend test times trap true type typeset ulimit umask unalias unset wait
""".split())


def package_commands() -> dict[str, str]:
    """command -> package, from scripts/host-packages.txt and scripts/test-packages.txt."""
    return {command: package for path in (PACKAGES, TEST_PACKAGES)
            for package, commands in package_list(path) for command in commands}


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
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'', _single_quoted, text)  # single-quoted strings, over lines too
    text = re.sub(r"\$\{[^{}]*\}", "X", text)                         # ${parameter} expansions
    text = re.sub(r"\$?\(\((?:[^()]|\([^()]*\))*\)\)", " X ", text)     # arithmetic
    text = re.sub(r'"((?:[^"\\]|\\.)*)"', _double_quoted, text)     # only their $(...) runs
    text = re.sub(r"(?m)\b[A-Za-z_]\w*\+?=\([^()]*\)", " ", text)      # array literals
    text = _drop_case_patterns(text)
    text = text.replace("\\\n", " ")
    commands = set()
    for piece in re.split(r"\|\||&&|[|;&\n`]|\$\(|\(|\bthen\b|\bdo\b|\belse\b|\{|\}|!", text):
        words = piece.split()
        while words:
            if re.match(r"^[A-Za-z_]\w*(\[.*\])?\+?=", words[0]):  # VAR=value before a command
                words = words[1:]
                continue
            word = words[0].strip('"').rstrip(")")
            if not (word in SHELL_WORDS or word in defined or not re.fullmatch(r"[A-Za-z][\w.+-]*", word) or word in {"S", "X"}):
                commands.add(word)
            if word == "command" and len(words) > 1 and words[1].startswith("-"):
                break  # command -v NAME: a lookup, not a run
            if word not in WRAPPERS:
                break
            words = _unwrap(word, words[1:])  # the wrapper runs the command after it: read that one too
    return commands


# Commands that run the command after their own options and arguments: {wrapper: (options that
# take a value, how many plain arguments come before the command)}. `detached` is the lab's own
# function (tests/lab/detached.sh): setsid with the descriptors closed.
WRAPPERS = {
    "exec": (set(), 0), "command": (set(), 0), "time": (set(), 0), "nohup": (set(), 0),
    "setsid": (set(), 0), "detached": (set(), 0),
    "sudo": ({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"}, 0),
    "env": ({"-u", "-C", "-S", "--unset", "--chdir", "--split-string"}, 0),
    "nice": ({"-n", "--adjustment"}, 0),
    "stdbuf": ({"-i", "-o", "-e"}, 0),
    "xargs": ({"-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--arg-file", "--delimiter", "--max-args",
               "--max-procs", "--max-lines", "--max-chars", "--replace"}, 0),
    "timeout": ({"-s", "-k", "--signal", "--kill-after"}, 1),  # the duration
    "flock": ({"-w", "-E", "--timeout", "--conflict-exit-code"}, 1),  # the lock file (or descriptor)
}


def _unwrap(wrapper: str, words: list[str]) -> list[str]:
    """The words after `wrapper`'s options and arguments (and, for env, its VAR=value words)."""
    valued, arguments = WRAPPERS[wrapper]
    while words and (words[0].startswith("-") or (wrapper == "env" and "=" in words[0])):
        words = words[2:] if words[0] in valued else words[1:]
    if wrapper == "flock" and words and re.fullmatch(r"\d+", words[0]):
        return []  # flock FD: locks a descriptor, runs nothing
    return words[arguments:]


def _single_quoted(match: re.Match) -> str:
    """A single-quoted string (found left to right, so an apostrophe inside double quotes is no
    quote) stands for a plain word; a double-quoted one is left for later."""
    return " S " if match.group(0).startswith("'") else match.group(0)


def _drop_case_patterns(text: str) -> str:
    """The script without its case patterns (`a|b-c)`): only where a pattern may stand, after a
    `case ... in` line or a `;;`, so a `... | awk ...)` that closes a $( elsewhere is still read."""
    out, pattern_next, depth = [], False, 0
    for line in text.splitlines():
        if depth and pattern_next:
            line = re.sub(r"^\s*\(?[\w*. |-]+\)", " ", line)
        if line.strip():
            pattern_next = False
        if re.search(r"\bcase\b.*\bin\s*$", line):
            depth, pattern_next = depth + 1, True
        if re.search(r";;&?\s*$|;&\s*$", line):
            pattern_next = True
        if re.search(r"\besac\b", line):
            depth = max(depth - 1, 0)
        out.append(line)
    return "\n".join(out)


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


def test_every_listed_command_is_run_somewhere():
    """The reverse: a command of the list that nothing of ours runs is a dead entry."""
    uses = operator_commands()
    dead = {c: p for c, p in package_commands().items() if c not in uses}
    assert not dead, ("scripts/host-packages.txt names commands that no script or Python code of ours runs; "
                      "fix: drop them (and a package left with none):\n"
                      + "\n".join(f"  {c} ({p})" for c, p in sorted(dead.items())))


def test_the_reader_reads_through_wrappers():
    script = """setsid foo-a
detached foo-b --flag
x=$(find . -print0 | xargs -0 -n 1 foo-c)
env -u HOME A=1 B=2 foo-d
nice -n 5 foo-e; stdbuf -oL foo-f; nohup foo-g &
flock -w 3 /tmp/lock foo-h
flock 9
timeout -s KILL 10 foo-i
exec foo-j
"""
    found = shell_commands(script, {"detached"})
    assert found == {"setsid", "xargs", "find", "env", "nice", "stdbuf", "nohup", "flock", "timeout",
                     *(f"foo-{c}" for c in "abcdefghij")}, found


def test_a_closing_parenthesis_is_a_case_pattern_only_inside_case():
    script = """x=$(sort f |
  tr -d '\\r' | awk '{print}')
case "$x" in
  start|stop-all) run-a ;;
  plain)
    run-b
    ;;
esac
y=$(a-cmd |
  b-cmd)
"""
    assert shell_commands(script) == {"sort", "tr", "awk", "run-a", "run-b", "a-cmd", "b-cmd"}


def test_a_single_quoted_program_may_span_lines():
    script = """echo "it's" | awk -v x=1 '
  /a/ { print; next }
  match($0, /b/) { fflush() }
' | tee f
"""
    assert shell_commands(script) == {"awk", "tee"}


def test_the_templates_includes_are_read():
    read = {p.name for p in SHELL_SOURCES}
    assert {"upload-dir.sh.j2", "_prelude.sh.j2", "_progress.sh.j2", "_failure.sh.j2"} <= read


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
                                      "inner-tool", "cat", "hostname", "timeout"}
    code = 'import subprocess, shutil\nsubprocess.run(["nsenter", "-t"])\nshutil.which("git")\nsubprocess.run(argv)\n'
    assert python_commands(code) == {"nsenter", "git"}


@needs_dpkg
def test_a_command_outside_the_list_is_named_with_its_file():
    uses = {"rsync": {"a.sh"}, "sed": {"a.sh"}, "pulumi": {"b.sh"}, "frobnicate-tool": {"c.sh", "d.py"}}
    assert not_installed(uses) == {"frobnicate-tool": ["c.sh", "d.py"]}
