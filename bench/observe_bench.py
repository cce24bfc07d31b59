"""What observing the nodes costs a plan (a script, not a test): previews of the `lab` stack
online (each node probed once, read-only) and offline (no probe, the state file alone),
alternated so that both see the same load, with the ratio taken in this one run.

    source scripts/env.sh && python bench/observe_bench.py [--rounds 3]

Writes bench/results/observe-<time>.json and prints medians. Traffic only to the lab's nodes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.lab import topology as lab  # noqa: E402


def preview_seconds(offline: bool) -> tuple[float, str]:
    env = lab.pulumi_env()
    env.pop("BLACKWELL_SERVING_OFFLINE", None)
    if offline:
        env["BLACKWELL_SERVING_OFFLINE"] = "1"
    start = time.monotonic()
    done = subprocess.run(["pulumi", "preview", "--stack", "lab", "--non-interactive", "--diff"], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=600)
    took = time.monotonic() - start
    if done.returncode != 0:
        raise SystemExit(f"preview failed ({'offline' if offline else 'online'}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    probe = next((line.strip() for line in (done.stdout + done.stderr).splitlines() if "nodes in" in line and "observed" in line), "")
    return took, probe


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    online, offline, probes = [], [], []
    for _ in range(args.rounds):
        took, probe = preview_seconds(offline=False)
        online.append(took)
        probes.append(probe)
        offline.append(preview_seconds(offline=True)[0])
    result = {"rounds": args.rounds, "online_s": online, "offline_s": offline,
              "online_median_s": statistics.median(online), "offline_median_s": statistics.median(offline),
              "ratio_online_to_offline": statistics.median(online) / statistics.median(offline),
              "probe_lines": probes}
    out = REPO / "bench" / "results" / f"observe-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"preview online (probing) median {result['online_median_s']:.1f} s, offline median "
          f"{result['offline_median_s']:.1f} s, ratio {result['ratio_online_to_offline']:.2f} "
          f"({args.rounds} rounds, alternated)")
    print(f"probe: {probes[-1]}")
    print(f"written {out.relative_to(REPO)}")


if __name__ == "__main__":
    os.chdir(REPO)
    main()
