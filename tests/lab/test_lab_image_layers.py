"""Image copies move only the layers a peer lacks (issue 14), on the lab's Docker 20.10: the
real sync-image script from lab-1 to lab-2, with the bytes lab-1 sent on its fabric interface.
The test image is the engine image both nodes hold plus three layers of random bytes built on
lab-1 (no network), so the peer lacks exactly those three. Last, an update through the layer
registry (fabric.layer_registry; its lab image from tests/lab/engine/prepare.sh regimage)."""

from __future__ import annotations

import time

import pytest

from components.names import LAYER_REGISTRY_CONTAINER
from tests.lab import topology as lab
from tests.lab.dist import (LAYER_REGISTRY, STATE_DIR, fill_layer_registry_script, layer_registry_scripts,
                            run_script, ssh, sync_image_script)
from tests.lab.helpers import require_lab

pytestmark = pytest.mark.lab
LAB_STATE = "converged"  # tests/lab/conftest.py: the lab tests run grouped by the state they share
# Only when asked (BWS_LAB_LONG=1): a long lab test of what unit tests also cover, left out of the default run and
# CI, which the whole suite would otherwise push past its 90 minutes (README, "the tests").
LAB_OPT_IN = "BWS_LAB_LONG"

NODE1, NODE2 = lab.nodes(2)
TAG = "blackwell-serving/layers-test:issue14"
LAYER_MIB = 200


def images(node: lab.Node) -> dict[str, str]:
    out = ssh(node, "docker image ls --format '{{.Repository}}:{{.Tag}} {{.ID}}'").stdout
    return dict(line.split() for line in out.splitlines() if not line.startswith("<none>"))


@pytest.fixture(scope="module")
def test_image():
    require_lab(NODE1, NODE2)
    both = sorted(set(images(NODE1).items()) & set(images(NODE2).items()))
    base = next((t for t, _ in both if t.startswith("blackwell-serving/")), None) or (both[0][0] if both else None)
    if base is None:
        pytest.fail("no image on both lab nodes to build on; fix: converge the lab stack first "
                    "(bash scripts/run-lab.sh)")
    dockerfile = f"FROM {base}\n" + "".join(
        f"RUN head -c {LAYER_MIB << 20} /dev/urandom > /layer-{i}.bin\n" for i in range(3))
    ssh(NODE1, f"docker build -q -t {TAG} -", input=dockerfile, timeout=900)
    ssh(NODE2, f"docker image rm {TAG} >/dev/null 2>&1 || true")
    yield base
    for n in (NODE1, NODE2):
        ssh(n, f"docker image rm {TAG} >/dev/null 2>&1 || true; rm -rf {STATE_DIR}/image-staging", check=False)


def image_id(node: lab.Node) -> str:
    return ssh(node, f"docker image inspect --format '{{{{.Id}}}}' {TAG}").stdout.strip()


def test_a_copy_sends_only_the_layers_the_peer_lacks(test_image):
    total = int(ssh(NODE1, f"docker image inspect --format '{{{{.Size}}}}' {TAG}").stdout)
    # The three new layers' files: LAYER_MIB each plus a few tar headers.
    new = 3 * (LAYER_MIB << 20)
    run = run_script(NODE1, sync_image_script(TAG, NODE2))
    assert run.rc == 0, run.stderr
    assert image_id(NODE2) == image_id(NODE1) == run.value("image-id")
    sent = int(run.value("sent-bytes"))
    # Exactly the three new layers (the save has no other layer the peer lacks) ...
    assert new < sent < new + (1 << 20), run.stderr
    # ... and on the wire: those bytes, SSH framing and the tar's headers, not the image.
    assert new <= run.fabric_bytes < new * 1.05 + (8 << 20), (run.fabric_bytes, total)
    assert run.fabric_bytes < total / 4
    print(f"image {total >> 20} MiB, new layers {new >> 20} MiB, fabric {run.fabric_bytes >> 20} MiB, "
          f"{run.wall_s:.0f} s")
    # Nothing left staged once the image is there.
    assert ssh(NODE2, f"ls {STATE_DIR}/image-staging").stdout.strip() == ""


