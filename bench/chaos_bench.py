"""Chaos benchmark on the lab (a script, not a test; bounded; traffic only to the lab's nodes).

    source scripts/env.sh && python bench/chaos_bench.py [--runs 20] [--kill-window 20 300] [--seed N]
                                                         [--sigkill-at-least K] [--budget-min M]
                                                         [--continue RESULTS_JSON]

Each run: destroy the `lab` stack; start `pulumi up`; at a random moment of the kill window (in
its least-hit slice, so the kills spread over the whole converge) send SIGINT or SIGKILL (at
random, held to at least K SIGKILLs, half the runs by default: bench/chaos_draw.py; an `up` that
ends before its signal interrupted nothing: it
is recorded, does not count toward --runs, and narrows the window's end to 95% of its duration, so
that every counted run cuts into a running `up`); then run `up` again the way an operator would after an
interruption (clear the stale backend lock of the dead run: python -m components.todo.interrupted)
and require it to converge; then check the nodes themselves, everything derived from the stack
file (bench/expectations.py): every unit of ours active on its node (the watchdogs' and rank
watches' timers), every image with one ID on every node that holds it, every model cache verified
in full on each node where it is placed, the retired units stopped and disabled, the kept ones
running, a real chat completion from every served model, and no process of the killed run left on
this machine. Reports k/N converged, the median time of the resumed `up`, and every bad state
found. Writes bench/results/chaos-<time>.json, rewritten after every run, so a bench stopped
early keeps what it measured; with --budget-min it starts no run after that many minutes. Each
run takes 4-10 min here, so 20 do not fit one sitting beside other work: --continue FILE adds runs
to an earlier results file until it holds --runs, and every run records its seed and the commit
it ran, so a file made over several sittings says which code each run tested.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import threading
from collections import Counter
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from components.config import load_stack_file  # noqa: E402
from tests.lab import topology as lab  # noqa: E402
from bench.chaos_draw import draw_moment, draw_signal  # noqa: E402
from bench.expectations import node_expectations, served_models  # noqa: E402

UP_TIMEOUT_S = 2400
# What the bench checks, derived from the lab stack through the program's own names
# (bench/expectations.py; tests/unit/test_chaos_expectations.py pins it to the rendered units).
LAB_STACK = load_stack_file(REPO / "stacks" / "Pulumi.lab.yaml")
SERVED_NAME = LAB_STACK.deployments[0].served_name
GATEWAY_MODELS = served_models(LAB_STACK)
EXPECT = node_expectations(LAB_STACK)
# The stack's node names (lab-1) -> the lab's nodes (bws-lab-1), by the stack's management address.
NODES = {n.name: lab.node_at(str(n.host)) for n in LAB_STACK.nodes}
FIRST = LAB_STACK.deployments[0]
HEAD = NODES[FIRST.nodes[0]]
GATEWAY = NODES[LAB_STACK.gateway.node]


def pulumi(*args: str, timeout: int = UP_TIMEOUT_S) -> subprocess.CompletedProcess:
    return subprocess.run(["pulumi", *args, "--stack", "lab", "--non-interactive"], cwd=REPO, env=ENV,
                          capture_output=True, text=True, timeout=timeout)


def on_node(node, command: str) -> str:
    done = subprocess.run(node.ssh_argv(command), capture_output=True, text=True, timeout=600)
    return done.stdout.strip() if done.returncode == 0 else f"<failed: {done.stderr.strip()[-200:]}>"


def descendants(pid: int) -> dict[int, str]:
    """The processes under `pid` now (pid → command line): the run's language host, provider,
    ssh and scripts."""
    children: dict[int, list[tuple[int, str]]] = {}
    for line in subprocess.run(["ps", "-eo", "pid=,ppid=,args="], capture_output=True, text=True).stdout.splitlines():
        parts = line.split(None, 2)
        if len(parts) >= 2:
            children.setdefault(int(parts[1]), []).append((int(parts[0]), parts[2] if len(parts) == 3 else ""))
    found, todo = {}, [pid]
    while todo:
        for child, args in children.get(todo.pop(), []):
            found[child] = args[:120]
            todo.append(child)
    return found


def still_running(processes: dict[int, str]) -> list[str]:
    """Those of `processes` alive now (a killed parent's children are re-parented, so they are
    looked up by pid and command line, not under the parent)."""
    alive = []
    for pid, args in processes.items():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                now = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if now[:60] == args[:60]:
            alive.append(f"{pid} {args}")
    return alive


class Linger(threading.Thread):
    """Watches leftover processes ("pid args") in the background while the resumed `up` runs:
    seconds until all are gone, or None if they outlive `limit_s`."""

    def __init__(self, processes: list[str], limit_s: float = 900):
        super().__init__(daemon=True)
        self.pids = [int(p.split()[0]) for p in processes]
        self.limit_s = limit_s
        self.gone_after_s: float | None = 0.0 if not processes else None
        self.start()   # runs while the resumed `up` does

    def run(self) -> None:
        start = time.monotonic()
        while time.monotonic() - start < self.limit_s:
            if not any(os.path.exists(f"/proc/{pid}") for pid in self.pids):
                self.gone_after_s = round(time.monotonic() - start, 1)
                return
            time.sleep(1)


def check_nodes(api_key: str, gateway_key: str) -> list[str]:
    bad = []
    image_ids: dict[str, dict[str, str]] = {}  # tag → node → image ID
    for name, want in EXPECT.items():
        node = NODES[name]
        for unit in want.active_units:
            state = on_node(node, f"systemctl is-active {unit} || true")
            if state != "active":
                bad.append(f"{name}: {unit} is {state}")
        for tag in want.images:
            image_ids.setdefault(tag, {})[name] = on_node(node, f"docker image inspect --format '{{{{.Id}}}}' {tag} || true")
        for cache in want.caches:
            verify = on_node(node, f"cd {cache} && sha256sum -c --quiet .blackwell-manifest.sha256 && echo ok")
            if verify != "ok":
                bad.append(f"{name}: model cache {cache} not verified: {verify}")
        for unit in want.retired:
            if on_node(node, f"systemctl is-active {unit} || true") == "active":
                bad.append(f"{name}: retired {unit} is running")
            if on_node(node, f"systemctl is-enabled {unit} || true") != "disabled":
                bad.append(f"{name}: retired {unit} is not disabled")
        for unit in want.kept:
            if on_node(node, f"systemctl is-active {unit} || true") != "active":
                bad.append(f"{name}: kept {unit} is not running")
    for tag, ids in image_ids.items():
        if len(set(ids.values())) != 1 or not all(i.startswith("sha256:") for i in ids.values()):
            bad.append(f"image {tag}: IDs differ or missing: {ids}")
    # The engine directly, and every model through the gateway with its own key.
    asks = [(f"http://{HEAD.mgmt_ip}:{FIRST.port}", api_key, SERVED_NAME),
            *((f"http://{GATEWAY.mgmt_ip}:{LAB_STACK.gateway.port}", gateway_key, model) for model in GATEWAY_MODELS)]
    for base, key, model in asks:
        try:
            if not chat(base, key, model):
                bad.append(f"no completion from {model} at {base}")
        except Exception as err:  # noqa: BLE001 — a bench records what it saw
            bad.append(f"completion from {model} at {base} failed: {err}")
    return bad


def chat(base: str, key: str, model: str) -> bool:
    body = json.dumps({"model": model, "max_tokens": 4, "messages": [{"role": "user", "content": "hello"}]}).encode()
    request = urllib.request.Request(f"{base}/v1/chat/completions", data=body,
                                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(request, timeout=120) as reply:
        return "choices" in json.loads(reply.read())


# The CLI's progress lines (non-interactive): " +  command:remote:Command NAME creating (3s) …".
PROGRESS = re.compile(r"^\s*\S+\s+(command:\S+)\s+(\S+)\s+(creating|updating|deleting|replacing|created|updated|"
                      r"deleted|replaced|creating failed|updating failed|deleting failed)\b")


def steps_at_kill(output: Path) -> dict:
    """From the killed `up`'s own output: the steps it had finished and those it was in the middle
    of when the signal came (started, neither finished nor failed): what was interrupted."""
    try:
        lines = output.read_text(errors="replace").splitlines()
    except OSError:
        return {"completed": None, "in_flight": []}
    started, ended = set(), set()
    for line in lines:
        m = PROGRESS.match(line)
        if m:
            (started if m.group(3).endswith("ing") else ended).add(m.group(2))
    return {"completed": len(started & ended), "in_flight": sorted(started - ended)}


def one_run(i: int, sig: signal.Signals, at: float, api_key: str, gateway_key: str) -> dict:
    down = pulumi("destroy", "--yes", "--skip-preview")
    if down.returncode != 0:
        return {"run": i, "error": "destroy failed: " + down.stderr[-500:]}
    before: dict[int, str] = {}
    output = REPO / "bench" / "results" / f"chaos-run{i}-up.log"
    with output.open("w") as out:
        proc = subprocess.Popen(["pulumi", "up", "--yes", "--skip-preview", "--stack", "lab", "--non-interactive"],
                                cwd=REPO, env=ENV, stdout=out, stderr=subprocess.STDOUT)
    launched = time.monotonic()
    try:
        proc.wait(timeout=at)
        finished_first = True
        first_up_s = time.monotonic() - launched
    except subprocess.TimeoutExpired:
        finished_first = False
        before = descendants(proc.pid)
        proc.send_signal(sig)
        try:
            proc.wait(timeout=120 if sig == signal.SIGINT else 30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    time.sleep(15)   # what ends with its parent has ended by now
    interrupted = steps_at_kill(output)
    left = [] if finished_first else still_running(before)
    lingering = Linger(left)
    subprocess.run([sys.executable, "-m", "components.todo.interrupted", "--stack", "lab"], cwd=REPO, env=ENV)
    start = time.monotonic()
    up = pulumi("up", "--yes", "--skip-preview")
    resumed_s = time.monotonic() - start
    bad = check_nodes(api_key, gateway_key) if up.returncode == 0 else [f"resumed up failed: {up.stdout[-800:]} {up.stderr[-400:]}"]
    # How long the leftovers lingered (from 15 s after the signal; None: still there after the
    # watcher's limit), waited for here so that the next run starts clean.
    lingering.join()
    return {"run": i, "signal": sig.name, "at_s": round(at, 1), "finished_before_signal": finished_first,
            "first_up_s": round(first_up_s, 1) if finished_first else None,
            # An `up` that ended by itself before the signal must have succeeded, or the run tested nothing.
            "first_up_failed": output.read_text(errors="replace")[-600:] if finished_first and proc.returncode else None,
            "steps_completed_before_signal": interrupted["completed"], "steps_interrupted": interrupted["in_flight"],
            "resumed_up_s": round(resumed_s, 1), "converged": up.returncode == 0 and not bad,
            "bad": bad, "leftover_processes": left, "leftovers_gone_after_s": lingering.gone_after_s}


def main() -> None:
    global ENV
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--kill-window", type=float, nargs=2, default=(20.0, 300.0), metavar=("FROM_S", "TO_S"))
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--sigkill-at-least", type=int, default=None, metavar="K",
                        help="counted runs that get SIGKILL, at least (default: half of --runs)")
    parser.add_argument("--budget-min", type=float, default=None,
                        help="start no run after this many minutes (a run under way is finished)")
    parser.add_argument("--continue", dest="previous", type=Path, default=None, metavar="RESULTS_JSON",
                        help="add runs to an earlier results file (a bench longer than one sitting); "
                             "each run records the commit it ran, so a mixed file shows it")
    args = parser.parse_args()
    if not 1 <= args.runs <= 100:
        parser.error("--runs must be 1..100 (each run is a full converge)")
    sigkills = (args.runs + 1) // 2 if args.sigkill_at_least is None else args.sigkill_at_least
    if not 0 <= sigkills <= args.runs:
        parser.error("--sigkill-at-least must be 0..--runs")
    earlier = json.loads(args.previous.read_text())["detail"] if args.previous else []
    ENV = {k: v for k, v in os.environ.items() if k != "PULUMI_CONFIG_PASSPHRASE_FILE"}
    ENV.update(lab.pulumi_env({}))
    seed = args.seed if args.seed is not None else int(time.time())
    rng = random.Random(seed)
    api_key = (lab.STATE_DIR / "api-key").read_text().strip()
    gateway_key = (lab.STATE_DIR / "gateway-key").read_text().strip()
    subprocess.run(["pulumi", "stack", "select", "--create", "lab", "--non-interactive"], cwd=REPO, env=ENV,
                   check=True, capture_output=True)
    out_dir = REPO / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    path = args.previous or out_dir / f"chaos-{time.strftime('%Y%m%dT%H%M%S')}.json"
    started = time.monotonic()
    runs: list[dict] = list(earlier)
    summary = summarize(seed, args.runs, runs)
    window = narrowed(tuple(args.kill_window), runs)
    # Bounded: `up`s that end before their signal are redrawn, at most one per counted run.
    while summary["runs"] < args.runs and len(runs) < 2 * args.runs:
        if args.budget_min and time.monotonic() - started > args.budget_min * 60:
            print(f"budget of {args.budget_min} min spent: {len(runs)} of {args.runs} runs done", flush=True)
            break
        counted = counted_runs(runs)
        sig = draw_signal(rng, counted, args.runs, sigkills)
        at = draw_moment(rng, window, counted, bins=args.runs)
        result = {**one_run(len(runs) + 1, sig, at, api_key, gateway_key), "seed": seed, "commit": commit()}
        runs.append(result)
        window = narrowed(window, runs)
        print(json.dumps(result), flush=True)
        summary = summarize(seed, args.runs, runs)
        path.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"{summary['converged']}/{summary['runs']} interrupted runs converged (of {args.runs} planned; "
          f"signals {summary['signals']}; "
          f"{summary['not_interrupted']} ups ended before their signal); median resumed up "
          f"{summary['median_resumed_up_s']} s; {summary['runs_with_leftover_processes']} runs left processes; "
          f"written to {path}")


def commit() -> str:
    """The commit the run ran (with '+changes' when the work tree differs from it)."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "components", "templates", "__main__.py"], cwd=REPO)
    return head + ("+changes" if dirty.returncode else "")


