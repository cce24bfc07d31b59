"""docs/seeds-vs-todo.md: for each hardware stack the seeds describe, the offline preview's todo
list next to the seed's own todo items, with a short comment per difference.

    source scripts/env.sh && python scripts/seeds_vs_todo.py [--seeds DIR] [--check]

The todo lists are generated, never edited: each stack is previewed offline
(BLACKWELL_SERVING_OFFLINE=1: the program opens no connection to a node) in a copy of the
project with its own empty file backend and passphrase, so the operator's backend and stack
files are untouched; `python -m components.todo --format json` gives the list in the seeds'
shape. The seed items are read from the seed texts (../shared/seeds by default); the comments
are this file's COMMENTS, keyed by the seed item they answer. --check: exit 1 when the page
differs from what it would write."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUTPUT = REPO / "docs" / "seeds-vs-todo.md"
PROJECT_FILES = ["Pulumi.yaml", "__main__.py", "components", "templates", "stacks"]

# Stack → the seeds whose steps it carries (file name prefixes in the seeds directory).
STACKS = {"spark-duo": ["000", "002"], "spark-duo-sglang": ["002"], "rtxpro-quad": ["003"]}

# (stack, seed item) → what the todo list does with that item. A seed item not here is
# printed with "no comment yet": the page says so rather than hiding it.
COMMENTS = {
    ("spark-duo", "Stop GLM service (keep embeddings on secondary)"):
        "the retire steps on spark-1a32 (vllm-cluster, vllm-proxy, vllm-reranker, from seed 002) and "
        "the check that vllm-embeddings.service stays up on spark-5be3; they wait for every preflight check",
    ("spark-duo", "Determine deployment approach"):
        "decided in the stack file, not a step: the image that served in seed 002 (hellohal2064/vllm-qwen3.5-gb10); "
        "the engine probe checks before anything is stopped that the image knows the model",
    ("spark-duo", "Search for GB10 inference recipes"):
        "research, not a step: its results are the stack's fabric, Ray and engine settings",
    ("spark-duo", "Stop GLM vllm-cluster service on head spark"):
        "the retire step of vllm-cluster.service on spark-1a32, after the preflight checks",
    ("spark-duo", "Determine deployment approach: scitrera/dgx-spark-sglang:0.5.10rc0 + transformers upgrade"):
        "that attempt hung in NCCL initialisation in the seed; it is the stack spark-duo-sglang. This stack "
        "is what served afterwards (vLLM, Ray, TP 2)",
    ("spark-duo", "Download Qwen3.5-122B-A10B FP8 model from HF on head spark"):
        "the model fetch on spark-1a32, started at once (in parallel with the image), then its copy to spark-5be3",
    ("spark-duo", "Copy Docker image to ..."):
        "the image pull on spark-1a32 and its copy to spark-5be3 over the fabric; the seed's item is cut off there",
    ("spark-duo-sglang", "Stop GLM vllm-cluster service on head spark"):
        "the retire steps on spark-1a32, now after the preflight (its NCCL all-reduce), so a hang stops nothing",
    ("spark-duo-sglang", "Determine deployment approach: scitrera/dgx-spark-sglang:0.5.10rc0 + transformers upgrade"):
        "the image build: scitrera/dgx-spark-sglang:0.5.10rc0 plus a transformers>=5.0 layer, on spark-1a32",
    ("spark-duo-sglang", "Download Qwen3.5-122B-A10B FP8 model from HF on head spark"):
        "the model fetch on spark-1a32, then its copy to spark-5be3",
    ("spark-duo-sglang", "Copy Docker image to ..."):
        "the image copy to spark-5be3 over the fabric",
    ("rtxpro-quad", "Download nvidia/Qwen3.5-397B-A17B-NVFP4 model to container"):
        "the model fetch on llm-server (the seed's LXC container is the node), in parallel with the venv build",
    ("rtxpro-quad", "Build latest SGLang main from source with CUDA 13"):
        "the venv build on llm-server: SGLang at a pinned commit of main (the seed said 'latest'), --no-deps over "
        "the node's CUDA 13 torch, verified before it becomes current; images[0].min_cuda 13.0 is checked "
        "against the driver in the preflight",
    ("rtxpro-quad", "Update systemd service for Qwen3.5 NVFP4"):
        "the unit install and start, after sglang-kimi.service is retired",
    ("rtxpro-quad", "Test and verify serving works"):
        "the health gate (a real chat completion), then the watchdog and the benchmark",
}
# What each step of a todo list is in the seeds' terms (matched on the step's text, first match).
ADDED = [
    (r"layer registry", "added: layer registry: a later update sends only the new layers"),
    (r"gateway", "added: one endpoint for the head's clients in place of the retired vllm-proxy.service "
                 "(seed 002 stopped it)"),
    (r"^Pull image|^Build image", "seed 002 'Determine deployment approach': the approach is the image"),
    (r"^Copy image", "seed 002 'Copy Docker image to …'"),
    (r"^Build venv", "seed 003 'Build latest SGLang main from source with CUDA 13' (listed before the download: "
                     "both start at once)"),
    (r"^Download model", "the seeds' download item (seed 002, seed 003)"),
    (r"^Copy model", "not a seed item: the secondary's copy of the weights, over the fabric"),
    (r"^Stop and disable", "the seeds' stop item (seed 000, seed 002), after every preflight check"),
    (r"^Write the secret environment", "added: the unit's secrets (API keys, tokens) in a root-only file of their own, "
                                       "never in the unit or the preview"),
    (r"^Install and start", "seed 003 'Update systemd service' (the seeds' serving step)"),
    (r"^Health gate", "seed 003 'Test and verify serving works'"),
    (r"^Preflight: .* sees its .* GPU|^Preflight: .* has no GPU",
     "added: the GPUs visible in count and kind, the driver's CUDA version, the free memory against the fit "
     "(seed 003 rebound its GPUs to a VM; seed 000: GLM held ~98 GB)"),
    (r"^Preflight: a container of image", "added: a container of the engine image sees the GPUs (docker runtime)"),
    (r"^Preflight: the fabric link", "added: the fabric link is up before anything is stopped (seed 000: an IB port was Down)"),
    (r"^Preflight: measure the fabric", "added: the NCCL all-reduce across the nodes, bounded (seed 002: NCCL hung)"),
    (r"^Preflight: the engine", "added: the engine knows the model before anything is stopped (seed 000: vLLM 0.14 lacked Qwen3.5)"),
    (r"^Check that .* stays up", "added: the kept service is watched, never touched"),
    (r"Ray", "added: the Ray cluster the seed set up by hand (seed 002: TP 2 across both Sparks)"),
    (r"watchdog|[Bb]enchmark", "added: after the health gate, the watchdog and one benchmark"),
]


def seed_items(seed: Path) -> list[str]:
    """The seed's todo items: its todowrite JSON lines, its numbered list ("1. X — marked S"), or
    its prose ("The first todo item—X—is marked")."""
    text = seed.read_text()
    items = re.findall(r'\{"content":"([^"]+)"', text)
    if not items:
        items = [m.strip() for m in re.findall(r"^\d\. (.+?) — (?:marked|truncated)", text, re.M)]
    if not items:
        prose = re.findall(r"The (?:first|second|third|fourth) todo item—([^—]+)—", text)
        items = [re.sub(r"^(stopping|determining|searching for) (the )?", "", p).strip() for p in prose]
        items = [i[0].upper() + i[1:] for i in items]
        items = [{"GLM service": "Stop GLM service (keep embeddings on secondary)",
                  "Deployment approach": "Determine deployment approach",
                  "GB10 inference recipes": "Search for GB10 inference recipes"}.get(i, i) for i in items]
    if "Copy Docker image to" in text and not any(i.startswith("Copy Docker image") for i in items):
        items.append("Copy Docker image to ...")
    return items


def todo_list(project: Path, backend: Path, stack: str) -> list[dict]:
    env = {**os.environ, "PULUMI_BACKEND_URL": f"file://{backend}", "PULUMI_CONFIG_PASSPHRASE": "seeds-vs-todo",
           "BLACKWELL_SERVING_OFFLINE": "1"}
    env.pop("PULUMI_CONFIG_PASSPHRASE_FILE", None)
    subprocess.run(["pulumi", "stack", "init", stack, "--non-interactive"], cwd=project, env=env, check=True,
                   capture_output=True, text=True)
    done = subprocess.run([sys.executable, "-m", "components.todo", "--stack", stack, "--format", "json",
                           "--work-dir", str(project)], cwd=project, env=env, capture_output=True, text=True,
                          timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"todo of {stack} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    doc = json.loads(done.stdout)
    return doc["todos"] if isinstance(doc, dict) else doc


def comment_for(step: str) -> str:
    for pattern, comment in ADDED:
        if re.search(pattern, step):
            return comment
    return ""


def page(lists: dict[str, list[dict]], seeds: dict[str, list[str]]) -> str:
    out = ["# The seeds' todo items and the offline previews' todo lists", "",
           "Generated by `source scripts/env.sh && python scripts/seeds_vs_todo.py` (do not edit): each stack's "
           "todo list from an offline preview (`BLACKWELL_SERVING_OFFLINE=1 python -m components.todo --stack S "
           "--format json`, no node contacted), next to the todo items of the seeds it comes from "
           "(`../shared/seeds/`), with a comment per difference. Seeds 002 and 003 quote their items; seed 000 "
           "only describes its three items in prose (\"The first todo item—stopping the GLM service—\"), so its "
           "items here are those phrases. Seed 002's fourth item is cut off in the seed itself. Steps that wait for "
           "nothing between them (two retirements on one node, the checks of two nodes) are listed by phase, node "
           "and name, so two previews give the same list.", ""]
    for stack, prefixes in STACKS.items():
        out += [f"## {stack}", "", f"Seeds: {', '.join(prefixes)}.", "", "### The seeds' items", "",
                "| seed | item | in the todo list |", "|---|---|---|"]
        for prefix in prefixes:
            for item in seeds[prefix]:
                note = COMMENTS.get((stack, item), "no comment yet")
                out.append(f"| {prefix} | {item} | {note} |")
        out += ["", "### The todo list (offline preview)", "", "| # | step | status | difference from the seeds |",
                "|---|---|---|---|"]
        for n, todo in enumerate(lists[stack], 1):
            out.append(f"| {n} | {todo['content']} | {todo.get('status', '')} | {comment_for(todo['content'])} |")
        out.append("")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=Path, default=REPO.parent / "shared" / "seeds")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    seeds = {p.name[:3]: seed_items(p) for p in sorted(args.seeds.glob("*.txt"))}
    with tempfile.TemporaryDirectory(prefix="seeds-vs-todo-") as tmp:
        project, backend = Path(tmp) / "project", Path(tmp) / "backend"
        project.mkdir()
        backend.mkdir()
        for name in PROJECT_FILES:
            src = REPO / name
            (shutil.copytree(src, project / name, ignore=shutil.ignore_patterns("__pycache__")) if src.is_dir()
             else shutil.copy2(src, project / name))
        for stack_file in (project / "stacks").glob("Pulumi.*.yaml"):  # its own passphrase, not the operator's salt
            lines = stack_file.read_text().splitlines(keepends=True)
            stack_file.write_text("".join(ln for ln in lines if not ln.startswith("encryptionsalt:")))
        (project / ".venv").symlink_to(REPO / ".venv")
        lists = {stack: todo_list(project, backend, stack) for stack in STACKS}
    text = page(lists, seeds)
    if args.check:
        same = OUTPUT.exists() and OUTPUT.read_text() == text
        print(f"{OUTPUT}: {'up to date' if same else 'out of date; run python scripts/seeds_vs_todo.py'}")
        return 0 if same else 1
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