def test_an_interrupted_copy_resumes_at_layer_granularity(test_image):
    ssh(NODE2, f"docker image rm {TAG} >/dev/null 2>&1 || true")
    script = sync_image_script(TAG, NODE2)
    ssh(NODE1, "cat > /tmp/bws-dist-interrupted.sh", input=script)
    # The copy in its own session on lab-1, killed as soon as the first of the big layers is
    # whole on the peer (the way a killed step ends: its whole process group).
    started = ssh(NODE1, "setsid bash /tmp/bws-dist-interrupted.sh </dev/null >/tmp/bws-dist-interrupted.log 2>&1 "
                         "& echo $!").stdout.strip()
    staging = f"{STATE_DIR}/image-staging"
    whole = ""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and not whole:
        whole = ssh(NODE2, f"find {staging} -name '*.tar' -size +{LAYER_MIB - 1}M 2>/dev/null | head -1",
                    check=False).stdout.strip()
        time.sleep(0.1)
    assert whole, "no layer arrived on the peer within 10 minutes"
    ssh(NODE1, f"kill -TERM -- -{started} 2>/dev/null || true; sleep 2; kill -KILL -- -{started} 2>/dev/null || true")
    time.sleep(2)
    assert ssh(NODE2, f"docker image inspect {TAG}", check=False).returncode != 0, \
        "the copy ended before it was interrupted: nothing to resume"
    kept = int(ssh(NODE2, f"stat -c %s {whole}").stdout)
    run = run_script(NODE1, script)
    assert run.rc == 0, run.stderr
    assert image_id(NODE2) == image_id(NODE1)
    assert "already staged on the peer" in run.stderr
    assert "put back" in run.stderr
    sent = int(run.value("sent-bytes"))
    # The resumed copy sent at most what was left: the staged layer did not cross again.
    assert sent <= 3 * ((LAYER_MIB << 20) + (1 << 20)) - kept, run.stderr
    assert run.fabric_bytes < sent + (8 << 20)


SCRATCH_TAG = "blackwell-serving/layers-test:scratch"


def test_an_interrupted_whole_image_copy_resumes_from_the_kept_stream(test_image):
    """A peer holding no layer of the image gets plain `docker save`, kept there by `tee`; the
    next run cuts what arrived into whole layers and sends only the rest."""
    ssh(NODE1, f"set -e; d=$(mktemp -d); cd $d; for i in 0 1 2; do head -c {LAYER_MIB}M /dev/urandom > l$i; done; "
               "printf 'FROM scratch\\nCOPY l0 /\\nCOPY l1 /\\nCOPY l2 /\\n' > Dockerfile; "
               f"docker build -q -t {SCRATCH_TAG} . >/dev/null; cd /; rm -rf $d", timeout=900)
    ssh(NODE2, f"docker image rm {SCRATCH_TAG} >/dev/null 2>&1 || true")
    try:
        script = sync_image_script(SCRATCH_TAG, NODE2)
        ssh(NODE1, "cat > /tmp/bws-dist-interrupted.sh", input=script)
        started = ssh(NODE1, "setsid bash /tmp/bws-dist-interrupted.sh </dev/null >/tmp/bws-dist-interrupted.log "
                             "2>&1 & echo $!").stdout.strip()
        stream = f"{STATE_DIR}/image-staging/*/stream.tar.part"
        # Killed once the kept stream holds the first layer whole (a layer and the tar's headers).
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            size = ssh(NODE2, f"stat -c %s {stream} 2>/dev/null || echo 0", check=False).stdout.split()
            if size and int(size[0]) > (LAYER_MIB + 4) << 20:
                break
            time.sleep(0.1)
        else:
            pytest.fail("the kept stream did not reach one layer within 10 minutes")
        ssh(NODE1, f"kill -TERM -- -{started} 2>/dev/null || true; sleep 2; kill -KILL -- -{started} 2>/dev/null || true")
        time.sleep(2)
        assert "holds no layer of it" in ssh(NODE1, "cat /tmp/bws-dist-interrupted.log").stdout
        assert ssh(NODE2, f"docker image inspect {SCRATCH_TAG}", check=False).returncode != 0, \
            "the copy ended before it was interrupted: nothing to resume"
        run = run_script(NODE1, script)
        assert run.rc == 0, run.stderr
        want = ssh(NODE1, f"docker image inspect --format '{{{{.Id}}}}' {SCRATCH_TAG}").stdout.strip()
        assert ssh(NODE2, f"docker image inspect --format '{{{{.Id}}}}' {SCRATCH_TAG}").stdout.strip() == want
        assert "already staged on the peer" in run.stderr and "put back" in run.stderr, run.stderr
        sent = int(run.value("sent-bytes"))
        assert sent <= 2 * ((LAYER_MIB << 20) + (1 << 20)), run.stderr
        assert run.fabric_bytes < sent + (8 << 20)
        assert ssh(NODE2, f"ls {STATE_DIR}/image-staging").stdout.strip() == ""
    finally:
        for n in (NODE1, NODE2):
            ssh(n, f"docker image rm {SCRATCH_TAG} >/dev/null 2>&1 || true", check=False)


