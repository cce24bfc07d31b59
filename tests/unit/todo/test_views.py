"""Todo items → text, Markdown, JSON (validated against the schema), Mermaid and dot."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from components.todo.views import FORMATS, render

SCHEMA = json.loads((Path(__file__).resolve().parents[3] / "components" / "todo" / "todo.schema.json").read_text())


def validate(doc) -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)


def test_json_is_exactly_the_seeds_shape_and_valid(lab_items):
    doc = json.loads(render(lab_items, "json"))
    validate(doc)
    assert all(list(entry) == ["content", "priority", "status"] for entry in doc)
    assert doc[0] == {"content": "Preflight: the fabric link of lab-1 is up (address, MTU, RDMA ports, peers)",
                      "priority": "high", "status": "pending"}
    assert doc[-1] == {"content": "Check that embeddings.service stays up on lab-2 (never touched)",
                       "priority": "normal", "status": "pending"}
    assert [d["content"] for d in doc] == [i.content for i in lab_items]


def test_json_after_statuses_moved_is_still_valid(lab_items):
    for item, status in zip(lab_items, ["completed", "in_progress", "failed"]):
        item.status = status
    validate(json.loads(render(lab_items, "json")))


@pytest.mark.parametrize("bad", [
    [{"content": "x", "priority": "high"}],                                     # missing status
    [{"content": "x", "priority": "urgent", "status": "pending"}],              # unknown priority
    [{"content": "x", "priority": "high", "status": "done"}],                   # unknown status
    [{"content": "", "priority": "high", "status": "pending"}],                 # empty sentence
    [{"content": "x", "priority": "high", "status": "pending", "node": "n"}],  # extra key
])
def test_the_schema_rejects_what_is_not_the_seeds_shape(bad):
    with pytest.raises(jsonschema.ValidationError):
        validate(bad)


def test_json_full_carries_the_extra_keys_and_is_not_the_seeds_shape(lab_items):
    doc = json.loads(render(lab_items, "json-full"))
    assert doc[5]["id"] == "vllm-lab-sync-lab-2"
    assert doc[5]["depends_on"] == ["vllm-lab-build"]
    assert (doc[5]["number"], doc[5]["node"], doc[5]["phase"], doc[5]["reason"]) == (6, "lab-1", "image", "create")
    assert set(doc[0]) == {"number", "id", "content", "priority", "status", "node", "phase", "reason", "depends_on",
                           "urn"}
    with pytest.raises(jsonschema.ValidationError):
        validate(doc)


def test_text_groups_by_node_and_keeps_global_numbers(lab_items):
    out = render(lab_items, "text", "lab")
    lines = out.splitlines()
    assert lines[0].startswith("Todo for stack lab: 19 items, 17 high")
    lab1, lab2 = lines.index("lab-1"), lines.index("lab-2")
    assert lab1 < lab2
    under_lab2 = [ln for ln in lines[lab2 + 1:] if ln.strip()]
    assert [re.match(r"\s*(\d+)\.", ln).group(1) for ln in under_lab2] == ["3", "4", "13", "19"]
    assert "no GPU and none is expected" in under_lab2[1]
    assert "Start Ray worker on lab-2" in under_lab2[2]
    assert "   verify  Check that embeddings.service" in under_lab2[3]  # normal: no '!'
    assert "! retire  Stop and disable glm.service on lab-1" in out


def test_text_of_an_empty_list_says_so():
    assert "nothing to do" in render([], "text", "lab")
    assert "Nothing to do" in render([], "markdown", "lab")
    assert json.loads(render([], "json")) == []


def test_markdown_is_a_checklist_per_node(lab_items):
    lab_items[0].status = "completed"
    lab_items[1].status = "in_progress"
    lab_items[4].status = "failed"
    out = render(lab_items, "markdown", "lab")
    lines = out.splitlines()
    lab1, lab2 = lines.index("### lab-1"), lines.index("### lab-2")
    assert lab1 < lab2
    checks = {int(re.match(r"- \[[ x]\] (\d+)\.", ln).group(1)): ln for ln in lines if ln.startswith("- [")}
    assert sorted(checks) == list(range(1, len(lab_items) + 1))
    # Grouped by node, numbered in the global order: lab-2's fabric check (3) is under lab-2,
    # lab-1's GPU and memory check (2) and the image build (5) under lab-1.
    assert lines.index(checks[3]) > lab2 and lines.index(checks[2]) < lab2 and lines.index(checks[5]) < lab2
    assert checks[1] == ("- [x] 1. Preflight: the fabric link of lab-1 is up (address, MTU, RDMA ports, peers) "
                         "**(high)** · preflight · create")
    assert checks[2].endswith(" — *in progress*") and checks[2].startswith("- [ ] 2. ")
    assert checks[5].endswith(" — **failed**") and checks[5].startswith("- [ ] 5. Build image vllm-lab")
    assert checks[10] == "- [ ] 10. Stop and disable glm.service on lab-1 **(high)** · retire · create"
    assert checks[19] == "- [ ] 19. Check that embeddings.service stays up on lab-2 (never touched) · verify · create"
    assert r"(transformers>=5)" in out


def test_mermaid_has_one_edge_per_dependency(lab_items):
    out = render(lab_items, "mermaid", "lab")
    assert out.splitlines()[1] == "graph TD"
    number = {i.id: n for n, i in enumerate(lab_items, 1)}
    edges = set(re.findall(r"^\s+i(\d+) --> i(\d+)$", out, re.M))
    expected = {(str(number[d]), str(number[i.id])) for i in lab_items for d in i.depends_on}
    assert edges == expected
    assert ("15", "16") in edges  # the engine unit before the health gate
    assert ("7", "8") in edges  # the upload from this machine before the fetch on lab-1
    assert '["5. Build image vllm-lab on lab-1 (transformers#gt;=5)"]' in out
    assert out.count("subgraph") == 2


def test_dot_has_the_same_edges_and_a_cluster_per_node(lab_items):
    out = render(lab_items, "dot", "lab")
    mermaid = render(lab_items, "mermaid", "lab")
    assert set(re.findall(r"i(\d+) -> i(\d+);", out)) == set(re.findall(r"i(\d+) --> i(\d+)", mermaid))
    assert out.count("subgraph cluster_") == 2
    assert out.startswith('digraph "todo lab" {')


def test_every_format_renders(lab_items):
    for fmt in FORMATS:
        assert render(lab_items, fmt, "lab").endswith("\n")
    with pytest.raises(ValueError):
        render(lab_items, "yaml")


def test_json_is_json_full_in_the_seeds_shape(lab_items):
    """The seeds' shape is the full items' projection onto the schema's keys (the lab tests read
    json-full once and check that projection against the schema)."""
    keys = ("content", "priority", "status")
    full = json.loads(render(lab_items, "json-full"))
    assert json.loads(render(lab_items, "json")) == [{k: item[k] for k in keys} for item in full]
