"""Distribution benchmark on the lab (issue 14; a script, not a test): the old way and the new one
side by side, in one run, traffic only between the lab's nodes (c and d need `tests/lab/lab up --nodes 4`;
(a) and (b) run on 2 nodes, with lab-2 as the peer).

    flock /tmp/bws-lab.lock python bench/dist_bench.py [--only a,b,c,d]

The real scripts of ImageSync and ModelCache (tests/lab/dist.py renders them), run on the sending
node as a step runs them; bytes are what every node sent on its fabric interface meanwhile.
  old image copy: `docker save | ssh | docker load`, the whole image (sync-image.sh.j2 without its
                  layer path); new: only the layers the peer lacks (image_layers.py).
  old model copy: one rsync stream; new: fabric.copy_streams streams (default 4).
(a) first distribution of the engine image to a peer that holds none of its layers (lab-3);
(b) an update where only the transformers layer changed: the peer holds the engine image; the new
    image is its base plus one new layer holding the transformers package (made offline from the
    engine image's own files: the lab has no package index), the shape of a pin change. A third
    method beside the old pipe and the filter: the layer registry (fabric.layer_registry) on
    lab-1, filled with the engine image first (its first push, reported apart as
    registry_first_push_s: a stack pays it once, after the first distribution), then the update
    pushed there and sent from it (registry_s, registry_bytes);
(c) first copy of a generated model of >= 2 GiB to lab-3, with a raw ssh stream of the same
    bytes for reference;
(d) (a) and (c) to three peers (lab-2, lab-3, lab-4): old = three copies from the source at once
    (what the graph did), new = the relay (components/resources/relay.py, 2 rounds). Images to lab-2 are
    skipped when it runs the lab stack's engine (it then holds the image: the copy is a no-op
    for both), so (d)'s image uses a flattened copy of the engine image no peer holds.
Writes bench/results/dist-<time>.json and prints a table. Everything it puts on nodes is removed.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from components.config.schema import DEFAULT_COPY_STREAMS  # noqa: E402
from components.resources.image import image_tag  # noqa: E402
from components.resources.relay import relay_plan  # noqa: E402
from components.steps.render import render  # noqa: E402
from tests.lab import topology as lab  # noqa: E402
from tests.lab.dist import (fill_layer_registry_script, layer_registry_scripts, old_sync_image_script,  # noqa: E402
                            peer_values, put_script, run_script, ssh, sync_image_script, tx_bytes)
from tests.lab.helpers import deployment, image_of  # noqa: E402

SRC, N2, N3, N4 = lab.nodes(4)
NODES = lab.nodes(min(4, lab.node_count()))   # the nodes up: bytes are counted on these
# The peer of (a) and (b): lab-3 (holds nothing of the lab stack), or lab-2 on a 2-node lab; when
# lab-2 runs the lab stack's engine (so holds its image), (a) copies the flattened engine image.
PEER = N3 if len(NODES) >= 3 else N2
MODELS = "/var/lib/blackwell-serving/models"
GEN = "bench--generated--v1"
GEN_FILES, GEN_FILE_MIB = 10, 240            # 2.34 GiB of incompressible shards
UPDATE_TAG = "blackwell-serving/bench-update:transformers"
REGISTRY_NAME = "bench-update"               # the update's repository in the layer registry
FLAT_TAG = "blackwell-serving/bench-flat:engine"


def engine_tag() -> str:
    """The lab stack's engine image (tiny's), as the program tags it."""
    tag = image_tag(image_of(deployment("tiny")))
    if not has_image(SRC, tag):
        raise SystemExit(f"no {tag} image on lab-1: run the lab stack's `up` first")
    return tag


def image_bytes(tag: str) -> int:
    return int(ssh(SRC, f"docker image inspect --format '{{{{.Size}}}}' {tag}").stdout)


def has_image(node, tag: str) -> bool:
    return ssh(node, f"docker image inspect {tag} >/dev/null 2>&1", check=False).returncode == 0


def drop_image(node, tag: str) -> None:
    ssh(node, f"docker image rm {tag} >/dev/null 2>&1 || true; rm -rf /var/lib/blackwell-serving/image-staging",
        check=False)


def fabric_total() -> int:
    return sum(tx_bytes(n) for n in NODES)


def timed(fn):
    before, t0 = fabric_total(), time.monotonic()
    fn()
    return time.monotonic() - t0, fabric_total() - before


def copy_image(sender, peer, tag: str, old: bool = False, registry: str | None = None) -> None:
    script = old_sync_image_script(tag, peer) if old else sync_image_script(tag, peer, registry=registry)
    run = run_script(sender, script)
    if run.rc != 0:
        raise SystemExit(f"image copy {sender.name}->{peer.name} failed:\n{run.stderr[-3000:]}")
    if registry and "layer registry: holds the" not in run.stderr:
        raise SystemExit(f"the copy did not go through the layer registry:\n{run.stderr[-3000:]}")


def on_src(script: str, what: str) -> None:
    run = run_script(SRC, script)
    if run.rc != 0:
        raise SystemExit(f"{what} on {SRC.name} failed:\n{run.stderr[-3000:]}")


def registry_update(tag: str) -> tuple[float, tuple[float, int]]:
    """(the first push of the engine image into a new layer registry, (time, bytes) of the update
    copied through it); the registry is removed afterwards."""
    start, remove = layer_registry_scripts(SRC)
    try:
        on_src(start, "the layer registry's start")
        first_push = timed(lambda: on_src(fill_layer_registry_script(tag, REGISTRY_NAME), "the first push"))[0]
        drop_image(PEER, UPDATE_TAG)
        through = timed(lambda: copy_image(SRC, PEER, UPDATE_TAG, registry=REGISTRY_NAME))
    finally:
        run_script(SRC, remove)
    return first_push, through


def model_script(sender, peer, streams: int) -> str:
    final, staging = f"{MODELS}/{GEN}", f"{MODELS}/.staging/{GEN}"
    return render("scripts/sync-model.sh.j2", model_name="generated", final_dir=final, staging_dir=staging,
                  streams=streams, **peer_values(peer))


def copy_model(sender, peer, streams: int) -> None:
    run = run_script(sender, model_script(sender, peer, streams))
    if run.rc != 0:
        raise SystemExit(f"model copy {sender.name}->{peer.name} failed:\n{run.stderr[-3000:]}")


def drop_model(node) -> None:
    ssh(node, f"rm -rf {MODELS}/{GEN} {MODELS}/.staging/{GEN}", check=False)


def side_by_side(name: str, old: tuple[float, int], new: tuple[float, int], **extra) -> dict:
    row = {"case": name, "old_s": round(old[0], 1), "new_s": round(new[0], 1), "old_bytes": old[1],
           "new_bytes": new[1], "time_ratio_old_over_new": round(old[0] / new[0], 2),
           "bytes_ratio_old_over_new": round(old[1] / max(new[1], 1), 1), **extra}
    print(json.dumps(row), flush=True)
    return row


def flat_image(tag: str) -> str:
    """The engine image's files as one layer no peer holds."""
    if not has_image(SRC, FLAT_TAG):
        ssh(SRC, f"set -e; c=$(docker create {tag}); docker export $c | docker import - {FLAT_TAG} >/dev/null; "
                 "docker rm $c >/dev/null", timeout=3600)
    return FLAT_TAG


