"""Two operators' machines, one stack, the lab's PostgreSQL (docs/team-backend.md, issue 37).

Two containers on the lab's management network are two operators' machines; the stack's state is
in the lab's PostgreSQL (tests/lab/postgres.sh, 198.18.0.1:5432, a database of this module's own);
the stack is tiny: one step on the pair's first node over SSH (tests/engine/teamstack.py), which
writes `start <operator's address> <trial> <time>` to a file on the node, sleeps a second and writes
`end …`. Each machine runs `python -m components.todo --stack S --up` (the guarded run) of that
stack at the same instant, round after round (seeded: which starts first, 0-50 ms apart; a bounded
count and time). In every round exactly one run changes the node, the other stops at once naming
who holds the stack (user@host, pid) and since when; the state is whole after each round; and the
node's own record (one clock) shows no two steps at once and one step per round, by the winner.
Then the dead run's lock across machines: a run killed on one machine (its processes, or the whole
container removed) or a machine cut off from the network does not block the other, which clears
that run's Pulumi lock and goes on, while a live run on the other machine is never taken.

What the two machines share, and why that does not weaken the claim: they are built from nothing
(the lab's debootstrap minbase) but get this machine's software read-only at the same paths, so
nothing is installed or built per test: /usr (binaries and libraries), the Python the project's
.venv was made from, .venv, .engine (the pinned Pulumi CLI, language host and command provider),
this checkout, and the lab's state directory (the operator's SSH key, the pinned host keys and
the PostgreSQL password file, as every operator of a team holds their own copy). Two operators run
the same pinned software from the same repository anyway. What the claim is about is not shared:
each container has its own hostname and address on the management network (the node sees two
machines), its own process table (a pid of one is nothing to the other: only the backend can tell
them apart), its own writable files (its copy of the project, its Pulumi home, /tmp), and its own
sessions with PostgreSQL over the network. Nothing of the backend runs in them: the guard and the
lock are the lab's PostgreSQL's."""

from __future__ import annotations

import json
import os
import random
import re
import shlex
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path

import psycopg
import pytest

from components.backend import guard as team
from components.backend.locks import pulumi_locks
from components.names import temp_prefix
from tests.engine import teamstack as t
from tests.lab import topology as lab
from tests.lab.helpers import REPO, docker, minbase_image, require_lab, sh
from tests.wait import wait_until

pytestmark = pytest.mark.lab
LAB_STATE = "clean"  # tests/lab/conftest.py: a stack of its own on this run's pair

SEED = int(os.environ.get("BWS_LAB_RACE_SEED", "37"))
ROUNDS = int(os.environ.get("BWS_LAB_RACE_ROUNDS", "12"))           # at most this many rounds
BUDGET_S = float(os.environ.get("BWS_LAB_RACE_BUDGET_S", "150"))    # no new round after this
MIN_ROUNDS = 3                                                      # fewer in the budget: a failure
STACK = "team"
PROJECT_DIR = "/root/project"     # each machine's own checkout of the tiny project (writable, its own)
PULUMI_HOME = "/root/.pulumi"     # each machine's own Pulumi home; its plugins are .engine's (read-only)


def shared_paths() -> list[Path]:
    """What the machines get read-only, each at its own path (the docstring says why)."""
    engine, venv = (REPO / ".engine").resolve(), (REPO / ".venv").resolve()
    if not (engine / "bin" / "pulumi").exists():
        pytest.fail(f"no Pulumi CLI in {engine}/bin; fix: bash scripts/install-engine.sh")
    home = next(line.split("=", 1)[1].strip() for line in (venv / "pyvenv.cfg").read_text().splitlines()
                if line.startswith("home"))
    python_root = Path(home).parent if not home.startswith("/usr/") else Path("/usr")
    paths = sorted({Path("/usr"), python_root, venv, engine, REPO, lab.STATE_DIR.resolve()})
    return [p for p in paths if not any(p != q and p.is_relative_to(q) for q in paths)]


