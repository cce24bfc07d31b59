"""Every config key has a description, and docs/stack-reference.md is the schema's current
reference (generated: `python -m components.config.reference`)."""

from __future__ import annotations

import typing

from pydantic import BaseModel

from components.config.reference import COMMAND, OUTPUT, render, sections
from components.config.schema import StackSpec


def models(model: type[BaseModel] = StackSpec, seen: set | None = None) -> set[type[BaseModel]]:
    seen = set() if seen is None else seen
    if model in seen:
        return seen
    seen.add(model)
    for field in model.model_fields.values():
        for inner in _models(field.annotation):
            models(inner, seen)
    return seen


def _models(annotation) -> list:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for a in typing.get_args(annotation) for m in _models(a)]


def test_every_config_key_has_a_description():
    missing = [f"{m.__name__}.{name}" for m in models() for name, field in m.model_fields.items()
               if not (field.description or "").strip()]
    assert not missing, f"keys without a description: {missing}"


def test_the_reference_names_every_key():
    text = render()
    for path, model in sections():
        assert f"## `{path}`" in text
        for name in model.model_fields:
            assert f"| `{name}` |" in text


def test_the_reference_page_is_up_to_date():
    assert OUTPUT.is_file(), f"{OUTPUT} is missing; regenerate it: {COMMAND}"
    assert OUTPUT.read_text() == render(), \
        f"docs/stack-reference.md does not match the schema; regenerate it: {COMMAND}"
