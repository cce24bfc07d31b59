"""Golden renders: every text the program would run on a node, per stack — each remote
command's create/delete script, each SystemdUnit's unit file, each image's Dockerfile — collected
from the graph built under Pulumi mocks, so that a change to any of them shows in review as a
plain diff under tests/render/golden/<stack>/.

    .venv/bin/python -m tests.render.golden          # rewrite every stack's golden files
    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/render   # the same, through the test
"""

from __future__ import annotations

import shutil
import sys
from functools import lru_cache
from pathlib import Path

from components.resources.image import dockerfile
from components.facts.observation import probe_script
from components.steps.render import render
from tests.unit.mocked import STACKS, script_of, snapshot

GOLDEN = Path(__file__).resolve().parent / "golden"


def render_stack(stack: str) -> dict[str, str]:
    """{file name: text} of everything stack `stack` would run."""
    return dict(_rendered(stack)[0])


@lru_cache(maxsize=None)
def _rendered(stack: str):
    snap = snapshot(stack)
    files: dict[str, str] = {}

    def put(name: str, text: str) -> None:
        assert name not in files, f"{stack}: two renders named {name}"
        files[name] = text

    for r in snap.steps():
        for key in ("create", "delete"):
            script = script_of(r, key)
            if script:
                put(f"{r.name}.{key}.sh", script)
        assert not r.inputs.get("update"), f"{r.name}: an update runs its create script again"
    for u in snap.units:
        put(f"{u._name}.service", u.unit_text)
    for node, watch in snap.watches.items():
        put(f"observe-{node}.sh", probe_script(watch))
    for img in (i for i in snap.spec.images if i.runtime == "docker"):
        put(f"{img.name}.Dockerfile", dockerfile(img))
    placements = [(u.node.name, u.unit_name, f"{u._name}.service") for u in snap.units]
    return dict(sorted(files.items())), placements


def unit_placements(stack: str) -> list[tuple[str, str, str]]:
    """(node, real unit name, golden file name) of every unit of the stack."""
    return list(_rendered(stack)[1])


def read_golden(stack: str) -> dict[str, str]:
    folder = GOLDEN / stack
    return {p.name: p.read_text() for p in sorted(folder.iterdir())} if folder.is_dir() else {}


def write_golden(stack: str) -> None:
    folder = GOLDEN / stack
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for name, text in render_stack(stack).items():
        (folder / name).write_text(text)


if __name__ == "__main__":
    for stack in sys.argv[1:] or STACKS:
        write_golden(stack)
        print(f"wrote {GOLDEN / stack}")
