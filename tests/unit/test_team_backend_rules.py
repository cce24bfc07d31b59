"""The team backend's rules that need no database: which Pulumi lock is a dead run's
(components/backend/locks.py), the lock keys of a stack, and a URL shown without its password."""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone

import pytest

from components.backend.guard import Holder, lock_key
from components.backend.locks import PulumiLock, dead_because, is_lock_of, parse_time
from components.backend.url import BackendError, check_passfile, conninfo, redact, table

T0 = datetime(2026, 12, 6, 2, 30, tzinfo=timezone.utc)


def lock(host: str, at: datetime, pid: int = 100) -> PulumiLock:
    return PulumiLock("k", pid, "alice", host, at)


def test_a_lock_on_this_machine_is_dead_only_when_its_pid_is():
    assert dead_because(lock("here", T0), None, "here", alive=lambda pid: True) is None
    assert "no longer runs" in dead_because(lock("here", T0), None, "here", alive=lambda pid: False)


def test_a_lock_elsewhere_is_dead_only_when_a_dead_guarded_run_on_that_host_took_it():
    previous = Holder("alice", "there", 7, T0)
    assert dead_because(lock("there", T0 + timedelta(seconds=3)), previous, "here") is not None
    assert dead_because(lock("there", T0 - timedelta(minutes=5)), previous, "here") is None   # older: not its run
    assert dead_because(lock("elsewhere", T0 + timedelta(seconds=3)), previous, "here") is None
    assert dead_because(lock("there", T0), None, "here") is None                           # no guarded run died


def test_lock_keys_of_a_stack():
    assert is_lock_of("pulumi/.pulumi/locks/organization/blackwell-serving/lab/u.json", "blackwell-serving", "lab")
    assert not is_lock_of("pulumi/.pulumi/locks/organization/blackwell-serving/lab2/u.json", "blackwell-serving", "lab")
    assert not is_lock_of("pulumi/.pulumi/stacks/blackwell-serving/lab.json", "blackwell-serving", "lab")
    assert lock_key("p", "a") != lock_key("p", "b") and -2**63 <= lock_key("p", "a") < 2**63


def test_go_times_parse():
    assert parse_time("2026-12-06T02:30:00.123456789Z") == T0.replace(microsecond=123456)
    assert parse_time("2026-12-06T03:30:00+01:00") == T0


def test_urls_and_passfiles(tmp_path):
    assert redact("postgres://u:secret@h:5432/db?sslmode=disable") == "postgres://u:****@h:5432/db?sslmode=disable"
    assert conninfo("postgres://u@h/db?table=st&sslmode=disable") == "postgresql://u@h/db?sslmode=disable"
    assert table("postgres://u@h/db?table=st") == "st" and table("postgres://u@h/db") == "pulumi_state"
    with pytest.raises(BackendError):
        table("postgres://u@h/db?table=x;drop")
    passfile = tmp_path / "pgpass"
    passfile.write_text("h:5432:db:u:pw\n")
    os.chmod(passfile, 0o644)
    with pytest.raises(BackendError, match="chmod 600"):
        check_passfile({"PGPASSFILE": str(passfile)})
    os.chmod(passfile, 0o600)
    check_passfile({"PGPASSFILE": str(passfile)})
