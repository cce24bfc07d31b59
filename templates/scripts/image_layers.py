"""Layer-wise image copy between two nodes (components/image.py ImageSync, sync-image.sh.j2).

`docker load` (Docker 20.10, image/tarexport/load.go) looks each layer of the manifest up by its
chain ID first and opens the layer's file only when the layer store lacks it. So a `docker save`
stream with the layer files the peer already holds left out loads into the same image, and only
the layers the peer lacks cross the fabric.

  send IMAGE_ID STEP FACTS RESULT  (on the build node) stdin: `docker save` of the image; stdout:
      the same tar without the layer.tar files the peer has or keeps staged. FACTS has one fact a
      line: `image [diff ids of the image]`, `peer [diff ids of one image on the peer]` (JSON
      lists), `staged DIR` (a layer directory staged on the peer). RESULT gets `sent-bytes=N`
      and `skipped-bytes=N` lines.
  receive STAGING STEP  (on the peer) stdin: that stream; stdout: a complete `docker load` input.
      Each layer file is kept in STAGING while it passes (`DIR.tar.part`, renamed `DIR.tar` once
      whole): a copy interrupted at any moment resumes at layer granularity. At the end the
      layers the sender left out because they were staged are put back from STAGING.
  plan FACTS  prints `whole` when the peer holds no layer of the image and has none staged (then
      the script sends plain `docker save` and the peer keeps the stream with `tee`: no Python
      pass over the bytes on either side, the first copy costs what the old pipe cost), else `filter`.
  split STAGING  (on the peer, before the facts are gathered) turns STAGING/stream.tar.part, the
      stream an interrupted `tee` kept, into the `DIR.tar` files of the layers it holds whole.

Which directory of the save holds which layer: its name is the legacy v1 ID that `docker save`
derives from the layer's chain ID, its parent's v1 ID and the layer's `json` (which comes before
the layer's file in the stream, as the entries are in name order). A directory whose ID is not
reproduced is sent: a wrong guess can only send too much, never too little.
No third-party package: the nodes' python3 only.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tarfile

BLOCK = 1 << 20
STREAM = "stream.tar.part"               # what `tee` keeps of a whole-image copy on the peer


def say(step: str, text: str) -> None:
    print(f"[blackwell {step}] {text}", file=sys.stderr, flush=True)


def chain_ids(diff_ids: list[str]) -> list[str]:
    """ChainID(L0) = DiffID(L0); ChainID(Ln) = sha256(ChainID(Ln-1) + " " + DiffID(Ln))."""
    out: list[str] = []
    for d in diff_ids:
        out.append(d if not out else "sha256:" + hashlib.sha256(f"{out[-1]} {d}".encode()).hexdigest())
    return out


def go_json(value) -> str:
    """encoding/json's compact form (HTML-safe escapes); map keys sorted by the caller."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for c, e in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(c, e)
    return text


def v1_ids(layer_json: dict, chain_id: str) -> set[str]:
    """The legacy IDs `docker save` may have given the directory of the layer with this chain ID
    (distribution/metadata v1.CreateID over the layer's legacy config; `os` is set after it)."""
    base = {k: v for k, v in layer_json.items() if k not in ("id", "parent")}
    out = set()
    for drop_os in (False, True):
        config = {k: v for k, v in base.items() if not (drop_os and k == "os")}
        config["layer_id"] = chain_id
        if layer_json.get("parent"):
            config["parent"] = "sha256:" + layer_json["parent"]
        out.add(hashlib.sha256(go_json(dict(sorted(config.items()))).encode()).hexdigest())
    return out


def copy(src, dst, size: int, on_block=None) -> None:
    left = size
    while left:
        block = src.read(min(BLOCK, left))
        if not block:
            raise EOFError("the stream ended inside a file")
        dst.write(block)
        if on_block:
            on_block(block)
        left -= len(block)


def read_facts(path: str) -> tuple[list[str], list[list[str]], set[str]]:
    diff_ids: list[str] = []
    peer: list[list[str]] = []
    staged: set[str] = set()
    with open(path) as f:
        for line in f:
            kind, _, value = line.strip().partition(" ")
            if kind == "image":
                diff_ids = json.loads(value)
            elif kind == "peer" and value.startswith("["):
                peer.append(json.loads(value))
            elif kind == "staged" and value:
                staged.add(value)
    if not diff_ids:
        raise SystemExit(f"{path}: no `image` line with the image's layers")
    return diff_ids, peer, staged


