"""Tests that can fail (issue 39): the tests that check the nodes name no unit or container of ours
by hand, and no test sleeps a fixed time before it asserts.

1. A name under our prefix written out (components/names.py PREFIX, then a name) goes stale when the
   stack changes, and one spelled wrong passes a check of absence: the lab tests and the benches
   take every name from the stack file through the program's names (tests/lab/helpers.py). Read
   from the string literals of the Python source, f-strings included (a naming rule copied as
   f"bws-{name}" is one too); not from comments and docstrings, which explain to a reader.
2. A fixed `time.sleep` with an `assert` after it in its block (however many lines apart) assumes
   that what it waited for has happened by then: a test waits for the condition itself, bounded
   (tests/wait.py). A poll's sleep, at the end of its loop, has no assert after it in its block.

Only Python files are read: the golden files under tests/render/golden and tests/unit/golden are
the program's output as recorded, tests/unit/data and bench/results hold inputs and figures, and
the shell files under tests/lab are the lab harness (its own nodes and networks, tests/lab/lab.env):
none of them is a test."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from components import names

REPO = Path(__file__).resolve().parents[2]
SCANNED = ("tests", "bench")
P = names.PREFIX
NAME = re.compile(rf"(?<!\w){re.escape(P)}[\w{{][\w.{{}}/-]*")

# Where a literal name is the point, and the names scan does not look: these tests check the
# program's own text (rendered scripts and units, the todo list's sentences, what the parsers
# read), offline, against literals written out on purpose; an expectation built with names.py
# would hold a wrong name to itself (tests/unit/test_names.py keeps names.py the one definition).
NAMES_NOT_SCANNED = ("tests/unit/", "tests/render/", "tests/engine/")

# Names under the prefix that are not the program's, and why they are written out.
NOT_OURS = {
    f"{P}lab": "the lab harness's own, named as its nodes are (lab.env LAB_NODE_PREFIX): the bare operator's "
               "container and base image, the venv test's wheelhouse on a node",
    f"{P}dist-": "scratch scripts and logs in /tmp of the copy tests and the dist bench (tests/lab/dist.py)",
    f"{P}repair-test": "the repair test's own drop-in, which makes a unit fail (tests/lab/test_lab_repair.py)",
    f"{P}rollback-test": "a chat template that does not exist, on purpose (tests/lab/test_lab_rollback.py)",
}

# (file, function): a fixed sleep before an assert kept on purpose, and why.
SLEEPS_KEPT = {
    **{("tests/lab/test_lab_image_layers.py", f): "a pause after the kill before checking that the copy did not "
       "finish: a check of absence, which a longer pause only makes stricter (the log line read is written "
       "before the kill)"
       for f in ("test_an_interrupted_copy_resumes_at_layer_granularity",
                 "test_an_interrupted_whole_image_copy_resumes_from_the_kept_stream")},
    ("tests/lab/test_lab_repair.py", "repaired_in_one_up"): "the operator's pause before looking (systemd's "
        "RestartSec passes); what is asserted after it is the repair, which must hold however long the pause",
    ("tests/unit/test_drift_transform.py",
     "test_two_observations_of_the_same_drift_differ_so_the_engine_always_sees_a_change"): "the sleep is the "
        "condition: the clock moves between two stamps (microseconds)",
}


def python_files(root: Path) -> Iterator[tuple[str, ast.Module]]:
    for top in SCANNED:
        for path in sorted((root / top).rglob("*.py")):
            yield path.relative_to(root).as_posix(), ast.parse(path.read_text())


def string_literals(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """(line, text) of every string literal but the docstrings; an f-string as written."""
    docstrings, parts = set(), set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body \
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            docstrings.add(id(body[0].value))
        if isinstance(node, ast.JoinedStr):
            parts.update(id(v) for v in node.values)
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            yield node.lineno, ast.unparse(node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings | parts:
            yield node.lineno, node.value


def names_by_hand(root: Path = REPO) -> list[tuple[str, int, str]]:
    """(file, line, name) of every name under the prefix written out where the scan looks."""
    found = set()
    for rel, tree in python_files(root):
        if not rel.startswith(NAMES_NOT_SCANNED):
            found.update((rel, line, name) for line, text in string_literals(tree) for name in NAME.findall(text))
    return sorted(found)


def blocks(node: ast.AST, function: str = "<module>") -> Iterator[tuple[str, list[ast.stmt]]]:
    """Every statement list below `node`, with the name of the function it is in."""
    for field in ("body", "orelse", "finalbody"):
        block = getattr(node, field, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            yield function, block
    for child in ast.iter_child_nodes(node):
        yield from blocks(child, child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function)


def is_sleep(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call) \
        and ast.unparse(statement.value.func) in ("time.sleep", "sleep")


def sleeps_before_asserts(root: Path = REPO) -> list[tuple[str, str, int, str]]:
    """(file, function, line, the sleep) of every fixed sleep with an assert after it in its block."""
    found = []
    for rel, tree in python_files(root):
        for function, block in blocks(tree):
            for i, statement in enumerate(block):
                if is_sleep(statement) and any(isinstance(n, ast.Assert) for later in block[i + 1:]
                                               for n in ast.walk(later)):
                    found.append((rel, function, statement.lineno, ast.unparse(statement)))
    return found


def problems(root: Path = REPO) -> list[str]:
    """What the two scans find, less what is kept on purpose: one line each, with the fix."""
    return ([f"{rel}:{line}: {name} written by hand; fix: take it from the stack file and components/names.py "
             f"(tests/lab/helpers.py)" for rel, line, name in names_by_hand(root) if not name.startswith(tuple(NOT_OURS))]
            + [f"{rel}:{line}: {sleep} in {function}, then an assert; fix: wait for the condition "
               f"(tests/wait.py wait_until)" for rel, function, line, sleep in sleeps_before_asserts(root)
               if (rel, function) not in SLEEPS_KEPT])


def test_no_test_names_our_units_by_hand_or_sleeps_before_it_asserts():
    found = problems()
    assert found == [], "\n".join(found)


# A lab test as it should not be written: a unit and a container named by hand, and a sleep that
# assumes the restart is over. Its docstring may name the unit (it is read by people).
SAMPLE = f'''"""The engine comes back: `systemctl kill {P}tiny.service` and it serves again."""
import time


def test_the_engine_comes_back():
    sh(NODE1, "systemctl kill {P}tiny.service")
    time.sleep(30)   # it has restarted by now
    assert unit_prop(NODE1, "{P}tiny.service", "ActiveState") == "active"
    assert sh(NODE1, f"docker ps -q --filter name={P}{{DEPLOYMENT}}")
'''


def test_the_scans_fail_on_a_test_that_names_a_unit_by_hand(tmp_path):
    (tmp_path / "tests" / "lab").mkdir(parents=True)
    (tmp_path / "tests" / "lab" / "test_sample.py").write_text(SAMPLE)
    assert problems(tmp_path) == [
        f"tests/lab/test_sample.py:6: {P}tiny.service written by hand; fix: take it from the stack file and "
        "components/names.py (tests/lab/helpers.py)",
        f"tests/lab/test_sample.py:8: {P}tiny.service written by hand; fix: take it from the stack file and "
        "components/names.py (tests/lab/helpers.py)",
        f"tests/lab/test_sample.py:9: {P}{{DEPLOYMENT}} written by hand; fix: take it from the stack file and "
        "components/names.py (tests/lab/helpers.py)",
        "tests/lab/test_sample.py:7: time.sleep(30) in test_the_engine_comes_back, then an assert; fix: wait for "
        "the condition (tests/wait.py wait_until)"]


def test_the_scans_pass_a_poll_and_the_program_text_tests(tmp_path):
    """A poll's sleep ends its loop; tests/unit checks the program's own text with literal names."""
    (tmp_path / "tests" / "unit").mkdir(parents=True)
    (tmp_path / "tests" / "unit" / "test_text.py").write_text(f'assert "{P}tiny.service" in render()\n')
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "poll.py").write_text(
        "import time\nwhile not ready():\n    look()\n    time.sleep(1)\nassert ready()\n")
    assert problems(tmp_path) == []


def test_everything_kept_on_purpose_is_still_there():
    """An entry whose reason is gone goes too: the allow-lists stay the short list of live reasons."""
    assert set(SLEEPS_KEPT) <= {(rel, function) for rel, function, _, _ in sleeps_before_asserts()}
    written = {name for _, _, name in names_by_hand()}
    assert all(any(name.startswith(kept) for name in written) for kept in NOT_OURS), NOT_OURS
