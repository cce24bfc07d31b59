"""What the team backend costs (a script, not a test): `pulumi preview` and a no-op `pulumi up` of
the tiny stack (tests/engine/teamstack.py: one local step, no node) on the local file backend and
on PostgreSQL (a private cluster on 127.0.0.1, tests/engine/pgcluster.py), alternated so both see
the same load, with the ratios taken in this one run.

    source scripts/env.sh && python bench/backend_bench.py [--rounds 5]

Writes bench/results/backend-<time>.json and prints medians. Traffic only to loopback.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from components.names import temp_prefix  # noqa: E402
from tests.engine import pgcluster, teamstack as t  # noqa: E402


def timed(project: Path, env: dict, *args: str) -> float:
    start = time.monotonic()
    done = t.pulumi(project, env, *args, timeout=300)
    took = time.monotonic() - start
    if done.returncode != 0:
        raise SystemExit(f"pulumi {' '.join(args)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    cluster = pgcluster.start()
    try:
        with tempfile.TemporaryDirectory(prefix=temp_prefix("backend-bench")) as tmp:
            root = Path(tmp)
            (root / "files").mkdir()
            envs = {"file": t.env(f"file://{root / 'files'}", "bench"),
                    "postgres": t.env(cluster.url(), "bench", cluster.env())}
            projects = {}
            for kind, env in envs.items():
                projects[kind] = t.make_project(root / kind, root / "marks", sleep=0)
                timed(projects[kind], env, "stack", "init", "bench")
                t.set_trial(projects[kind], "bench", "1")
                timed(projects[kind], env, "up", "--yes", "--stack", "bench")   # converged: the rest are no-ops
            times: dict[str, dict[str, list[float]]] = {k: {"preview": [], "up": []} for k in envs}
            for _ in range(args.rounds):
                for kind, env in envs.items():
                    times[kind]["preview"].append(timed(projects[kind], env, "preview", "--stack", "bench",
                                                        "--expect-no-changes"))
                    times[kind]["up"].append(timed(projects[kind], env, "up", "--yes", "--stack", "bench",
                                                   "--expect-no-changes"))
    finally:
        pgcluster.stop(cluster)
    med = {k: {op: statistics.median(v) for op, v in ops.items()} for k, ops in times.items()}
    result = {"rounds": args.rounds, "seconds": times, "median_s": med,
              "ratio_postgres_to_file": {op: med["postgres"][op] / med["file"][op] for op in ("preview", "up")}}
    out = REPO / "bench" / "results" / f"backend-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    for op in ("preview", "up"):
        print(f"{op:8s} file median {med['file'][op]:.2f} s, postgres median {med['postgres'][op]:.2f} s, "
              f"ratio {result['ratio_postgres_to_file'][op]:.2f}")
    print(f"wrote {out.relative_to(REPO)}")


if __name__ == "__main__":
    main()
