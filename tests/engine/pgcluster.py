"""A private PostgreSQL cluster for a test: Debian's `postgresql` server binaries
(/usr/lib/postgresql/<major>/bin, not on PATH), initdb'd as the `postgres` user in a temp dir,
listening on 127.0.0.1 only at an unused port, no Unix socket anyone else sees, removed after.
Password authentication (scram) with the password in a PGPASSFILE, as an operator would have it:
the URL the tests hand to Pulumi carries no secret."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from components.names import temp_prefix

SERVER_BINS = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))


def server_bin(name: str) -> str:
    if not SERVER_BINS:
        pytest.fail("PostgreSQL's server is not installed; fix: bash scripts/setup-host.sh "
                    "(installs scripts/host-packages.txt: postgresql)")
    return str(SERVER_BINS[-1].parent / name)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Cluster:
    root: Path
    port: int
    user: str = "pulumi"
    database: str = "pulumi"

    @property
    def passfile(self) -> Path:
        return self.root / "pgpass"

    def url(self, table: str | None = None) -> str:
        """The backend URL: no password (PGPASSFILE has it), TLS off on loopback."""
        query = "sslmode=disable" + (f"&table={table}" if table else "")
        return f"postgres://{self.user}@127.0.0.1:{self.port}/{self.database}?{query}"

    def env(self) -> dict[str, str]:
        return {"PGPASSFILE": str(self.passfile)}


def _as_postgres(*argv: str, **kw) -> subprocess.CompletedProcess:
    # runuser: util-linux, essential; the server refuses to run as root.
    return subprocess.run(["runuser", "-u", "postgres", "--", *argv], capture_output=True, text=True, **kw)


def start() -> Cluster:
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        pytest.fail("no `postgres` user; fix: bash scripts/setup-host.sh (installs postgresql)")
    root = Path(tempfile.mkdtemp(prefix=temp_prefix("pg")))
    os.chmod(root, 0o755)   # the postgres user reaches its data dir inside
    data, sock = root / "data", root / "sock"
    for d in (data, sock):
        d.mkdir(mode=0o700)
        shutil.chown(d, "postgres")
    cluster = Cluster(root, free_port())
    password = os.urandom(12).hex()
    pwfile = root / "pw"
    pwfile.write_text(password + "\n")
    shutil.chown(pwfile, "postgres")
    os.chmod(pwfile, 0o600)
    init = _as_postgres(server_bin("initdb"), "-D", str(data), "-U", cluster.user, "--pwfile", str(pwfile),
                        "--auth", "scram-sha-256", "--no-sync", "-E", "UTF8", timeout=120)
    pwfile.unlink()
    if init.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        pytest.fail(f"initdb failed: {init.stderr[-2000:]}")
    opts = f"-c listen_addresses=127.0.0.1 -c port={cluster.port} -c unix_socket_directories={sock} -c fsync=off"
    run = _as_postgres(server_bin("pg_ctl"), "-D", str(data), "-l", str(sock / "log"), "-o", opts, "-w",
                       "-t", "60", "start", timeout=90)
    if run.returncode != 0:
        log = (sock / "log").read_text() if (sock / "log").exists() else ""
        stop(cluster)
        pytest.fail(f"pg_ctl start failed: {run.stderr[-1000:]}\n{log[-2000:]}")
    cluster.passfile.write_text(f"127.0.0.1:{cluster.port}:*:{cluster.user}:{password}\n")
    os.chmod(cluster.passfile, 0o600)
    # The database the URL names (initdb makes only `postgres`).
    import psycopg
    with psycopg.connect(host="127.0.0.1", port=cluster.port, user=cluster.user, dbname="postgres",
                         passfile=str(cluster.passfile), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{cluster.database}"')
    return cluster


def stop(cluster: Cluster) -> None:
    data = cluster.root / "data"
    if (data / "postmaster.pid").exists():
        _as_postgres(server_bin("pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop", timeout=60)
        deadline = time.monotonic() + 10
        while (data / "postmaster.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
    shutil.rmtree(cluster.root, ignore_errors=True)
