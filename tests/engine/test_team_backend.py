"""The team backend on real parts: a private PostgreSQL on 127.0.0.1 (tests/engine/pgcluster.py),
the real CLI's DIY `postgres://` backend, and a tiny stack whose one step marks its start and end
in a file (tests/engine/teamstack.py). Two operators (two checkouts of the project) run `up` of ONE
stack at the same instant, seeded trials:

- plain `pulumi up` twice: what Pulumi's lock alone does (check, write, check again), recorded per
  trial; it must never let both change the stack;
- `python -m components.todo --up` twice: exactly one run changes the stack in every trial, the
  other stops naming who holds it and since when (components/backend/guard.py).

Then a killed run's locks (the guard is gone with its session; Pulumi's lock row stays and the next
guarded run clears it, and resumes), a live plain run's lock that is never taken, and the move of a
stack from the file backend (export, login, init, import: nothing to do after)."""

from __future__ import annotations

import getpass
import json
import os
import random
import signal
import socket
import subprocess
import time
from pathlib import Path

import psycopg
import pytest

from components.backend import guard as team
from components.backend.locks import pulumi_locks
from tests.engine import pgcluster, teamstack as t
from tests.engine.conftest import engine_available

pytestmark = pytest.mark.engine

SEED = 37
# Each trial is two real runs (~10 s on 2 cores); BWS_RACE_TRIALS=10 for a longer record.
TRIALS = int(os.environ.get("BWS_RACE_TRIALS", "3"))
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster():
    if not engine_available():
        pytest.fail("the Pulumi engine is not on PATH: run `bash scripts/install-engine.sh` and `source scripts/env.sh`")
    c = pgcluster.start()
    yield c
    pgcluster.stop(c)


def connect(cluster):
    return psycopg.connect(cluster.url(), passfile=str(cluster.passfile), autocommit=True)


def two_operators(tmp_path: Path, cluster, stack: str) -> tuple[Path, Path, Path]:
    """Checkouts a and b of one project, stack `stack` created by a on the shared backend; b has
    the stack file a new operator gets from the repository (the passphrase's salt)."""
    marks = tmp_path / "marks"
    a, b = t.make_project(tmp_path / "a", marks), t.make_project(tmp_path / "b", marks)
    init = t.pulumi(a, t.env(cluster.url(), "a", cluster.env()), "stack", "init", stack)
    assert init.returncode == 0, init.stderr
    (b / f"Pulumi.{stack}.yaml").write_text((a / f"Pulumi.{stack}.yaml").read_text())
    return a, b, marks