def case_a(tag: str) -> dict:
    what = "the engine image"
    if ssh(PEER, f"docker ps -q --filter ancestor={tag}").stdout.strip():
        tag, what = flat_image(tag), f"the engine image flattened ({PEER.name} runs the engine)"
    drop_image(PEER, tag)
    old = timed(lambda: copy_image(SRC, PEER, tag, old=True))
    drop_image(PEER, tag)
    new = timed(lambda: copy_image(SRC, PEER, tag, old=False))
    row = side_by_side(f"a: first distribution of {what} (lab-1 -> {PEER.name})", old, new,
                       image_bytes=image_bytes(tag))
    if tag == FLAT_TAG:
        for n in (SRC, PEER):
            drop_image(n, FLAT_TAG)
    return row


def build_update(tag: str) -> None:
    """The engine image's base plus one layer holding its transformers package."""
    base = ssh(SRC, f"docker image inspect --format '{{{{index .Config.Labels \"org.blackwell-serving.base\"}}}}' {tag}").stdout.strip()
    where = ssh(SRC, f"docker run --rm --entrypoint python3 {tag} -c "
                     "'import transformers, os; print(os.path.dirname(os.path.dirname(transformers.__file__)))'").stdout.strip()
    dockerfile = (f"FROM {base}\nCOPY --from={tag} {where}/transformers {where}/transformers\n"
                  f"LABEL org.blackwell-serving.bench=update\n")
    ssh(SRC, f"docker build -q -t {UPDATE_TAG} -", input=dockerfile, timeout=1800)


