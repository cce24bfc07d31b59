"""The host commands a test runs: found on PATH, or the test fails naming the fix. A missing tool
never skips a check (scripts/setup-host.sh --tests installs scripts/host-packages.txt and
scripts/test-packages.txt)."""

from __future__ import annotations

import shutil

import pytest


def require(command: str) -> str:
    """The path of `command`, or a failure that says how to install it."""
    path = shutil.which(command)
    if path is None:
        pytest.fail(f"{command} is not installed; fix: bash scripts/setup-host.sh --tests "
                    f"(installs scripts/host-packages.txt and scripts/test-packages.txt)")
    return path
