"""promtool, from Debian's prometheus package (scripts/test-packages.txt), on generated rules: the
unit-test file is written next to the rule file in a temporary directory (promtool reads
rule_files relative to it). A missing promtool fails the test, naming the fix."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from tests.tools import require


def promtool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([require("promtool"), *args], capture_output=True, text=True, timeout=120)


def check_rules(path: Path) -> None:
    """promtool's syntax and lint checks, lint errors fatal."""
    result = promtool("check", "rules", "--lint-fatal", str(path))
    assert result.returncode == 0, result.stdout + result.stderr


def run_rule_tests(directory: Path, rules: str, tests: list[dict]) -> None:
    """`promtool test rules` on `rules` with the unit tests `tests` (its `tests:` list), evaluated
    every minute."""
    (directory / "rules.yml").write_text(rules)
    test_file = directory / "rules.test.yml"
    test_file.write_text(yaml.safe_dump({"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": tests},
                                        sort_keys=False, width=1000))
    result = promtool("test", "rules", str(test_file))
    assert result.returncode == 0, f"promtool test rules {test_file}:\n{result.stdout}{result.stderr}"


def rule(rules: str, group: str, name: str) -> dict:
    """The rule `name` (alert or record) of the group `group` of a generated rule file."""
    [found] = [r for g in yaml.safe_load(rules)["groups"] if g["name"] == group
               for r in g["rules"] if name in (r.get("alert"), r.get("record"))]
    return found
