from __future__ import annotations

from pathlib import Path

import pytest

from components.config import load_stack_file

from . import fixtures

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session")
def lab_spec():
    return load_stack_file(DATA / "Pulumi.lab.yaml")


@pytest.fixture
def lab_items(lab_spec):
    """The todo items of the lab's first preview (everything to create)."""
    return fixtures.todo(fixtures.first_preview_events(), fixtures.plan(), lab_spec)
