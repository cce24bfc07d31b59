"""One home for the platforms (components/platforms/, one module per kind): the schema's gpu.kind takes exactly its
kinds, and discovery names a GPU by the entry's nvidia-smi name."""

from __future__ import annotations

import typing

import pytest

from components.config.schema import GpuSpec
from components.platforms import PLATFORMS, kind_of_gpu_name


def test_the_schema_takes_exactly_the_platforms_kinds():
    assert typing.get_args(GpuSpec.model_fields["kind"].annotation) == tuple(PLATFORMS)


@pytest.mark.parametrize("name, kind", [("NVIDIA GB10", "gb10"),
                                        ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "rtx-pro-6000"),
                                        ("NVIDIA H100 80GB HBM3", None)])
def test_discovery_names_a_gpu_by_its_platform(name, kind):
    assert kind_of_gpu_name(name) == kind


def test_unified_memory_platforms_are_the_ones_whose_gpu_is_the_host_s():
    assert {k for k, p in PLATFORMS.items() if p.unified_memory} == {"gb10", "cpu"}
    assert {k for k, p in PLATFORMS.items() if p.reserves_claims} == {"gb10"}


def test_nothing_outside_platforms_compares_a_gpu_kind_by_name():
    """What a kind means is its entry's (has_gpu, unified_memory, twin_hca_ports, ...): a comparison
    with a kind's name elsewhere is a second home that a new platform would miss."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "components"
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.parent == root / "platforms":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare) and any(isinstance(c, ast.Constant) and c.value in PLATFORMS
                                                     for c in [node.left, *node.comparators]):
                found.append(f"{path.relative_to(root.parent)}:{node.lineno}: {ast.unparse(node)}")
    assert found == [], "\n".join(found)
