"""One owner for every model cache directory: two models entries that would own the same
directory on a node (same cache_dir and REPO--REVISION leaf, overlapping nodes) are refused at
config, naming both entries, the directory and the fix; the other paths removed on destroy (image
tags, venvs, env files, units) are owned by one entry already (unique names, generated names)."""

from __future__ import annotations

import copy

from tests.unit.config.stacks import P, both_paths_error, shipped_doc

LEAF = "/var/lib/blackwell-serving/models/blackwell-lab--tiny-llama--lab-v1"


def with_copy(**change) -> dict:
    doc = shipped_doc("lab")
    models = doc["config"][P + "models"]
    copied = {**copy.deepcopy(models[0]), "name": "tiny-copy", **change}
    models.append(copied)
    return doc


def test_two_entries_owning_one_cache_directory_are_refused(tmp_path):
    both_paths_error(tmp_path, with_copy(), P + "models[2]",
                     "models[0] (tiny) and models[2] (tiny-copy)", LEAF, "lab-1",
                     "keep one model entry")


def test_the_same_directory_written_differently_is_the_same_owner(tmp_path):
    both_paths_error(tmp_path, with_copy(cache_dir="/var/lib/blackwell-serving/models/", nodes=["lab-2"],
                                         fetch_node="lab-2"),
                     P + "models[2]", "models[0] (tiny) and models[2] (tiny-copy)", LEAF, "lab-2")


def test_the_same_repo_elsewhere_is_accepted(tmp_path):
    from components.config import load_stack_file
    from tests.unit.config.stacks import write_doc

    for change in ({"cache_dir": "/srv/models"}, {"revision": "lab-v2"}):
        spec = load_stack_file(write_doc(tmp_path, with_copy(**change)))
        assert [m.name for m in spec.models] == ["tiny", "tiny-gguf", "tiny-copy"]