def case_b(tag: str) -> dict:
    if not has_image(PEER, tag):
        copy_image(SRC, PEER, tag, old=False)
    build_update(tag)
    layer = int(ssh(SRC, f"docker history --format '{{{{.Size}}}}' --human=false {UPDATE_TAG} | head -3 | sort -n | tail -1").stdout)
    drop_image(PEER, UPDATE_TAG)
    old = timed(lambda: copy_image(SRC, PEER, UPDATE_TAG, old=True))
    drop_image(PEER, UPDATE_TAG)
    new = timed(lambda: copy_image(SRC, PEER, UPDATE_TAG, old=False))
    first_push, registry = registry_update(tag)
    row = side_by_side(f"b: update, only the transformers layer new (lab-1 -> {PEER.name} holding the engine image)",
                       old, new, image_bytes=image_bytes(UPDATE_TAG), new_layer_bytes=layer,
                       registry_s=round(registry[0], 1), registry_bytes=registry[1],
                       time_ratio_old_over_registry=round(old[0] / registry[0], 2),
                       registry_first_push_s=round(first_push, 1))
    drop_image(PEER, UPDATE_TAG)
    drop_image(SRC, UPDATE_TAG)
    return row


def generate_model() -> int:
    ssh(SRC, f"set -e; d={MODELS}/{GEN}; if [ ! -f $d/.blackwell-manifest.sha256 ]; then rm -rf $d; mkdir -p $d; "
             f"for i in $(seq 1 {GEN_FILES}); do head -c {GEN_FILE_MIB}M /dev/urandom > $d/model-$i.safetensors; done; "
             "echo '{\"model_type\": \"generated\"}' > $d/config.json; "
             "(cd $d && find . -type f ! -name '.blackwell-*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) > $d.m; "
             "mv $d.m $d/.blackwell-manifest.sha256; "
             "(cd $d && find . -type f ! -name '.blackwell-*' -printf '%s %T@ %P\\n' | awk '{ $2 = int($2); print }' "
             "| LC_ALL=C sort) > $d/.blackwell-manifest.stat; fi", timeout=1800)
    return int(ssh(SRC, f"du -sb {MODELS}/{GEN} | cut -f1").stdout.split()[0])


def raw_stream(peer) -> tuple[float, int]:
    """The same bytes through one plain ssh stream to the peer, discarded there."""
    script = ("set -euo pipefail\n" + render("scripts/_peer.sh.j2", **peer_values(peer))
              + f"tar -C {MODELS}/{GEN} -cf - . | peer 'cat > /dev/null'\n")
    put_script(SRC, script, "/tmp/bws-dist-raw.sh")
    return timed(lambda: ssh(SRC, "bash /tmp/bws-dist-raw.sh </dev/null", timeout=1800))