def narrowed(window: tuple[float, float], runs: list[dict]) -> tuple[float, float]:
    """The kill window with its end below 95% of the shortest `up` seen to end before its signal
    (never below its start plus 10 s)."""
    ends = [0.95 * r["first_up_s"] for r in runs if r.get("first_up_s") and not r.get("first_up_failed")]
    start, end = window
    return (start, max(start + 10.0, min([end, *ends])))


def counted_runs(runs: list[dict]) -> list[dict]:
    """The runs whose signal cut into a running `up`, and those that failed before their signal (a
    destroy or an `up` that failed by itself is a bad state, not a skipped run)."""
    return [r for r in runs if not (r.get("finished_before_signal") and not r.get("first_up_failed"))]


def summarize(seed: int, planned: int, runs: list[dict]) -> dict:
    """Counts over the counted runs (counted_runs)."""
    every = runs
    runs = counted_runs(runs)
    skipped = [r for r in every if r not in runs]
    resumed = [r["resumed_up_s"] for r in runs if "resumed_up_s" in r]
    good = [r for r in runs if r.get("converged") and not r.get("first_up_failed")]
    return {"seeds": sorted({r.get("seed", seed) for r in every} | {seed}), "planned": planned, "runs": len(runs), "not_interrupted": len(skipped),
            "commits": sorted({r.get("commit", "unrecorded") for r in runs}),
            "converged": len(good),
            "signals": dict(Counter(r["signal"] for r in runs if "signal" in r)),
            "median_resumed_up_s": statistics.median(resumed) if resumed else None,
            "bad_states": [r for r in runs if r not in good],
            "runs_with_leftover_processes": sum(1 for r in runs if r.get("leftover_processes")),
            # Which steps the signals cut into, over all runs: the coverage of the kill moments.
            "steps_interrupted": dict(Counter(s for r in runs for s in r.get("steps_interrupted", [])).most_common()),
            "detail": every}


ENV: dict = {}

if __name__ == "__main__":
    main()