UPDATE_NAME = "layers-update"
V1, V2 = f"blackwell-serving/{UPDATE_NAME}:v1", f"blackwell-serving/{UPDATE_NAME}:v2"
UPDATE_MIB = 48


def test_an_update_through_the_layer_registry_sends_only_its_new_layer():
    """fabric.layer_registry on lab-1: v1 (the registry image, on both nodes, plus a layer of
    random bytes) goes to lab-2 by `docker save` and then into the registry; v2 (v1 plus another
    such layer) is pushed there and only its new layer is read back and sent."""
    require_lab(NODE1, NODE2)
    base = LAYER_REGISTRY.image
    pulled = [n for n in (NODE1, NODE2) if ssh(n, f"docker image inspect {base}", check=False).returncode != 0]
    start, remove = layer_registry_scripts(NODE1)
    try:
        for n in pulled:
            ssh(n, f"docker pull -q {base}", timeout=600)
        for tag, parent, name in ((V1, base, "v1"), (V2, V1, "v2")):
            dockerfile = f"FROM {parent}\nRUN head -c {UPDATE_MIB}M /dev/urandom > /{name}.bin\n"
            ssh(NODE1, f"docker build -q -t {tag} -", input=dockerfile, timeout=900)
        assert run_script(NODE1, start).rc == 0
        first = run_script(NODE1, sync_image_script(V1, NODE2))
        assert first.rc == 0 and "layer registry" not in first.stderr, first.stderr
        fill = run_script(NODE1, fill_layer_registry_script(V1, UPDATE_NAME))
        assert fill.rc == 0 and "are in the registry" in fill.stderr, fill.stderr

        run = run_script(NODE1, sync_image_script(V2, NODE2, registry=UPDATE_NAME))
        assert run.rc == 0, run.stderr
        assert "layer registry: holds the" in run.stderr, run.stderr
        assert run.stderr.count("sending layer") == 1, run.stderr
        inspect = f"docker image inspect --format '{{{{.Id}}}}' {V2}"
        assert ssh(NODE2, inspect).stdout.strip() == ssh(NODE1, inspect).stdout.strip() == run.value("image-id")
        # The new layer, gzipped (random bytes do not shrink), and on the wire little more.
        sent = int(run.value("sent-bytes"))
        assert UPDATE_MIB << 20 <= sent < (UPDATE_MIB << 20) * 1.01 + (1 << 20), run.stderr
        assert run.fabric_bytes < sent + (8 << 20), (run.fabric_bytes, sent)
        print(f"update: sent {sent >> 20} MiB, fabric {run.fabric_bytes >> 20} MiB, {run.wall_s:.1f} s")
        # No name the pushes gave the image is left on lab-1, no staging on lab-2.
        names = ssh(NODE1, "docker image ls --digests --format '{{.Repository}}'").stdout
        assert f"127.0.0.1:{LAYER_REGISTRY.port}/" not in names
        assert ssh(NODE2, f"ls {STATE_DIR}/image-staging").stdout.strip() == ""
    finally:
        removed = run_script(NODE1, remove)
        for n in (NODE1, NODE2):
            ssh(n, f"docker image rm {V2} {V1} >/dev/null 2>&1 || true; rm -rf {STATE_DIR}/image-staging", check=False)
        for n in pulled:
            ssh(n, f"docker image rm {base} >/dev/null 2>&1 || true", check=False)
    assert removed.rc == 0, removed.stderr
    assert ssh(NODE1, f"docker ps -aq --filter name={LAYER_REGISTRY_CONTAINER}").stdout.strip() == ""
    assert ssh(NODE1, f"test -e {LAYER_REGISTRY.storage}", check=False).returncode != 0
