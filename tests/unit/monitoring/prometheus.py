"""A real Prometheus (Debian's, scripts/test-packages.txt) over a given TSDB directory, on
127.0.0.1 at a free port, with no scrape target: it serves what was backfilled and fetches
nothing. Its systemd unit stays masked (setup-host.sh): this is a process of the test's own."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from tests.tools import require
from tests.wait import wait_until

READY_TIMEOUT_S = 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


@contextlib.contextmanager
def serving(tsdb: Path, workdir: Path) -> Iterator[str]:
    """Prometheus's base URL while it runs; stopped (TERM, then KILL) on the way out."""
    config = workdir / "prometheus.yml"
    config.write_text("scrape_configs: []\n")
    log = workdir / "prometheus.log"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with log.open("w") as out:
        proc = subprocess.Popen([require("prometheus"), f"--config.file={config}", f"--storage.tsdb.path={tsdb}",
                                 f"--web.listen-address=127.0.0.1:{port}"], stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: ready(url) or proc.poll() is not None, READY_TIMEOUT_S, f"prometheus ready at {url}",
                   seen=lambda: log.read_text(), every_s=0.2)
        assert proc.poll() is None, f"prometheus exited {proc.returncode}:\n{log.read_text()[-3000:]}"
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