def send(image_id: str, step: str, facts: str, result: str) -> int:
    diff_ids, peer, staged = read_facts(facts)
    chains = chain_ids(diff_ids)
    held = {c for layers in peer for c in chain_ids(layers)}
    needed = {d for d, c in zip(diff_ids, chains) if c not in held}
    # Layer index by the chain ID the directory's name is derived from.
    index_of = {c: i for i, c in enumerate(chains)}
    src = tarfile.open(fileobj=sys.stdin.buffer, mode="r|", bufsize=BLOCK)
    out = tarfile.open(fileobj=sys.stdout.buffer, mode="w|", format=tarfile.GNU_FORMAT, bufsize=BLOCK,
                       copybufsize=BLOCK)
    layer_of: dict[str, int] = {}       # save directory -> layer index
    sent = skipped = staged_bytes = 0
    total = 0
    for member in src:
        top, _, leaf = member.name.partition("/")
        if leaf == "json" and member.isfile():
            data = src.extractfile(member).read()
            try:
                meta = json.loads(data)
                found = [i for c, i in index_of.items() if top in v1_ids(meta, c)]
                if len(found) == 1:
                    layer_of[top] = found[0]
            except ValueError:
                pass
            out.addfile(member, _Bytes(data))
            continue
        if leaf == "layer.tar" and member.isfile():
            total += member.size
            i = layer_of.get(top)
            if top in staged:
                staged_bytes += member.size
                say(step, f"layer {top[:12]} ({member.size >> 20} MiB) already staged on the peer")
                continue
            if i is not None and diff_ids[i] not in needed:
                skipped += member.size
                continue
            say(step, f"sending layer {top[:12]} ({member.size >> 20} MiB)")
            out.addfile(member, src.extractfile(member))
            sent += member.size
            continue
        out.addfile(member, src.extractfile(member) if member.isfile() else None)
    out.close()
    sys.stdout.buffer.flush()
    unknown = sum(1 for i in range(len(diff_ids) - 1) if i not in layer_of.values())
    if unknown:
        say(step, f"{unknown} layer directories not recognised: sent whole (no harm, only bytes)")
    say(step, f"sent {sent >> 20} MiB of layers; left out {skipped >> 20} MiB the peer holds "
              f"and {staged_bytes >> 20} MiB staged there ({total >> 20} MiB in the image {image_id[:19]})")
    with open(result, "w") as f:
        f.write(f"sent-bytes={sent}\nskipped-bytes={skipped + staged_bytes}\n")
    return 0


class _Bytes:
    """A file object over bytes already read (tarfile.addfile reads member.size bytes)."""
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def read(self, n: int = -1) -> bytes:
        end = len(self.data) if n < 0 else self.pos + n
        block, self.pos = self.data[self.pos:end], min(end, len(self.data))
        return block


def receive(staging: str, step: str) -> int:
    os.makedirs(staging, exist_ok=True)
    src = tarfile.open(fileobj=sys.stdin.buffer, mode="r|", bufsize=BLOCK)
    out = tarfile.open(fileobj=sys.stdout.buffer, mode="w|", format=tarfile.GNU_FORMAT, bufsize=BLOCK,
                       copybufsize=BLOCK)
    passed: set[str] = set()
    wanted: list[str] = []
    for member in src:
        top, _, leaf = member.name.partition("/")
        if member.name == "manifest.json" and member.isfile():
            data = src.extractfile(member).read()
            wanted = [p for m in json.loads(data) for p in m.get("Layers", [])]
            out.addfile(member, _Bytes(data))
            continue
        if leaf == "layer.tar" and member.isfile():
            part = os.path.join(staging, f"{top}.tar.part")
            with open(part, "wb") as keep:
                def tee(block: bytes) -> None:
                    keep.write(block)
                out.addfile(member, _Tee(src.extractfile(member), tee))
            os.replace(part, os.path.join(staging, f"{top}.tar"))
            passed.add(member.name)
            continue
        out.addfile(member, src.extractfile(member) if member.isfile() else None)
    restored = 0
    for path in wanted:
        top, _, leaf = path.partition("/")
        kept = os.path.join(staging, f"{top}.tar")
        if leaf == "layer.tar" and path not in passed and os.path.isfile(kept):
            info = tarfile.TarInfo(path)
            info.size = os.path.getsize(kept)
            info.mode = 0o644
            with open(kept, "rb") as f:
                out.addfile(info, f)
            passed.add(path)
            restored += info.size
    out.close()
    sys.stdout.buffer.flush()
    if restored:
        say(step, f"put back {restored >> 20} MiB of layers staged by an earlier, interrupted copy")
    return 0


class _Tee:
    def __init__(self, f, on_block):
        self.f, self.on_block = f, on_block

    def read(self, n: int = -1) -> bytes:
        block = self.f.read(n)
        self.on_block(block)
        return block


def plan(facts: str) -> int:
    diff_ids, peer, staged = read_facts(facts)
    held = {c for layers in peer for c in chain_ids(layers)}
    print("filter" if staged or held & set(chain_ids(diff_ids)) else "whole")
    return 0


def split(staging: str) -> int:
    stream = os.path.join(staging, STREAM)
    if not os.path.isfile(stream):
        return 0
    try:
        with open(stream, "rb") as f:
            src = tarfile.open(fileobj=f, mode="r|", bufsize=BLOCK)
            for member in src:
                top, _, leaf = member.name.partition("/")
                if leaf == "layer.tar" and member.isfile():
                    part = os.path.join(staging, f"{top}.tar.part")
                    with open(part, "wb") as keep:
                        copy(src.extractfile(member), keep, member.size)
                    os.replace(part, os.path.join(staging, f"{top}.tar"))
    except (EOFError, tarfile.TarError):
        pass                             # the stream ends where the copy was interrupted
    for name in os.listdir(staging):
        if name.endswith(".part"):
            os.remove(os.path.join(staging, name))
    return 0


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "plan":
        return plan(argv[1])
    if len(argv) == 2 and argv[0] == "split":
        return split(argv[1])
    if len(argv) == 5 and argv[0] == "send":
        return send(*argv[1:])
    if len(argv) == 3 and argv[0] == "receive":
        return receive(argv[1], argv[2])
    print("usage: image_layers.py send IMAGE_ID STEP FACTS RESULT | receive STAGING STEP | plan FACTS"
          " | split STAGING", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