def race(argv_of, a: Path, b: Path, stack: str, cluster, marks: Path, rng: random.Random, trial: str) -> dict:
    """Both operators start `up` of trial `trial` at once (the second after a seeded 0-50 ms, the
    order seeded too); what happened."""
    for project in (a, b):
        t.set_trial(project, stack, trial)
    order = [("a", a), ("b", b)]
    rng.shuffle(order)
    delay = rng.uniform(0, 0.05)
    procs = {}
    for i, (name, project) in enumerate(order):
        if i:
            time.sleep(delay)
        procs[name] = subprocess.Popen(argv_of(project), cwd=REPO if "components.todo" in argv_of(project) else project,
                                       env=t.env(cluster.url(), name, cluster.env()),
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = {name: (p.communicate(timeout=120)[0], p.returncode, p.pid) for name, p in procs.items()}
    marked = t.marks_of(marks, trial)
    ran = sorted({who for what, who in marked if what == "start"})
    state = json.loads(t.pulumi(a, t.env(cluster.url(), "a", cluster.env()), "stack", "export", "--stack", stack).stdout)
    steps = [r for r in state["deployment"].get("resources", []) if r["type"] == "command:local:Command"]
    return {"trial": trial, "first": order[0][0], "delay_ms": round(delay * 1000), "ran": ran, "marks": marked,
            "exit": {n: o[1] for n, o in out.items()}, "pid": {n: o[2] for n, o in out.items()},
            "output": {n: o[0] for n, o in out.items()},
            "state_trial": [s.get("inputs", {}).get("triggers") for s in steps],
            "pending": state["deployment"].get("pending_operations") or []}


def overlapped(marked: list[tuple[str, str]]) -> bool:
    """Did a step start while another was running?"""
    running = 0
    for what, _ in marked:
        running += 1 if what == "start" else -1
        if running > 1:
            return True
    return False


def report(kind: str, outcomes: list[dict]) -> None:
    print(f"\n{kind}: seed {SEED}, {len(outcomes)} trials")
    for o in outcomes:
        refused = [n for n in o["exit"] if n not in o["ran"]]
        why = {n: next((ln.strip() for ln in o["output"][n].splitlines()
                        if "locked" in ln or "being changed" in ln or "error" in ln.lower()), "")[:160]
               for n in refused}
        print(f"  trial {o['trial']}: {o['first']} first, +{o['delay_ms']} ms; ran {o['ran'] or 'none'}; "
              f"exit {o['exit']}; {why}")


def test_plain_pulumi_lock_never_lets_two_runs_change_the_stack(tmp_path, cluster):
    """What Pulumi's lock alone does with two `pulumi up` at once, trial by trial: never both."""
    a, b, marks = two_operators(tmp_path, cluster, "plain")
    rng = random.Random(SEED)
    outcomes = [race(lambda p: t.up_argv("plain"), a, b, "plain", cluster, marks, rng, f"p{i}") for i in range(TRIALS)]
    report("plain pulumi up x2", outcomes)
    for o in outcomes:
        assert len(o["ran"]) <= 1 and not overlapped(o["marks"]), o
        for name in o["exit"]:
            if name not in o["ran"]:
                assert o["exit"][name] != 0 and "the stack is currently locked" in o["output"][name], o
        assert o["pending"] == [], o


def test_pulumis_check_write_check_can_refuse_both_and_the_guard_cannot(cluster):
    """The window in Pulumi's lock (pkg/backend/diy/lock.go: list the stack's lock rows, write
    one's own, list again, each its own statement) replayed step by step on the real table: two
    runs that both list before either writes both find two locks on the second list and both stop,
    so nothing is changed. The advisory lock, taken in the same order, is granted to exactly one."""
    table, lock_dir = "pulumi_state", f"pulumi/.pulumi/locks/organization/{t.PROJECT}/window"
    sessions = [connect(cluster), connect(cluster)]
    # Pulumi's table (pkg/backend/diy/postgres/schema.sql), as its first login makes it.
    sessions[0].execute(f"CREATE TABLE IF NOT EXISTS {table} (key TEXT PRIMARY KEY, data JSON NOT NULL, "
                        f"updated_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now())")
    try:
        def listed(conn):
            return [k for (k,) in conn.execute(f"SELECT key FROM {table} WHERE key LIKE %s", (lock_dir + "/%",))]

        first = [listed(c) for c in sessions]                       # both check: empty
        for i, conn in enumerate(sessions):                          # both write their lock
            conn.execute(f"INSERT INTO {table} (key, data) VALUES (%s, %s)",
                         (f"{lock_dir}/{i}.json", json.dumps({"data": ""})))
        second = [listed(c) for c in sessions]                      # both check again
        assert first == [[], []]
        assert [len(keys) for keys in second] == [2, 2]              # each sees the other's: both refuse
        key = team.lock_key(t.PROJECT, "window")
        granted = [c.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0] for c in sessions]
        assert granted == [True, False]
    finally:
        for conn in sessions:
            conn.execute(f"DELETE FROM {table} WHERE key LIKE %s", (lock_dir + "/%",))
            conn.close()


