"""One real Prometheus for the status page's tests (test_status_page.py, test_status_screenshot.py),
over thirty backfilled minutes of the lab stack (backfill.py) that end at the fixture's `end`."""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest

from tests.unit.monitoring.backfill import STEP_S, backfill
from tests.unit.monitoring.prometheus import serving


@dataclass(frozen=True)
class LabPrometheus:
    url: str
    end: int        # the last sample's time: the pages are rendered as of it


@pytest.fixture(scope="session")
def lab_prometheus(tmp_path_factory) -> LabPrometheus:
    directory = tmp_path_factory.mktemp("lab-prometheus")
    end = int(time.time()) // STEP_S * STEP_S
    with serving(backfill(directory, end), directory) as url:
        yield LabPrometheus(url, end)
