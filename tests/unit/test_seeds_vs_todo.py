"""scripts/seeds_vs_todo.py: the seed items it reads from each of the seeds' three ways of
writing them, and its --check, which ignores only the order of rows (the engine's order of
independent steps varies between previews), not their text."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "seeds_vs_todo.py"
spec = importlib.util.spec_from_file_location("seeds_vs_todo", SCRIPT)
seeds_vs_todo = importlib.util.module_from_spec(spec)
spec.loader.exec_module(seeds_vs_todo)


def test_items_from_todowrite_json_numbered_lists_and_prose(tmp_path):
    json_seed = tmp_path / "003.txt"
    json_seed.write_text('[todowrite] {"todos":[\n  {"content":"Download M","priority":"high","status":"in_progress"},\n'
                         '  {"content":"Build SGLang","priority":"high","status":"pending"}\n]}\n')
    assert seeds_vs_todo.seed_items(json_seed) == ["Download M", "Build SGLang"]
    listed = tmp_path / "002.txt"
    listed.write_text("1. Stop GLM — marked completed\n2. Download X — marked in_progress\n"
                      "4. Copy Docker image to ... — truncated, but\n")
    assert seeds_vs_todo.seed_items(listed) == ["Stop GLM", "Download X", "Copy Docker image to ..."]
    prose = tmp_path / "000.txt"
    prose.write_text("The first todo item—stopping the GLM service—is marked in_progress. "
                     "The second todo item—determining the deployment approach—is marked pending.")
    assert seeds_vs_todo.seed_items(prose) == ["Stop GLM service (keep embeddings on secondary)",
                                               "Determine deployment approach"]


def test_every_seed_item_of_the_compared_stacks_has_a_comment():
    for (stack, item), comment in seeds_vs_todo.COMMENTS.items():
        assert stack in seeds_vs_todo.STACKS and comment