def test_the_refusal_names_the_session_that_holds_the_guard_not_a_row_left_before(cluster, monkeypatch):
    """Between the holder's lock and its row (found by the lab's two-machine race), and while the
    row still names a dead run before it, the refused run names the holding session as the server
    sees it; once the holder's row is written, the row (since: when the lock was taken)."""
    monkeypatch.setenv("PGPASSFILE", str(cluster.passfile))
    name, key = f"{t.PROJECT}/window", team.lock_key(t.PROJECT, "window")
    holder = team.connect(cluster.url())
    try:
        team._ensure_table(holder)
        holder.execute(f"INSERT INTO {team.TABLE} VALUES (%s, 'gone', 'elsewhere', 4242, now() - interval '1 hour')",
                       (name,))
        assert holder.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]
        user, host = getpass.getuser(), socket.gethostname()
        me = f"{user}@{host} (pid {os.getpid()})"
        with pytest.raises(team.StackBusy) as busy:
            team.acquire(cluster.url(), t.PROJECT, "window")
        assert f"stack window is being changed by {me} since " in str(busy.value) and "elsewhere" not in str(busy.value)
        holder.execute(f"UPDATE {team.TABLE} SET username = %s, hostname = %s, pid = %s, since = %s WHERE stack = %s",
                       (user, host, os.getpid(), "2026-12-01 00:00:00+00", name))
        with pytest.raises(team.StackBusy) as busy:
            team.acquire(cluster.url(), t.PROJECT, "window")
        assert f"being changed by {me} since 2026-12-01 00:00:00 UTC;" in str(busy.value), str(busy.value)
    finally:
        holder.execute(f"DELETE FROM {team.TABLE} WHERE stack = %s", (name,))
        holder.close()


def test_guarded_runs_exactly_one_changes_the_stack(tmp_path, cluster):
    """Through components.todo --up: in every trial exactly one run changes the stack; the other
    stops before any engine work, naming the holder (user@host, pid) and since when."""
    a, b, marks = two_operators(tmp_path, cluster, "guarded")
    rng = random.Random(SEED)
    outcomes = [race(lambda p: t.todo_up_argv("guarded", p), a, b, "guarded", cluster, marks, rng, f"g{i}")
                for i in range(TRIALS)]
    report("components.todo --up x2", outcomes)
    host = socket.gethostname()
    for o in outcomes:
        assert len(o["ran"]) == 1 and not overlapped(o["marks"]) and len(o["marks"]) == 2, o
        winner = o["ran"][0]
        loser = "b" if winner == "a" else "a"
        assert o["exit"] == {winner: 0, loser: 1} or o["exit"] == {loser: 1, winner: 0}, o
        said = o["output"][loser]
        assert f"stack guarded is being changed by" in said and f"@{host} (pid {o['pid'][winner]}) since " in said, said
        assert "this run changed nothing" in said and "Traceback" not in said, said
        assert o["state_trial"] == [[o["trial"]]], o


