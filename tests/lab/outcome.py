"""Whether a lab test failed, for a fixture's teardown: tests/lab/conftest.py keeps the report of
each test's call on its item (CALL_REPORT); test_lab_e2e.py converges the lab again after a test
that broke it and failed. (Its own module, not the conftest: pytest imports a conftest under a
name of its own, so a key defined there and imported elsewhere would be two keys.)"""

from __future__ import annotations

import pytest

CALL_REPORT = pytest.StashKey[pytest.TestReport]()


def failed(item: pytest.Item) -> bool:
    report = item.stash.get(CALL_REPORT, None)
    return report is not None and report.failed