def case_c() -> dict:
    size = generate_model()
    raw = raw_stream(N3)
    drop_model(N3)
    old = timed(lambda: copy_model(SRC, N3, 1))
    drop_model(N3)
    new = timed(lambda: copy_model(SRC, N3, DEFAULT_COPY_STREAMS))
    drop_model(N3)
    return side_by_side(f"c: first copy of a {size / 2**30:.2f} GiB generated model (lab-1 -> lab-3)", old, new,
                        model_bytes=size, streams=DEFAULT_COPY_STREAMS, raw_ssh_s=round(raw[0], 1),
                        new_rate_over_raw=round(raw[0] / new[0], 2),
                        single_stream_rate_over_raw=round(raw[0] / old[0], 2))


def in_parallel(jobs) -> None:
    errors = []

    def wrap(job):
        try:
            job()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=wrap, args=(j,)) for j in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise SystemExit(f"a parallel copy failed: {errors[0]}")


def relay(copy, peers) -> None:
    """The relay plan by rounds: in each round every sender of that round sends once."""
    plan = relay_plan(SRC, peers)
    for rnd in sorted({r for *_, r, _ in plan}):
        in_parallel([lambda s=s, p=p: copy(s, p) for s, p, r, _ in plan if r == rnd])


def case_d(tag: str, rows: list[dict]) -> None:
    """Adds its rows as they are measured: a failure of the model part keeps the image's."""
    peers = [N2, N3, N4]
    # The image: flattened (one layer, the engine image's files), so no peer holds any of it.
    flat_image(tag)
    for p in peers:
        drop_image(p, FLAT_TAG)
    old = timed(lambda: in_parallel([lambda p=p: copy_image(SRC, p, FLAT_TAG, old=True) for p in peers]))
    for p in peers:
        drop_image(p, FLAT_TAG)
    new = timed(lambda: relay(lambda s, p: copy_image(s, p, FLAT_TAG, old=False), peers))
    rows.append(side_by_side("d: the engine image (flattened) to three peers", old, new,
                             image_bytes=image_bytes(FLAT_TAG)))
    for p in [SRC, *peers]:
        drop_image(p, FLAT_TAG)
    size = generate_model()
    for p in peers:
        drop_model(p)
    old = timed(lambda: in_parallel([lambda p=p: copy_model(SRC, p, 1) for p in peers]))
    for p in peers:
        drop_model(p)
    new = timed(lambda: relay(lambda s, p: copy_model(s, p, DEFAULT_COPY_STREAMS), peers))
    rows.append(side_by_side(f"d: the {size / 2**30:.2f} GiB model to three peers", old, new, model_bytes=size))
    for p in peers:
        drop_model(p)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="a,b,c,d", help="cases to run, e.g. a,c")
    args = ap.parse_args()
    cases = set(args.only.split(","))
    if len(NODES) < 4 and cases & {"c", "d"}:
        raise SystemExit("cases c and d need 4 lab nodes: tests/lab/lab up --nodes 4")
    tag = engine_tag()
    rows: list[dict] = []
    try:
        if "a" in cases:
            rows.append(case_a(tag))
        if "b" in cases:
            rows.append(case_b(tag))
        if "c" in cases:
            rows.append(case_c())
        if "d" in cases:
            case_d(tag, rows)
    finally:
        for n in NODES[2:]:
            drop_image(n, tag)
        drop_model(SRC)
        out = REPO / "bench" / "results" / f"dist-{time.strftime('%Y%m%dT%H%M%S')}.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps({"engine_image": tag, "rows": rows}, indent=2) + "\n")
        print(f"\n{'case':<92} {'old s':>7} {'new s':>7} {'old MiB':>8} {'new MiB':>8} {'t×':>5} {'B×':>6}")
        for r in rows:
            print(f"{r['case']:<92} {r['old_s']:>7} {r['new_s']:>7} {r['old_bytes'] >> 20:>8} "
                  f"{r['new_bytes'] >> 20:>8} {r['time_ratio_old_over_new']:>5} {r['bytes_ratio_old_over_new']:>6}")
        print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
