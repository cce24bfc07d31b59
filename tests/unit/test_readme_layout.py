"""The README's layout block is the tree: every entry it names exists, every top-level entry of
the repository is named, and the folders it lists inside components/, templates/ and tests/ are
exactly their subfolders."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def layout() -> dict[str, str]:
    """entry -> its description, from the README's `## Layout` code block."""
    text = (REPO / "README.md").read_text()
    block = re.search(r"^## Layout\n+```\n(.*?)\n```", text, re.S | re.M)
    assert block, "README.md has no ## Layout code block"
    entries = {}
    for line in block.group(1).splitlines():
        names, _, description = re.split(r"(\s{2,})", line.strip(), maxsplit=1)
        for name in names.split(", "):
            entries[name.rstrip("/")] = description
    return entries


def tracked_top_level() -> set[str]:
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return {f.split("/", 1)[0] for f in files.splitlines() if not f.startswith(".")} - {"README.md", "pyproject.toml"}


def subfolders(folder: str) -> set[str]:
    return {p.name for p in (REPO / folder).iterdir()
            if p.is_dir() and not p.name.startswith((".", "__")) and p.name not in {"golden", "data"}
            and (folder != "tests" or any(p.glob("*.py")))}


def test_every_entry_exists_and_every_top_level_entry_is_named():
    entries = layout()
    assert not [e for e in entries if not (REPO / e).exists()]
    assert tracked_top_level() <= set(entries), tracked_top_level() - set(entries)


def test_the_folders_named_inside_are_the_subfolders():
    entries = layout()
    for folder in ("components", "templates", "tests"):
        named = set(re.findall(r"([\w-]+)/", entries[folder]))
        assert named == subfolders(folder), (folder, named, subfolders(folder))
