"""The status page of a stack: its figures read from Prometheus (status_data.py), rendered as one
self-contained HTML file (status_html.py), written atomically. `python -m components.monitoring
--status-page FILE` runs it; run it again (a timer, cron) to refresh the page."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from components.config.schema import StackSpec
from components.monitoring.status_data import DEFAULT_MINUTES, StackStatus, stack_status
from components.monitoring.status_html import page_html


def write_atomically(path: Path, text: str) -> None:
    """A reader (a browser, a web server beside Prometheus) sees the old page or the new, never
    half of one: written beside it, then renamed over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)        # mkstemp's 0600 would hide the page from a web server's user
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_status_page(path: Path, prometheus_url: str, stack: str, spec: StackSpec,
                      minutes: float = DEFAULT_MINUTES, at: float | None = None) -> StackStatus:
    status = stack_status(prometheus_url, stack, spec, minutes, at)
    write_atomically(path, page_html(status))
    return status