def test_a_killed_runs_locks_do_not_block_and_a_live_one_is_never_taken(tmp_path, cluster):
    a, b, marks = two_operators(tmp_path, cluster, "dead")
    t.make_project(tmp_path / "slow", marks, sleep=60)
    (a / "__main__.py").write_text((tmp_path / "slow" / "__main__.py").read_text())
    t.set_trial(a, "dead", "k1")
    run = subprocess.Popen(t.todo_up_argv("dead", a), cwd=REPO, env=t.env(cluster.url(), "a", cluster.env()),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not t.marks_of(marks, "k1"):
            time.sleep(0.2)
        assert t.marks_of(marks, "k1") == [("start", "a")]
        key = team.lock_key(t.PROJECT, "dead")
        with connect(cluster) as conn:
            assert not conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]   # held: live
            assert len(pulumi_locks(conn, cluster.url(), t.PROJECT, "dead")) == 1
            # The operator's machine goes away: every process of the run at once.
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
            killed = time.monotonic()
            while not conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
                assert time.monotonic() - killed < 10, "the dead run's guard outlived it"
                time.sleep(0.01)
            released = time.monotonic() - killed
            conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
            print(f"\nguard released {released * 1000:.0f} ms after the run was killed")
            left = pulumi_locks(conn, cluster.url(), t.PROJECT, "dead")
            assert len(left) == 1, left   # Pulumi's own lock has no lease: it stays
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    # b, another operator (same host here: the pid check says the lock's CLI is gone), runs next.
    t.set_trial(b, "dead", "k2")
    done = subprocess.run(t.todo_up_argv("dead", b), cwd=REPO, env=t.env(cluster.url(), "b", cluster.env()),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "cleared the lock of stack dead taken by" in done.stderr, done.stderr
    assert t.marks_of(marks, "k2") == [("start", "b"), ("end", "b")]
    with connect(cluster) as conn:
        assert pulumi_locks(conn, cluster.url(), t.PROJECT, "dead") == []
        assert conn.execute(f"SELECT count(*) FROM {team.TABLE}").fetchone()[0] == 0   # b let go cleanly

    # A live plain `pulumi up` (outside our path): the guarded run gets the guard but leaves that
    # lock alone, names it, and Pulumi's own check then stops it; the plain run finishes.
    # Its step holds until the guarded run has ended (never a fixed sleep: on a loaded machine the
    # guarded run's start could outlast it), at most 120 s.
    release = tmp_path / "release"
    t.make_project(tmp_path / "held", marks, hold=t.hold_until(str(release)))
    (b / "__main__.py").write_text((tmp_path / "held" / "__main__.py").read_text())
    t.set_trial(b, "dead", "k3")
    plain = subprocess.Popen(t.up_argv("dead"), cwd=b, env=t.env(cluster.url(), "b", cluster.env()),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not t.marks_of(marks, "k3"):
            time.sleep(0.2)
        t.set_trial(a, "dead", "k4")
        guarded = subprocess.run(t.todo_up_argv("dead", a), cwd=REPO, env=t.env(cluster.url(), "a", cluster.env()),
                                 capture_output=True, text=True, timeout=120)
        release.touch()
        assert guarded.returncode != 0, guarded.stdout[-2000:] + guarded.stderr[-2000:]
        assert "is locked by a `pulumi` run outside this tool" in guarded.stderr, guarded.stderr
        assert plain.wait(timeout=120) == 0, plain.stdout.read()[-3000:]
    finally:
        release.touch()
        if plain.poll() is None:
            plain.kill()
            plain.wait()
    assert t.marks_of(marks, "k3") == [("start", "b"), ("end", "b")] and t.marks_of(marks, "k4") == []


def test_moving_a_stack_from_the_file_backend(tmp_path, cluster):
    """docs/team-backend.md's sequence: export from the file backend, log in to PostgreSQL, init
    the stack there with the same passphrase, import; the preview then has nothing to do."""
    marks = tmp_path / "marks"
    project = t.make_project(tmp_path / "p", marks, sleep=0)
    (tmp_path / "files").mkdir()
    files = t.env(f"file://{tmp_path / 'files'}", "a")
    team_env = t.env(cluster.url(), "a", cluster.env())
    assert t.pulumi(project, files, "stack", "init", "moved").returncode == 0
    t.set_trial(project, "moved", "m1")
    up = t.pulumi(project, files, "up", "--yes", "--stack", "moved")
    assert up.returncode == 0, up.stdout[-2000:] + up.stderr[-2000:]
    exported = tmp_path / "moved.json"
    steps = [("stack", "export", "--stack", "moved", "--file", str(exported))]
    done = t.pulumi(project, files, *steps[0])
    assert done.returncode == 0, done.stderr
    for args in (("stack", "init", "moved"), ("stack", "import", "--stack", "moved", "--file", str(exported))):
        done = t.pulumi(project, team_env, *args)
        assert done.returncode == 0, done.stderr
    preview = t.pulumi(project, team_env, "preview", "--stack", "moved", "--expect-no-changes", "--json")
    assert preview.returncode == 0, preview.stdout[-3000:] + preview.stderr[-2000:]
    ops = {s["op"] for s in json.loads(preview.stdout).get("steps", [])}
    assert ops <= {"same"}, ops
    assert t.marks_of(marks, "m1") == [("start", "a"), ("end", "a")]