class Machine:
    """One operator's machine: a container on the management network."""

    def __init__(self, letter: str, project: Path):
        self.name = f"{lab.NODE_PREFIX}operator-{letter}"   # also its hostname
        self.project = project                                # the host's view of its checkout

    def start(self) -> None:
        docker("rm", "-f", self.name, check=False)
        mounts = [a for p in shared_paths() for a in ("-v", f"{p}:{p}:ro")]
        docker("run", "-d", "--name", self.name, "--hostname", self.name, "--network", lab.MGMT_NET,
               *mounts, "-v", f"{self.project}:{PROJECT_DIR}", minbase_image(), "sleep", "infinity")
        plugins = (REPO / ".engine").resolve() / "home" / "plugins"
        self.sh(f"mkdir -p {PULUMI_HOME} && ln -sfn {shlex.quote(str(plugins))} {PULUMI_HOME}/plugins")

    def remove(self) -> None:
        docker("rm", "-f", self.name, check=False)

    @property
    def address(self) -> str:
        return docker("inspect", "-f", f"{{{{(index .NetworkSettings.Networks \"{lab.MGMT_NET}\").IPAddress}}}}",
                      self.name).stdout.strip()

    def env(self, url: str) -> dict[str, str]:
        engine, venv = (REPO / ".engine").resolve(), (REPO / ".venv").resolve()
        return {"PATH": f"{engine}/bin:{venv}/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LANG": "C.UTF-8",
                "PULUMI_HOME": PULUMI_HOME, "PULUMI_BACKEND_URL": url, "PULUMI_CONFIG_PASSPHRASE": t.PASSPHRASE,
                "PULUMI_SKIP_UPDATE_CHECK": "true", "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
                "PULUMI_IGNORE_AMBIENT_PLUGINS": "true", "PGPASSFILE": str(lab.POSTGRES_PASSFILE.resolve()),
                "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}

    def argv(self, command: list[str], url: str = "", cwd: str = PROJECT_DIR) -> list[str]:
        env = [a for k, v in self.env(url).items() for a in ("-e", f"{k}={v}")]
        return ["docker", "exec", *env, "-w", cwd, self.name, *command]

    def sh(self, script: str, url: str = "", timeout: int = 300) -> subprocess.CompletedProcess:
        return subprocess.run(self.argv(["bash", "-c", script], url), capture_output=True, text=True, timeout=timeout)

    def pulumi(self, url: str, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
        return subprocess.run(self.argv(["pulumi", *args, "--non-interactive"], url), capture_output=True, text=True,
                              timeout=timeout)

    def guarded_up_at(self, url: str, stack: str, instant: float) -> subprocess.Popen:
        """`python -m components.todo --stack S --up` started in the machine at `instant` (its own
        clock, the host's kernel's: both machines wait for the same moment); it prints its pid first."""
        wait_then_run = ("import os, sys, time; time.sleep(max(0.0, float(sys.argv[1]) - time.time())); "
                         "os.execvp(sys.argv[2], sys.argv[2:])")
        run = ["python", "-c", wait_then_run, repr(instant), "python", "-m", "components.todo", "--stack", stack,
               "--up", "--work-dir", PROJECT_DIR]
        script = f"echo pid=$$; exec {shlex.join(run)}"
        return subprocess.Popen(self.argv(["bash", "-c", script], url, cwd=str(REPO)), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)


@pytest.fixture(scope="module")
def backend():
    """A database of this module's own on the lab's PostgreSQL: (its backend URL, an open session)."""
    try:
        admin = psycopg.connect(lab.postgres_url().replace("postgres://", "postgresql://"),
                                passfile=str(lab.POSTGRES_PASSFILE), autocommit=True, connect_timeout=10)
    except (psycopg.OperationalError, OSError) as err:
        pytest.fail(f"the lab's PostgreSQL does not answer ({str(err).strip()[:300]}); fix: tests/lab/lab up "
                    f"(tests/lab/postgres.sh)")
    database = f"operators_{os.urandom(4).hex()}"
    admin.execute(f'CREATE DATABASE "{database}"')
    url = lab.postgres_url(database)
    conn = psycopg.connect(url.replace("postgres://", "postgresql://"), passfile=str(lab.POSTGRES_PASSFILE),
                           autocommit=True)
    try:
        yield url, conn
    finally:
        conn.close()
        admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        admin.close()


@pytest.fixture
def team_stack(backend, tmp_path):
    """The two machines, each with its checkout of the tiny project whose step runs on the pair's
    first node, a stack of this test's own created by the first on the shared backend (the second
    gets the stack file from the repository, salt included); the node's marks file. Removed after
    (the stack goes with the module's database)."""
    node = lab.nodes(2)[0]
    require_lab(node)
    url, conn = backend
    stack = f"{STACK}-{os.urandom(3).hex()}"
    workdir = f"/var/tmp/{temp_prefix('team')}{os.urandom(4).hex()}"
    sh(node, f"mkdir -p {shlex.quote(workdir)}")
    where = t.Node(node.mgmt_ip, lab.SSH_USER, node.host_public_key, str(lab.SSH_KEY.resolve()))
    marks = f"{workdir}/marks"
    machines = [Machine(letter, t.make_project(tmp_path / letter, Path(marks), sleep=1, node=where))
                for letter in "ab"]
    try:
        for m in machines:
            m.start()
        init = machines[0].pulumi(url, "stack", "init", stack)
        assert init.returncode == 0, init.stdout + init.stderr
        stack_file = f"Pulumi.{stack}.yaml"
        (machines[1].project / stack_file).write_text((machines[0].project / stack_file).read_text())
        yield {"url": url, "conn": conn, "stack": stack, "node": node, "machines": machines, "marks": marks,
               "release": f"{workdir}/release", "where": where, "tmp": tmp_path}
    finally:
        for m in machines:
            m.remove()
        sh(node, f"rm -rf {shlex.quote(workdir)}", check=False)


def node_marks(node: lab.Node, marks: str) -> list[tuple[str, str, str, float]]:
    return t.parse_marks(sh(node, f"cat {shlex.quote(marks)} 2>/dev/null || true"))


def state_of(machine: Machine, url: str, stack: str) -> dict:
    exported = machine.pulumi(url, "stack", "export", "--stack", stack)
    assert exported.returncode == 0, exported.stderr[-2000:]
    return json.loads(exported.stdout)["deployment"]


def steps_in(deployment: dict) -> list[dict]:
    return [r for r in deployment.get("resources") or [] if r["type"] == "command:remote:Command"]


def overlaps(marked: list[tuple[str, str, str, float]]) -> list[str]:
    """Every start of a step while another step was running, from the node's own marks (by time)."""
    events = sorted((when, what, who, trial) for what, who, trial, when in marked)
    running, found = [], []
    for when, what, who, trial in events:
        if what == "start":
            if running:
                found.append(f"{who} {trial} started at {when:.3f} while {running} ran")
            running.append((who, trial))
        elif (who, trial) in running:
            running.remove((who, trial))
    return found


SINCE = re.compile(r"since (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC")


def test_two_machines_at_the_same_instant_exactly_one_changes_the_node(team_stack):
    url, conn, node, stack = team_stack["url"], team_stack["conn"], team_stack["node"], team_stack["stack"]
    a, b = team_stack["machines"]
    address = {m.name: m.address for m in (a, b)}
    rng = random.Random(SEED)
    rounds, began = [], time.monotonic()
    for i in range(ROUNDS):
        if time.monotonic() - began > BUDGET_S:
            break
        trial = f"r{i}"
        for m in (a, b):
            t.set_trial(m.project, stack, trial)
        order = [a, b]
        rng.shuffle(order)
        delay = rng.uniform(0, 0.05)
        instant = time.time() + 2.0   # both docker execs are up by then
        wall = datetime.now(timezone.utc).replace(microsecond=0)
        runs = {m.name: m.guarded_up_at(url, stack, instant + (delay if k else 0.0)) for k, m in enumerate(order)}
        said = {name: p.communicate(timeout=300)[0] for name, p in runs.items()}
        exits = {name: p.returncode for name, p in runs.items()}
        pids = {name: int(re.search(r"pid=(\d+)", out).group(1)) for name, out in said.items()}
        mine = [m for m in node_marks(node, team_stack["marks"]) if m[2] == trial]
        ran = sorted({who for what, who, _, _ in mine if what == "start"})
        deployment = state_of(a, url, stack)
        rounds.append({"trial": trial, "first": order[0].name, "delay_ms": round(delay * 1000), "exit": exits,
                       "ran": ran, "marks": mine})
        # Exactly one machine's step ran on the node, whole: started and ended, by that machine.
        assert len(ran) == 1 and [w for w, _, _, _ in mine] == ["start", "end"], rounds[-1]
        [winner] = [m for m in (a, b) if address[m.name] == ran[0]]
        loser = b if winner is a else a
        assert exits == {winner.name: 0, loser.name: 1}, (rounds[-1], said)
        # The other stopped before any engine work, with one message naming the holder and since when.
        refused = [ln for ln in said[loser.name].splitlines() if "is being changed by" in ln]
        assert len(refused) == 1 and "Traceback" not in said[loser.name], said[loser.name]
        assert f"stack {stack} is being changed by root@{winner.name} (pid {pids[winner.name]}) since " in refused[0]
        assert "this run changed nothing" in refused[0], refused[0]
        since = datetime.strptime(SINCE.search(refused[0]).group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)
        assert wall <= since <= datetime.now(timezone.utc), (wall, refused[0])
        # The state is whole: one step, at this trial, nothing pending, no lock left, no guard row.
        assert [s["inputs"]["triggers"] for s in steps_in(deployment)] == [[trial]], deployment
        assert not deployment.get("pending_operations"), deployment["pending_operations"]
        assert pulumi_locks(conn, url, t.PROJECT, stack) == []
        assert conn.execute(f"SELECT count(*) FROM {team.TABLE}").fetchone()[0] == 0
    print(f"\ntwo machines, guarded `up` at the same instant: seed {SEED}, {len(rounds)} rounds in "
          f"{time.monotonic() - began:.0f} s")
    for r in rounds:
        print(f"  {r['trial']}: {r['first']} first, +{r['delay_ms']} ms; the node ran {r['ran'][0]}; exit {r['exit']}")
    assert len(rounds) >= MIN_ROUNDS, f"only {len(rounds)} rounds in {BUDGET_S} s"
    # The node's whole record: no step ever started while another ran, one step per round.
    every = node_marks(node, team_stack["marks"])
    assert overlaps(every) == [], every
    assert sum(1 for what, *_ in every if what == "start") == len(rounds), every
    # and the backend's: one successful update per round, nothing else.
    history = a.pulumi(url, "stack", "history", "--stack", stack, "--json", "--page-size", str(10 * ROUNDS))
    assert history.returncode == 0, history.stderr
    updates = json.loads(history.stdout)
    assert [(u["kind"], u["result"]) for u in updates] == [("update", "succeeded")] * len(rounds), updates


def held(team_stack) -> str:
    """The tiny program whose step holds on the node until the release file is there."""
    project = t.make_project(team_stack["tmp"] / f"held-{os.urandom(3).hex()}", Path(team_stack["marks"]),
                             node=team_stack["where"], hold=t.hold_until(team_stack["release"]))
    return (project / "__main__.py").read_text()


def guard_free(conn, stack: str) -> bool:
    """Whether nobody holds the stack's guard (taken and let go at once when free)."""
    key = team.lock_key(t.PROJECT, stack)
    if not conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
        return False
    conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
    return True


@pytest.mark.parametrize("death", ["processes", "container", "network"])
def test_a_dead_machines_run_does_not_block_the_other_and_a_live_one_is_never_taken(team_stack, death):
    """Machine a's run holds the stack (its step waits on the node); machine b is refused while it
    lives, its locks untouched. Then a dies: every process of it killed at once, or the whole
    container removed. Its guard goes with its session; its Pulumi lock row stays (no lease) and b,
    another host, cannot ask a's pid: b's guarded run clears it because it was taken on the host of
    the last guarded run that died, after that run began (components/backend/locks.py), then
    resumes the step a left pending and runs its own. The third death: a is cut off from the
    network with its processes alive (a machine that vanished): its session, and with it the guard,
    ends when the server's keepalives give up on it."""
    url, conn, node, stack = team_stack["url"], team_stack["conn"], team_stack["node"], team_stack["stack"]
    a, b = team_stack["machines"]
    program = held(team_stack)
    for m in (a, b):
        (m.project / "__main__.py").write_text(program)
        t.set_trial(m.project, stack, "d1")
    run = a.guarded_up_at(url, stack, time.time())
    try:
        wait_until(lambda: [m[:3] for m in node_marks(node, team_stack["marks"])] == [("start", a.address, "d1")],
                   180, "machine a's step started on the node", seen=lambda: node_marks(node, team_stack["marks"]))
        [lock] = pulumi_locks(conn, url, t.PROJECT, stack)
        assert lock.host == a.name, lock
        holder = conn.execute(f"SELECT hostname, pid FROM {team.TABLE} WHERE stack = %s",
                              (f"{t.PROJECT}/{stack}",)).fetchall()
        assert [h for h, _ in holder] == [a.name], holder
        # A live run on another machine is never taken: b stops, naming it; a's locks stay as they were.
        t.set_trial(b.project, stack, "d2")
        refused = b.guarded_up_at(url, stack, time.time())
        said = refused.communicate(timeout=300)[0]
        assert refused.returncode == 1, said
        assert f"stack {stack} is being changed by root@{a.name} (pid {holder[0][1]}) since " in said, said
        assert pulumi_locks(conn, url, t.PROJECT, stack) == [lock] and not guard_free(conn, stack)
        assert [m[:3] for m in node_marks(node, team_stack["marks"])] == [("start", a.address, "d1")]
        # Machine a dies, or vanishes from the network with its processes alive (then the server's
        # keepalives end its session: guard.KEEPALIVE, about 25 s).
        died = time.monotonic()
        if death == "processes":
            docker("exec", a.name, "kill", "-KILL", "-1", check=False)
        elif death == "container":
            a.remove()
        else:
            docker("network", "disconnect", "--force", lab.MGMT_NET, a.name)
        wait_until(lambda: guard_free(conn, stack), 90, "the dead run's guard released", every_s=0.05)
        print(f"\nmachine a's {death} gone: its guard was free {time.monotonic() - died:.2f} s after")
        a.remove()   # for good: a machine that comes back must not find its run alive
        run.communicate(timeout=120)
        assert pulumi_locks(conn, url, t.PROJECT, stack) == [lock]   # Pulumi's own lock has no lease
    finally:
        if run.poll() is None:
            run.kill()
        sh(node, f"touch {shlex.quote(team_stack['release'])}")
    # The step a left on the node ends once released (its SSH session died with a, not its shell).
    release = team_stack["release"]
    itself_not = f"{os.path.dirname(release)}/[{os.path.basename(release)[0]}]{os.path.basename(release)[1:]}"
    wait_until(lambda: not sh(node, f"pgrep -f {shlex.quote(itself_not)} || true"), 60,
               "machine a's orphaned step ended on the node")
    done = b.guarded_up_at(url, stack, time.time())
    said = done.communicate(timeout=300)[0]
    assert done.returncode == 0, said[-4000:]
    assert f"note: cleared the lock of stack {stack} taken by root@{a.name} (pid {lock.pid})" in said, said[-4000:]
    assert "its session with the backend is gone" in said, said[-4000:]
    d2 = [m[:3] for m in node_marks(node, team_stack["marks"]) if m[2] == "d2"]
    assert d2 == [("start", b.address, "d2"), ("end", b.address, "d2")], node_marks(node, team_stack["marks"])
    deployment = state_of(b, url, stack)
    assert [s["inputs"]["triggers"] for s in steps_in(deployment)] == [["d2"]], deployment
    assert not deployment.get("pending_operations"), deployment["pending_operations"]
    assert pulumi_locks(conn, url, t.PROJECT, stack) == []
    assert conn.execute(f"SELECT count(*) FROM {team.TABLE}").fetchone()[0] == 0
