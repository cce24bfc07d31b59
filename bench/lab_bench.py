"""Benchmark on the lab (a script, not a test): numbers from one run, ratios taken in that run.

    source scripts/env.sh && python bench/lab_bench.py [--keep]

1. a clean start (destroy), then the first converge (`up`): wall time, and per step from the
   engine's events;
2. a second `up` on the converged lab: wall time and its ratio to the first (target ≤ 0.05);
3. the image and model copies node→node: their rates divided by a raw `ssh` stream of the same
   bytes over the same fabric link, measured right after (target ≥ 0.9);
4. a no-op copy: the bytes a re-run moves (target 0).
Writes bench/results/lab-<time>.json and prints a table. Traffic only to the lab's nodes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pulumi import automation as auto  # noqa: E402

from components.resources.image import image_tag  # noqa: E402
from tests.lab import topology as lab  # noqa: E402
from tests.lab.helpers import LAB_MODEL_DIR as MODEL_DIR, deployment, image_of  # noqa: E402

NODE1, NODE2 = lab.nodes(2)
PEER_SSH = (f"ssh -i /root/.ssh/id_ed25519 -o BatchMode=yes -o StrictHostKeyChecking=yes "
            f"-o Compression=no root@{NODE2.fabric_ip}")


def on_node(node, command: str) -> str:
    return subprocess.run(node.ssh_argv(command), capture_output=True, text=True, check=True,
                          timeout=3600).stdout.strip()


class StepClock:
    """Wall time of each resource step from the engine's events."""

    def __init__(self):
        self.started: dict[str, float] = {}
        self.took: dict[str, float] = {}

    def __call__(self, event: auto.EngineEvent) -> None:
        now = time.monotonic()
        if event.resource_pre_event:
            self.started[event.resource_pre_event.metadata.urn.split("::")[-1]] = now
        elif event.res_outputs_event:
            name = event.res_outputs_event.metadata.urn.split("::")[-1]
            if name in self.started:
                self.took[name] = now - self.started[name]


def timed_up(stack: auto.Stack) -> tuple[float, StepClock, dict]:
    clock = StepClock()
    start = time.monotonic()
    result = stack.up(on_event=clock, color="never")
    return time.monotonic() - start, clock, result.summary.resource_changes or {}


def raw_stream_seconds(source_command: str) -> float:
    """Seconds for node 1 to push `source_command`'s bytes through ssh to node 2, discarded."""
    out = on_node(NODE1, f"s=$(date +%s%N); {source_command} | {PEER_SSH} 'cat > /dev/null'; "
                         f"echo $(( ($(date +%s%N) - s) / 1000000 ))")
    return int(out) / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", action="store_true", help="leave the lab converged at the end")
    args = parser.parse_args()
    # The lab stack's fixed, public passphrase (tests/lab/lab.env).
    os.environ.pop("PULUMI_CONFIG_PASSPHRASE_FILE", None)
    os.environ.update(lab.pulumi_env({}))
    stack = auto.select_stack(stack_name="lab", work_dir=str(REPO))
    stack.destroy(color="never")

    first, clock, first_changes = timed_up(stack)
    noop, _, noop_changes = timed_up(stack)

    tag = image_tag(image_of(deployment("tiny")))   # the engine image, as the program tags it
    image_bytes = int(on_node(NODE1, f"docker image inspect -f '{{{{.Size}}}}' {tag}"))
    model_bytes = int(on_node(NODE1, f"du -sb {MODEL_DIR} | cut -f1"))
    image_copy = clock.took.get("vllm-lab-sync-lab-2", float("nan"))
    model_copy = clock.took.get("tiny-to-lab-2", float("nan"))
    image_raw = raw_stream_seconds(f"docker save {tag}")
    model_raw = raw_stream_seconds(f"tar -C {MODEL_DIR} -cf - .")
    # A re-run of the copy when the peer has the image: bytes moved (the script says "already there").
    rerun = on_node(NODE1, f"{PEER_SSH} docker image inspect -f '{{{{.Id}}}}' {tag}")

    results = {
        "first_converge_s": round(first, 1), "noop_up_s": round(noop, 1),
        "noop_over_first": round(noop / first, 4),
        "noop_changes": {k: v for k, v in noop_changes.items() if k != "same"},
        "first_changes": first_changes,
        "image_bytes": image_bytes, "image_copy_s": round(image_copy, 2), "image_raw_ssh_s": round(image_raw, 2),
        "image_copy_rate_over_raw": round(image_raw / image_copy, 3),
        "model_bytes": model_bytes, "model_copy_s": round(model_copy, 2), "model_raw_ssh_s": round(model_raw, 2),
        "model_copy_rate_over_raw": round(model_raw / model_copy, 3),
        "peer_image_id_after": rerun,
        "steps_s": {k: round(v, 1) for k, v in sorted(clock.took.items(), key=lambda kv: -kv[1])},
    }
    out_dir = REPO / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"lab-{time.strftime('%Y%m%dT%H%M%S')}.json"
    path.write_text(json.dumps(results, indent=2) + "\n")
    for key, value in results.items():
        if key != "steps_s":
            print(f"{key:28} {value}")
    print("slowest steps:", list(results["steps_s"].items())[:6])
    print(f"written to {path}")
    if not args.keep:
        stack.destroy(color="never")


if __name__ == "__main__":
    main()
