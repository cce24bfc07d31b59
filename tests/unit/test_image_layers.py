"""templates/scripts/image_layers.py, the layer filter of image copies, on the legacy configs of
a real `docker save` by Docker 20.10.24 (tests/unit/data/image_layers: the three layer
directories of the lab's node image, named by their v1 IDs, and its diff IDs). The program runs
as the nodes run it: a python3 process between two pipes."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from components.steps.render import TEMPLATES

PROGRAM = TEMPLATES / "scripts" / "image_layers.py"
DATA = Path(__file__).parent / "data" / "image_layers"
DIFF_IDS = ["sha256:9a47daf874d60a574cb7eca6e63ccbee815d8ecb428e33180c18ff217bc0c79f",
            "sha256:6e9ec458a23bc54f7ce467892daa45db067bf4218cf5815c071f27fc181622c7",
            "sha256:e444bd9b7d08d851bf52bf8ef577aa95223164191873ae516610d5188d3a5e35"]
# Layer directories of that save, in layer order (its manifest.json).
DIRS = ["f583175cac2a67341f94a90853bb817bed14e104a20370adae081edb3a510bb8",
        "ad97801f71a8217dce9bf937f6762d268469e2901c39c7e869e98324c941619d",
        "2dca25e410e33980dcbe8e714041bc7d7db1e5ed2f62524eea8f2a0af00c316f"]
CONTENT = {d: f"layer {i} ".encode() * (1000 + i) for i, d in enumerate(DIRS)}


def load_module():
    import importlib.util
    spec = importlib.util.spec_from_file_location("image_layers", PROGRAM)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def saved_image() -> bytes:
    """A save-shaped tar: entries in name order as `docker save` writes them."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as t:
        def add(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
        for d in sorted(DIRS):
            add(f"{d}/VERSION", b"1.0")
            add(f"{d}/json", (DATA / f"{d}.json").read_bytes())
            add(f"{d}/layer.tar", CONTENT[d])
        add("manifest.json", json.dumps([{"Config": "c.json", "RepoTags": ["x:y"],
                                          "Layers": [f"{d}/layer.tar" for d in DIRS]}]).encode())
    return buf.getvalue()


def files(tar_bytes: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r") as t:
        return {m.name: t.extractfile(m).read() for m in t if m.isfile()}


def send(tmp_path, peer: list[list[str]], staged: list[str]) -> tuple[bytes, str, str]:
    facts = tmp_path / "facts"
    facts.write_text("\n".join([f"image {json.dumps(DIFF_IDS)}", *(f"peer {json.dumps(p)}" for p in peer),
                                *(f"staged {s}" for s in staged)]) + "\n")
    result = tmp_path / "result"
    run = subprocess.run([sys.executable, str(PROGRAM), "send", "sha256:0", "test", str(facts), str(result)],
                         input=saved_image(), capture_output=True, check=True)
    return run.stdout, result.read_text(), run.stderr.decode()


def test_the_v1_ids_of_a_real_save_are_reproduced_from_chain_ids():
    m = load_module()
    chains = m.chain_ids(DIFF_IDS)
    assert chains[0] == DIFF_IDS[0]
    for i, d in enumerate(DIRS[:-1]):
        meta = json.loads((DATA / f"{d}.json").read_text())
        assert d in m.v1_ids(meta, chains[i])
        assert all(d not in m.v1_ids(meta, c) for c in chains if c != chains[i])


def test_layers_the_peer_holds_are_left_out(tmp_path):
    # The peer holds an image whose first two layers are ours: only the third crosses.
    out, result, log = send(tmp_path, peer=[DIFF_IDS[:2] + ["sha256:" + "f" * 64]], staged=[])
    sent = files(out)
    assert f"{DIRS[2]}/layer.tar" in sent and f"{DIRS[0]}/layer.tar" not in sent and f"{DIRS[1]}/layer.tar" not in sent
    assert all(f"{d}/json" in sent for d in DIRS) and "manifest.json" in sent
    assert f"sent-bytes={len(CONTENT[DIRS[2]])}" in result
    assert "not recognised" not in log


def test_a_peer_that_holds_only_a_later_layer_gets_every_layer(tmp_path):
    # Chain IDs, not diff IDs: the same third layer on another base is no help.
    out, _, _ = send(tmp_path, peer=[["sha256:" + "e" * 64, DIFF_IDS[2]]], staged=[])
    assert all(f"{d}/layer.tar" in files(out) for d in DIRS)


def test_staged_layers_are_left_out_and_put_back_by_the_receiver(tmp_path):
    staging = tmp_path / "staging"
    staging.mkdir()
    (staging / f"{DIRS[1]}.tar").write_bytes(CONTENT[DIRS[1]])
    (staging / f"{DIRS[0]}.tar.part").write_bytes(b"half")
    out, result, log = send(tmp_path, peer=[], staged=[DIRS[1]])
    assert f"{DIRS[1]}/layer.tar" not in files(out)
    assert "already staged" in log
    received = subprocess.run([sys.executable, str(PROGRAM), "receive", str(staging), "test"],
                              input=out, capture_output=True, check=True)
    loaded = files(received.stdout)
    assert {d: loaded[f"{d}/layer.tar"] for d in DIRS} == CONTENT
    # Every layer that passed is staged whole; the partial file of the interrupted run replaced.
    assert sorted(p.name for p in staging.iterdir()) == sorted(f"{d}.tar" for d in DIRS)
    assert "put back" in received.stderr.decode()


def test_a_stream_cut_inside_a_layer_keeps_the_whole_layers_only(tmp_path):
    staging = tmp_path / "staging"
    out, _, _ = send(tmp_path, peer=[], staged=[])
    cut = out.index(CONTENT[DIRS[2]][:50]) + 100   # inside the last layer (in name order: DIRS[2] first)
    run = subprocess.run([sys.executable, str(PROGRAM), "receive", str(staging), "test"], input=out[:cut],
                         capture_output=True)
    assert run.returncode != 0
    assert not (staging / f"{DIRS[2]}.tar").exists()


# ---------------------------------------------------------------------------------------------
# The layer registry (registry-plan, registry-send) against a stand-in of the registry API v2 on
# 127.0.0.1: tags/list, schema 2 manifests (only to a client that accepts them), blobs.

import gzip  # noqa: E402
import hashlib  # noqa: E402
import http.server  # noqa: E402
import socket  # noqa: E402
import threading  # noqa: E402

MANIFEST_V2 = "application/vnd.docker.distribution.manifest.v2+json"
REPO = "bws/engine"


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def layer_tar(i: int) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as t:
        data = f"layer {i}\n".encode() * (2000 + i)
        info = tarfile.TarInfo(f"layer-{i}.txt")
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


# Four layers: v1 has the first three, v2 (the update) the same three and a fourth.
TARS = [layer_tar(i) for i in range(4)]
BLOBS = [gzip.compress(t, mtime=0) for t in TARS]
LAYER_IDS = [sha(t) for t in TARS]


class Registry:
    """The stand-in: repositories of tags → (manifest, config); blobs by digest (corruptible)."""

    def __init__(self):
        self.tags: dict[str, dict[str, bytes]] = {}
        self.blobs: dict[str, bytes] = {}
        self.requests: list[tuple[str, str]] = []     # (path, Accept)
        registry = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                registry.requests.append((self.path, self.headers.get("Accept", "")))
                parts = self.path.split("/")
                body, kind = None, "application/json"
                if self.path == "/v2/":
                    body = b"{}"
                elif self.path.endswith("/tags/list"):
                    repo = "/".join(parts[2:-2])
                    if repo in registry.tags:
                        body = json.dumps({"name": repo, "tags": sorted(registry.tags[repo])}).encode()
                elif parts[-2] == "manifests" and MANIFEST_V2 in self.headers.get("Accept", ""):
                    body, kind = registry.tags.get("/".join(parts[2:-2]), {}).get(parts[-1]), MANIFEST_V2
                elif parts[-2] == "blobs":
                    body, kind = registry.blobs.get(parts[-1]), "application/octet-stream"
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.addr = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def push(self, repo: str, tag: str, layers: list[int]) -> str:
        """An image of these layers, as `docker push` leaves it; returns its config digest (the ID)."""
        config = json.dumps({"architecture": "amd64", "os": "linux",
                             "rootfs": {"type": "layers", "diff_ids": [LAYER_IDS[i] for i in layers]}}).encode()
        self.blobs[sha(config)] = config
        for i in layers:
            self.blobs[sha(BLOBS[i])] = BLOBS[i]
        manifest = {"schemaVersion": 2, "mediaType": MANIFEST_V2,
                    "config": {"mediaType": "application/vnd.docker.container.image.v1+json",
                               "size": len(config), "digest": sha(config)},
                    "layers": [{"mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip",
                                "size": len(BLOBS[i]), "digest": sha(BLOBS[i])} for i in layers]}
        self.tags.setdefault(repo, {})[tag] = json.dumps(manifest).encode()
        return sha(config)


@pytest.fixture
def registry():
    r = Registry()
    yield r
    r.server.shutdown()
    r.server.server_close()


def closed_port_addr() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def registry_facts(tmp_path, image: list[int], peer: list[list[int]], staged: list[int] = ()) -> str:
    facts = tmp_path / "facts"
    facts.write_text("\n".join([f"image {json.dumps([LAYER_IDS[i] for i in image])}",
                                *(f"peer {json.dumps([LAYER_IDS[i] for i in p])}" for p in peer),
                                *(f"staged {sha(BLOBS[i])[7:]}" for i in staged),
                                "tag blackwell-serving/engine:v2"]) + "\n")
    return str(facts)


def registry_plan(addr: str, facts: str) -> tuple[str, str]:
    # A proxy in the environment must not matter: the registry is on loopback.
    run = subprocess.run([sys.executable, str(PROGRAM), "registry-plan", addr, REPO, facts], capture_output=True,
                         text=True, check=True, timeout=60, env={"http_proxy": "http://127.0.0.1:9", "PATH": ""})
    return run.stdout.strip(), run.stderr


def test_registry_plan_empty_registry_means_docker_save(tmp_path, registry):
    method, why = registry_plan(registry.addr, registry_facts(tmp_path, [0, 1, 2, 3], peer=[[0, 1, 2]]))
    assert method == "filter" and "lacks 3 of the 3 layers" in why


def test_registry_plan_registry_holding_what_the_peer_shares(tmp_path, registry):
    registry.push(REPO, "v1", [0, 1, 2])
    method, why = registry_plan(registry.addr, registry_facts(tmp_path, [0, 1, 2, 3], peer=[[0, 1, 2]]))
    assert method == "registry" and "holds the 3 layers" in why
    # The manifests were asked for as schema 2 (the only kind with the config's diff IDs).
    assert all(MANIFEST_V2 in accept for path, accept in registry.requests if "/manifests/" in path)


def test_registry_plan_a_layer_the_peer_shares_missing_from_the_registry(tmp_path, registry):
    registry.push(REPO, "v1", [0, 1])
    method, _ = registry_plan(registry.addr, registry_facts(tmp_path, [0, 1, 2, 3], peer=[[0, 1, 2]]))
    assert method == "filter"


def test_registry_plan_a_peer_holding_nothing_gains_nothing_from_it(tmp_path, registry):
    registry.push(REPO, "v1", [0, 1, 2])
    method, why = registry_plan(registry.addr, registry_facts(tmp_path, [0, 1, 2, 3], peer=[], staged=[3]))
    assert method == "filter" and "holds no layer" in why


def test_registry_plan_unreachable_registry(tmp_path):
    method, why = registry_plan(closed_port_addr(), registry_facts(tmp_path, [0, 1, 2, 3], peer=[[0, 1, 2]]))
    assert method == "filter" and "cannot be used" in why


def registry_send(tmp_path, addr: str, facts: str, tag: str = "v2") -> tuple[subprocess.CompletedProcess, str]:
    result = tmp_path / "result"
    run = subprocess.run([sys.executable, str(PROGRAM), "registry-send", addr, REPO, tag, "test", facts, str(result)],
                         capture_output=True, timeout=60, env={"http_proxy": "http://127.0.0.1:9", "PATH": ""})
    return run, result.read_text() if result.exists() else ""


def loads(archive: bytes, held: list[int]) -> list[str]:
    """What `docker load` would do with the archive on a peer holding the chains of `held`:
    every layer not held is read (gzip or not) and must be the diff ID; returns the layers read."""
    m = load_module()
    entries = files(archive)
    [manifest] = json.loads(entries["manifest.json"])
    config = entries[manifest["Config"]]
    assert sha(config) == "sha256:" + manifest["Config"].removesuffix(".json")
    diff_ids = json.loads(config)["rootfs"]["diff_ids"]
    held_chains = set(m.chain_ids([LAYER_IDS[i] for i in held]))
    read = []
    for path, diff_id, chain in zip(manifest["Layers"], diff_ids, m.chain_ids(diff_ids)):
        if chain in held_chains:
            continue
        data = entries[path]
        assert sha(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data) == diff_id
        read.append(path)
    return read


def test_registry_send_archive_holds_only_the_layers_the_peer_lacks(tmp_path, registry):
    image_id = registry.push(REPO, "v2", [0, 1, 2, 3])
    run, result = registry_send(tmp_path, registry.addr, registry_facts(tmp_path, [0, 1, 2, 3], peer=[[0, 1, 2]]))
    assert run.returncode == 0, run.stderr
    sent = files(run.stdout)
    names = [f"{sha(BLOBS[i])[7:]}/layer.tar" for i in range(4)]
    assert sorted(sent) == sorted(["manifest.json", f"{image_id[7:]}.json", names[3]])
    assert json.loads(sent["manifest.json"]) == [{"Config": f"{image_id[7:]}.json", "Layers": names,
                                                  "RepoTags": ["blackwell-serving/engine:v2"]}]
    assert result == f"sent-bytes={len(BLOBS[3])}\nskipped-bytes={sum(map(len, BLOBS[:3]))}\n"
    assert run.stderr.decode().count("sending layer") == 1
    assert loads(run.stdout, held=[0, 1, 2]) == [names[3]]


def test_registry_send_leaves_out_staged_blobs_and_receive_puts_them_back(tmp_path, registry):
    registry.push(REPO, "v2", [0, 1, 2, 3])
    staging = tmp_path / "staging"
    staging.mkdir()
    (staging / f"{sha(BLOBS[2])[7:]}.tar").write_bytes(BLOBS[2])       # an interrupted copy's
    run, result = registry_send(tmp_path, registry.addr,
                                registry_facts(tmp_path, [0, 1, 2, 3], peer=[[0, 1]], staged=[2]))
    assert run.returncode == 0, run.stderr
    names = [f"{sha(BLOBS[i])[7:]}/layer.tar" for i in range(4)]
    assert names[2] not in files(run.stdout) and names[3] in files(run.stdout)
    assert "already staged" in run.stderr.decode()
    assert f"sent-bytes={len(BLOBS[3])}\n" in result
    received = subprocess.run([sys.executable, str(PROGRAM), "receive", str(staging), "test"],
                              input=run.stdout, capture_output=True, check=True)
    assert "put back" in received.stderr.decode()
    assert loads(received.stdout, held=[0, 1]) == names[2:]
    assert sorted(p.name for p in staging.iterdir()) == sorted(f"{sha(BLOBS[i])[7:]}.tar" for i in (2, 3))


def test_registry_send_stops_at_a_blob_that_differs_from_its_digest(tmp_path, registry):
    registry.push(REPO, "v2", [0, 1, 2, 3])
    corrupt = bytearray(BLOBS[3])
    corrupt[-5] ^= 0xFF
    registry.blobs[sha(BLOBS[3])] = bytes(corrupt)
    run, result = registry_send(tmp_path, registry.addr, registry_facts(tmp_path, [0, 1, 2, 3], peer=[[0, 1]]))
    assert run.returncode != 0
    assert result == f"digest-mismatch={sha(BLOBS[3])}\n"
    # Its last block was held back: the peer never gets the bad layer whole, nor a whole archive.
    staging = tmp_path / "staging"
    received = subprocess.run([sys.executable, str(PROGRAM), "receive", str(staging), "test"],
                              input=run.stdout, capture_output=True)
    assert received.returncode != 0
    assert not (staging / f"{sha(BLOBS[3])[7:]}.tar").exists()
    assert (staging / f"{sha(BLOBS[2])[7:]}.tar").exists()     # the layers before it are whole


def test_registry_send_unreachable_registry_tells_the_script_to_fall_back(tmp_path):
    run, result = registry_send(tmp_path, closed_port_addr(), registry_facts(tmp_path, [0, 1, 2, 3], peer=[[0]]))
    assert run.returncode != 0 and run.stdout == b""
    assert result.startswith("unreachable=GET http://127.0.0.1:")


def test_registry_send_a_blob_gone_from_the_registry_tells_the_script_to_fall_back(tmp_path, registry):
    registry.push(REPO, "v2", [0, 1, 2, 3])
    del registry.blobs[sha(BLOBS[3])]
    run, result = registry_send(tmp_path, registry.addr, registry_facts(tmp_path, [0, 1, 2, 3], peer=[[0, 1, 2]]))
    assert run.returncode != 0 and result.startswith("unreachable=") and "HTTP 404" in result


def test_registry_send_refuses_a_tag_that_holds_another_image(tmp_path, registry):
    registry.push(REPO, "v2", [0, 1, 2])
    run, result = registry_send(tmp_path, registry.addr, registry_facts(tmp_path, [0, 1, 2, 3], peer=[[0]]))
    assert run.returncode != 0 and result.startswith("unreachable=") and "is not the image" in result
