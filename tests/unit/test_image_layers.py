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

from components.render import TEMPLATES

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
