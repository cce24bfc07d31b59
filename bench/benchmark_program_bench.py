"""How close the benchmark program's figures come to a known pace (a script, not a test): the
program (templates/scripts/benchmark_engine.py) measures a stand-in engine on 127.0.0.1 that
paces its tokens (tests/paced_engine.py), and the ratios of measured to paced figures are taken
in this one run. On a loaded machine they drop; they can never exceed 1 (a sleep never ends early).

    source scripts/env.sh && python bench/benchmark_program_bench.py [--rounds 5]

Writes bench/results/benchmark-program-<time>.json and prints the medians.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.paced_engine import GAP_S, TTFT_S, FakeEngine, paced_engine  # noqa: E402
from tests.unit.test_benchmark import bench  # noqa: E402  the program, loaded from its template


def one_round(url: str, key_file: str) -> dict[str, float]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        rc = bench.main([url, "m", "2", "[]", "41", "3", "60", "-", key_file, "VLLM_API_KEY"])
    if rc != 0:
        raise SystemExit(f"the benchmark program failed (exit {rc})")
    v = dict(line.split("=", 1) for line in out.getvalue().splitlines() if "=" in line)
    return {"decode_ratio": float(v["decode-tok-s"]) * GAP_S,
            "ttft_ratio": TTFT_S * 1000 / float(v["ttft-ms"]),
            "aggregate_over_single": float(v["aggregate-tok-s"]) / float(v["decode-tok-s"])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    results = REPO / "bench" / "results"
    results.mkdir(parents=True, exist_ok=True)
    key_file = results / ".paced-engine.env"
    key_file.write_text(f"VLLM_API_KEY={FakeEngine.key}\n")
    try:
        with paced_engine() as url:
            rounds = [one_round(url, str(key_file)) for _ in range(args.rounds)]
    finally:
        key_file.unlink()
    summary = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    report = {"pace": {"ttft_s": TTFT_S, "gap_s": GAP_S, "concurrency": 3}, "rounds": rounds, "median": summary}
    out = results / f"benchmark-program-{time.strftime('%Y%m%dT%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    print(f"written: {out.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
