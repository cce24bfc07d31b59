#!/usr/bin/env bash
# Put the image on a peer over the fabric: skipped when the peer already has the same image ID;
# otherwise only the layers the peer lacks cross (image_layers.py: `docker save` filtered down to
# them here, kept in a staging directory on the peer as they arrive, `docker load` there), then
# checked by ID. A peer holding no layer of the image gets plain `docker save`, kept as it passes
# by `tee` (the first copy costs what the old pipe cost). An interrupted copy resumes at layer
# granularity: the next run leaves out what the peer has staged (and first cuts a kept stream
# into layer files). Without python3 on both sides: the whole image, docker save | docker load.
# With a layer registry on this node (fabric.layer_registry; on loopback: no daemon's configuration
# changes, and the peer's daemon never uses it): `docker save` exports every layer, `docker push`
# uploads only those the registry lacks. So when the registry holds every layer the image shares
# with the peer, the image is pushed there and only the layers the peer lacks are read back (gzip,
# checked by digest) into a `docker load` archive. A registry that does not answer means `docker
# save`, never a failed copy.
# Arguments of `peer` are quoted twice: once for this shell, once for the peer's.
set -euo pipefail
bws_said=()
log() { printf '[blackwell %s] %s\n' 'image blackwell-serving/sglang-spark:3179620c3637 -> spark-5be3' "$*" >&2; bws_said+=("$*"); }
progress_log=/var/log/blackwell-serving/image-blackwell-serving-sglang-spark-3179620c3637-spark-5be3.log
progress() {
  mkdir -p "$(dirname "$progress_log")"
  if [ -z "${progress_told:-}" ]; then
    progress_told=1
    log "full output in $progress_log"
  fi
  tee -a "$progress_log" | awk -v shown=-1 -v RS='[\r\n]+' '
    /^\[blackwell / { print; fflush(); next }
    match($0, /[0-9]+(\.[0-9]+)?%/) {
      p = substr($0, RSTART, RLENGTH - 1) + 0
      if (p <= 100 && int(p / 10) > shown) { shown = int(p / 10); print; fflush() }
      next
    }
    /^(Loaded image|#[0-9]+ \[|Step [0-9]+\/[0-9]+|Successfully (built|tagged))/ { print; fflush() }
  ' >&2
}
bws_cleanup=""
trap() {
  if [ "$#" -eq 2 ] && [ "$2" = EXIT ]; then
    bws_cleanup=$1
    builtin trap bws_exit EXIT
  else
    # shellcheck disable=SC2064 # the caller's words, as the caller quoted them
    builtin trap "$@"
  fi
}
bws_failed_command=""
set -o errtrace
trap 'bws_failed_command=$BASH_COMMAND' ERR
# In a step, its timeout's TERM ends the script through the block (outside one, as before).
[ -z "${BWS_DOING:-}" ] || trap 'exit 143' TERM
trap : EXIT
# The log file is appended to by every run: this run's lines are those after its present size.
bws_log_from=1
if [ -n "${progress_log:-}" ] && [ -f "$progress_log" ]; then
  bws_log_from=$(($(stat -c %s "$progress_log") + 1))
fi
bws_log_tail() {
  [ -z "${progress_log:-}" ] || tail -c "+$bws_log_from" "$progress_log" 2>/dev/null | tail -c 8000 | tr '\r' '\n' |
    grep -v '^[[:space:]]*$' || true
}
bws_missing() {
  # The command a status 127 did not find: named by bash in the log, or the failed command's first word.
  local c
  for c in $(bws_log_tail | sed -n 's/^.*: \([^ :]*\): command not found$/\1/p' | tail -n 3
             printf '%s\n' "${bws_failed_command%% *}"); do
    command -v "$c" >/dev/null 2>&1 || { printf '%s\n' "$c"; return 0; }
  done
}
bws_exit() {
  local rc=$? missing="" package="" meaning=""
  set +e +o errtrace
  builtin trap - ERR
  eval "$bws_cleanup"
  # Once per step: not for a subshell's own exit, nor outside a step.
  [ "$rc" -ne 0 ] && [ -n "${BWS_DOING:-}" ] && [ "$BASHPID" = "$$" ] || return 0
  case $rc in
    127) missing=$(bws_missing); meaning="a command was not found${missing:+: $missing}" ;;
    126) meaning="a command could not be run (not executable)" ;;
    143) meaning="ended by SIGTERM: the step's timeout, or the run was stopped" ;;
    *) meaning="${bws_failed_command:+the command that failed: ${bws_failed_command:0:160}}" ;;
  esac
  # The Debian package of each command this script names (templates/node-packages.txt; render.py).
  case $missing in
    docker) package=docker.io ;;
    awk) package=mawk ;;
    python3) package=python3 ;;
    ssh) package=openssh-client ;;
    pv) package=pv ;;
    apt-get) package=apt ;;
    *) ;;
  esac
  printf '\n%s\n' "FAILED: $BWS_DOING"
  printf '  node:   %s\n' "${BWS_NODE:-?}"
  printf '  status: exit %s%s\n' "$rc" "${meaning:+ ($meaning)}"
  # Its last words: the script's own reason, often with its fix (not where the log file is).
  local last=() line n=0
  for line in "${bws_said[@]}"; do
    case $line in "full output in "*) ;; *) last[n++]=$line ;; esac
  done
  for line in "${last[@]:$((n > 2 ? n - 2 : 0))}"; do
    printf '  said:   %s\n' "${line:0:400}"
  done
  local tail_lines
  tail_lines=$(bws_log_tail | tail -n 12 | cut -c1-300)
  if [ -n "$tail_lines" ]; then
    printf '  log:    last lines of %s\n' "$progress_log"
    printf '%s\n' "$tail_lines" | sed 's/^/    | /'
  fi
  if [ -n "$package" ]; then
    printf '  fix:    install the Debian package %s on %s (apt-get install %s); then run pulumi up again\n' "$package" "${BWS_NODE:-the node}" "$package"
  elif [ -n "$missing" ]; then
    printf '  fix:    install %s on %s (it is not on PATH there); then run pulumi up again\n' "$missing" \
      "${BWS_NODE:-the node}"
  fi
}
peer_known_hosts=$(mktemp)
trap 'rm -f "$peer_known_hosts"' EXIT
printf '%s %s\n' 192.168.200.13 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ3rWm2yq0G7w8s0c6XbQf7l0p2F7m9m4TtQ8VbAzg2B' > "$peer_known_hosts"
peer_ssh=(ssh -F /dev/null -i /root/.ssh/id_ed25519 -o IdentitiesOnly=yes -o BatchMode=yes
          -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$peer_known_hosts"
          -o GlobalKnownHostsFile=/dev/null -o ConnectTimeout=10 -o ServerAliveInterval=15
          -o ServerAliveCountMax=4 -o Compression=no -o LogLevel=ERROR)
peer() { "${peer_ssh[@]}" root@192.168.200.13 "$@"; }
image_id() {
  timeout 20 docker image inspect --format '{{.Id}}' "$1" 2>/dev/null
}
want=$(image_id blackwell-serving/sglang-spark:3179620c3637)
have=$(peer "$(declare -f image_id); image_id" blackwell-serving/sglang-spark:3179620c3637 2>/dev/null || true)
had=$have
staging_root=/var/lib/blackwell-serving/image-staging
stage="$staging_root/${want#sha256:}"
if [ "$have" = "$want" ]; then
  # What an interrupted run staged is not needed any more (its copy may have ended after all).
  peer rm -rf "$(printf %q "$stage")"
  log "already there ($want)"
  echo "image-id=$want"
  exit 0
fi
size=$(docker image inspect --format '{{.Size}}' blackwell-serving/sglang-spark:3179620c3637)
start=$(date +%s)
if command -v python3 >/dev/null 2>&1 && peer command -v python3 >/dev/null 2>&1; then
  work=$(mktemp -d)
  trap 'rm -f "$peer_known_hosts"; rm -rf "$work"' EXIT
  cat > "$work/image_layers.py" <<'IMAGE_LAYERS_PY'
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

The layer registry on the build node (fabric.layer_registry; ADDR: its 127.0.0.1:PORT, REPO: the
image's repository there). `docker save` exports every layer, even those the peer holds; `docker
push` uploads only what the registry lacks. So once the registry holds the layers the image
shares with the peer, the image is pushed and only the layers the peer lacks are read back
(urllib, every request and read bounded by HTTP_TIMEOUT_S):
  registry-plan ADDR REPO FACTS  prints `registry` when the registry answers and holds every
      layer chain the image shares with the peer (at least one: else there is nothing to gain),
      else `filter`; stderr: why, in one line.
  registry-send ADDR REPO TAG STEP FACTS RESULT  stdout: a `docker load` archive of REPO:TAG
      (the image just pushed): manifest.json, the config, and the gzip blobs of the layers the
      peer neither holds nor has staged, as `BLOBHEX/layer.tar` (`docker load` takes gzip
      layer files and looks every layer up by chain ID first; `receive` stages and puts back
      these as any other). Each blob is checked against its digest as it streams, its last block
      held back until it matches. RESULT: `sent-bytes=N` and `skipped-bytes=N`; or
      `unreachable=WHY` (the registry failed: the script falls back to `docker save`) or
      `digest-mismatch=DIGEST` (a blob differs from its digest: the copy fails), exit 1.
  FACTS also has `tag REF`, the image's tag (the archive's RepoTags).

No third-party package: the nodes' python3 only.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import sys
import tarfile
import urllib.error
import urllib.request
from typing import NamedTuple

BLOCK = 1 << 20
STREAM = "stream.tar.part"               # what `tee` keeps of a whole-image copy on the peer
MANIFEST_V2 = "application/vnd.docker.distribution.manifest.v2+json"
HTTP_TIMEOUT_S = 30                      # for each request and each read of a response


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


class Facts(NamedTuple):
    diff_ids: list[str]                  # the image's layers
    held: set[str]                       # the chain IDs of every layer of every image on the peer
    staged: set[str]                     # what the peer has staged (layer directory or blob hex)
    tag: str                             # the image's tag


def read_facts(path: str) -> Facts:
    diff_ids: list[str] = []
    held: set[str] = set()
    staged: set[str] = set()
    tag = ""
    with open(path) as f:
        for line in f:
            kind, _, value = line.strip().partition(" ")
            if kind == "image":
                diff_ids = json.loads(value)
            elif kind == "peer" and value.startswith("["):
                held.update(chain_ids(json.loads(value)))
            elif kind == "staged" and value:
                staged.add(value)
            elif kind == "tag":
                tag = value
    if not diff_ids:
        raise SystemExit(f"{path}: no `image` line with the image's layers")
    return Facts(diff_ids, held, staged, tag)


def send(image_id: str, step: str, facts: str, result: str) -> int:
    diff_ids, held, staged, _ = read_facts(facts)
    chains = chain_ids(diff_ids)
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
    summary(step, result, sent, skipped, staged_bytes, f"{total >> 20} MiB in the image {image_id[:19]}")
    return 0


def summary(step: str, result: str, sent: int, skipped: int, staged: int, whole: str) -> None:
    say(step, f"sent {sent >> 20} MiB of layers; left out {skipped >> 20} MiB the peer holds "
              f"and {staged >> 20} MiB staged there ({whole})")
    with open(result, "w") as f:
        f.write(f"sent-bytes={sent}\nskipped-bytes={skipped + staged}\n")


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
    diff_ids, held, staged, _ = read_facts(facts)
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


# ---------------------------------------------------------------------------------------------
# The layer registry on the build node (registry-plan, registry-send)

class RegistryError(Exception):
    """The registry did not answer as a registry does: down, too slow, or an unexpected reply."""

    def __init__(self, what: str, status: int | None = None):
        super().__init__(" ".join(what.split()))
        self.status = status


class DigestMismatch(Exception):
    pass


# The registry is on loopback: never through a proxy the environment names.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def get(url: str, accept: str | None = None):
    try:
        return _OPENER.open(urllib.request.Request(url, headers={"Accept": accept} if accept else {}),
                            timeout=HTTP_TIMEOUT_S)
    except urllib.error.HTTPError as e:
        raise RegistryError(f"GET {url}: HTTP {e.code}", e.code) from None
    except (OSError, http.client.HTTPException) as e:
        raise RegistryError(f"GET {url}: {e}") from None


class _Blob:
    """A blob as it streams from the registry: exactly `size` bytes, whose sha256 is checked
    before the last of them is passed on, so a blob that differs never reaches the peer whole."""

    def __init__(self, response, digest: str, size: int):
        if not digest.startswith("sha256:"):
            raise RegistryError(f"blob {digest}: not a sha256 digest")
        self.response, self.digest, self.left, self.sha = response, digest, size, hashlib.sha256()

    def read(self, n: int = -1) -> bytes:
        want = self.left if n is None or n < 0 else min(n, self.left)
        parts, got = [], 0
        while got < want:
            try:
                part = self.response.read(want - got)
            except (OSError, http.client.HTTPException) as e:
                raise RegistryError(f"reading blob {self.digest}: {e}") from None
            if not part:
                raise RegistryError(f"blob {self.digest} ended {self.left - got} bytes early")
            parts.append(part)
            got += len(part)
        block = b"".join(parts)
        self.sha.update(block)
        self.left -= len(block)
        if want and not self.left and "sha256:" + self.sha.hexdigest() != self.digest:
            raise DigestMismatch(self.digest)
        return block


def blob(base: str, digest: str, size: int) -> bytes:
    with get(f"{base}/blobs/{digest}") as r:
        return _Blob(r, digest, size).read()


class Image(NamedTuple):
    config: tuple[str, bytes]            # digest, the config itself (checked against the digest)
    layers: list[tuple[str, int]]        # digest and size of each gzip blob, in order
    diff_ids: list[str]


def image_in_registry(base: str, ref: str) -> Image:
    try:
        with get(f"{base}/manifests/{ref}", MANIFEST_V2) as r:
            manifest = json.loads(r.read())
        digest = manifest["config"]["digest"]
        config = blob(base, digest, int(manifest["config"]["size"]))
        diff_ids = json.loads(config)["rootfs"]["diff_ids"]
        layers = [(layer["digest"], int(layer["size"])) for layer in manifest["layers"]]
    except (KeyError, TypeError, ValueError, OSError, http.client.HTTPException) as e:
        raise RegistryError(f"{ref}: not an image manifest of the registry API v2 ({e!r})") from None
    if len(layers) != len(diff_ids):
        raise RegistryError(f"{ref}: {len(layers)} layers for {len(diff_ids)} diff IDs")
    return Image((digest, config), layers, diff_ids)


def registry_chains(base: str) -> set[str]:
    """The chain IDs of every layer of every tag of the repository (none when it does not exist)."""
    try:
        with get(f"{base}/tags/list") as r:
            tags = json.loads(r.read()).get("tags") or []
    except RegistryError as e:
        if e.status == 404:
            return set()
        raise
    except (ValueError, AttributeError, OSError, http.client.HTTPException) as e:
        raise RegistryError(f"{base}/tags/list: {e!r}") from None
    return {c for t in tags for c in chain_ids(image_in_registry(base, t).diff_ids)}


def registry_plan(addr: str, repo: str, facts: str) -> int:
    f = read_facts(facts)
    shared = f.held & set(chain_ids(f.diff_ids))
    try:
        missing = shared - registry_chains(f"http://{addr}/v2/{repo}")
    except (RegistryError, DigestMismatch) as e:
        method, why = "filter", f"{addr} cannot be used ({type(e).__name__}: {e}): docker save"
    else:
        method = "registry" if shared and not missing else "filter"
        why = (f"holds the {len(shared)} layers the image shares with the peer: only the others are pushed and sent"
               if method == "registry" else "the peer holds no layer of the image: docker save" if not shared else
               f"lacks {len(missing)} of the {len(shared)} layers the image shares with the peer: docker save")
    print(method)
    print(why, file=sys.stderr)
    return 0


def hex_of(digest: str) -> str:
    return digest.split(":", 1)[-1]


def add_bytes(out: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), 0o644
    out.addfile(info, _Bytes(data))


def registry_send(addr: str, repo: str, tag: str, step: str, facts: str, result: str) -> int:
    f = read_facts(facts)
    base = f"http://{addr}/v2/{repo}"
    try:
        image = image_in_registry(base, tag)
        if image.diff_ids != f.diff_ids:
            raise RegistryError(f"{repo}:{tag} in the registry is not the image {f.tag}")
        names = [f"{hex_of(digest)}/layer.tar" for digest, _ in image.layers]
        config_name = f"{hex_of(image.config[0])}.json"
        out = tarfile.open(fileobj=sys.stdout.buffer, mode="w|", format=tarfile.GNU_FORMAT, bufsize=BLOCK,
                           copybufsize=BLOCK)
        # RepoTags as `docker save` writes them: a reference by digest is no tag.
        tags = [f.tag] if f.tag and "@" not in f.tag else []
        add_bytes(out, "manifest.json", json.dumps([{"Config": config_name, "Layers": names, "RepoTags": tags}]).encode())
        add_bytes(out, config_name, image.config[1])
        sent = skipped = staged = 0
        for (digest, size), chain, name in zip(image.layers, chain_ids(image.diff_ids), names):
            top = name.partition("/")[0]
            if chain in f.held:
                skipped += size
            elif top in f.staged:
                staged += size
                say(step, f"layer {top[:12]} ({size >> 20} MiB) already staged on the peer")
            else:
                say(step, f"sending layer {top[:12]} ({size >> 20} MiB)")
                info = tarfile.TarInfo(name)
                info.size, info.mode = size, 0o644
                with get(f"{base}/blobs/{digest}") as r:
                    out.addfile(info, _Blob(r, digest, size))
                sent += size
        out.close()
        sys.stdout.buffer.flush()
    except RegistryError as e:
        return registry_failed(step, result, "unreachable", str(e))
    except DigestMismatch as e:
        return registry_failed(step, result, "digest-mismatch", str(e))
    total = sum(size for _, size in image.layers)
    summary(step, result, sent, skipped, staged, f"{total >> 20} MiB of gzip layers in {repo}:{tag}")
    return 0


def registry_failed(step: str, result: str, kind: str, what: str) -> int:
    """The archive is left unfinished (the peer's `receive` and `docker load` fail on it)."""
    say(step, f"layer registry: {kind}: {what}")
    with open(result, "w") as f:
        f.write(f"{kind}={what}\n")
    return 1


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "plan":
        return plan(argv[1])
    if len(argv) == 2 and argv[0] == "split":
        return split(argv[1])
    if len(argv) == 5 and argv[0] == "send":
        return send(*argv[1:])
    if len(argv) == 3 and argv[0] == "receive":
        return receive(argv[1], argv[2])
    if len(argv) == 4 and argv[0] == "registry-plan":
        return registry_plan(*argv[1:])
    if len(argv) == 7 and argv[0] == "registry-send":
        return registry_send(*argv[1:])
    print("usage: image_layers.py send IMAGE_ID STEP FACTS RESULT | receive STAGING STEP | plan FACTS"
          " | split STAGING | registry-plan ADDR REPO FACTS | registry-send ADDR REPO TAG STEP FACTS RESULT",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
IMAGE_LAYERS_PY
  # What the peer holds: the layers of each of its images, and what an interrupted copy of this
  # image staged there (staging left by copies of other images is dropped).
  code=$(cat "$work/image_layers.py")
  peer "mkdir -p $(printf %q "$staging_root") && find $(printf %q "$staging_root") -mindepth 1 -maxdepth 1 ! -name $(printf %q "${want#sha256:}") -exec rm -rf {} +"
  # A whole-image stream an interrupted copy kept: cut into the layer files it holds whole.
  peer "if [ -f $(printf %q "$stage/stream.tar.part") ]; then python3 -c $(printf %q "$code") split $(printf %q "$stage"); fi"
  {
    echo "image $(docker image inspect --format '{{json .RootFS.Layers}}' blackwell-serving/sglang-spark:3179620c3637)"
    ids=$(peer docker image ls -aq --no-trunc | sort -u)
    if [ -n "$ids" ]; then
      # shellcheck disable=SC2086 # image IDs: one word each
      peer docker image inspect --format ''"'"'{{json .RootFS.Layers}}'"'"'' $ids | sed 's/^/peer /'
    fi
    peer "ls $(printf %q "$stage") 2>/dev/null || true" | sed -n 's/^\([0-9a-f]\{64\}\)\.tar$/staged \1/p'
    printf 'tag %s\n' blackwell-serving/sglang-spark:3179620c3637
  } > "$work/facts"
  step_name='image blackwell-serving/sglang-spark:3179620c3637 -> spark-5be3'
  # On the peer: the layer files kept in staging as they pass, the stream loaded.
  receive() {
    peer "set -o pipefail; python3 -c $(printf %q "$code") receive $(printf %q "$stage") $(printf %q "$step_name") | docker load"
  }
  method=$(python3 "$work/image_layers.py" plan "$work/facts") || method=filter
  layer_registry=127.0.0.1:5055
  drop_layer_refs() {
    docker image ls --digests --format '{{.Repository}} {{.Tag}} {{.Digest}}' \
      | awk -v r="$layer_registry/$1" '$1 == r || index($1, r "/") == 1 {
          if ($2 != "<none>") print $1 ":" $2
          if ($3 != "<none>") print $1 "@" $3
        }' | xargs -r docker image rm >/dev/null 2>&1 || true
  }
  push_layers() {
    local id=${3#sha256:} rc=0
    docker tag "$1" "$layer_registry/$2:${id:0:12}" || return 1
    docker push "$layer_registry/$2:${id:0:12}" 2>&1 | progress || rc=$?
    drop_layer_refs "$2"
    return "$rc"
  }
  repo=bws/sglang-spark
  if [ "$method" = filter ]; then
    method=$(python3 "$work/image_layers.py" registry-plan "$layer_registry" "$repo" "$work/facts" 2>"$work/why") \
      || method=filter
    log "layer registry: $(tail -n 1 "$work/why")"
  fi
  if [ "$method" = registry ] && ! push_layers blackwell-serving/sglang-spark:3179620c3637 "$repo" "$want"; then
    log "the push to the layer registry failed: docker save instead"
    method=filter
  fi
  if [ "$method" = registry ]; then
    log "copying the layers of $((size / 1048576)) MiB that the peer lacks from the layer registry over the fabric"
    rc=0
    { python3 "$work/image_layers.py" registry-send "$layer_registry" "$repo" "${want:7:12}" "$step_name" \
        "$work/facts" "$work/result" | receive; } 2>&1 | progress || rc=$?
    if grep -q '^digest-mismatch=' "$work/result" 2>/dev/null; then
      peer rm -rf "$(printf %q "$stage")"
      log "layer $(sed -n 's/^digest-mismatch=//p' "$work/result") read from the layer registry does not match its digest; the copy stopped and the peer's staging is cleared. fix: remove the layer registry on this node (docker rm -f bws-layer-registry and its storage, fabric.layer_registry.storage) and run up again: it starts empty, and this copy uses docker save"
      exit 1
    elif grep -q '^unreachable=' "$work/result" 2>/dev/null; then
      log "the layer registry stopped answering ($(sed -n 's/^unreachable=//p' "$work/result")): docker save instead"
      method=filter
    elif [ "$rc" -ne 0 ]; then
      exit "$rc"
    fi
    sent=$(sed -n 's/^sent-bytes=//p' "$work/result")
  fi
  if [ "$method" = whole ]; then
    # The peer holds none of it: plain `docker save`, kept on the peer by `tee` as it passes
    # (split into layer files by the next run if this one is interrupted). No Python pass.
    log "copying all $((size / 1048576)) MiB (the peer holds no layer of it) over the fabric"
    { docker save blackwell-serving/sglang-spark:3179620c3637 \
        | peer "set -o pipefail; mkdir -p $(printf %q "$stage") && tee $(printf %q "$stage/stream.tar.part") | docker load"; } 2>&1 | progress
    sent=$size
  elif [ "$method" != registry ]; then
    log "copying the layers of $((size / 1048576)) MiB that the peer lacks over the fabric"
    { docker save blackwell-serving/sglang-spark:3179620c3637 \
        | python3 "$work/image_layers.py" send "$want" "$step_name" "$work/facts" "$work/result" | receive; } 2>&1 | progress
    sent=$(sed -n 's/^sent-bytes=//p' "$work/result")
  fi
else
  log "copying $((size / 1048576)) MiB over the fabric (whole image: no python3 on both sides)"
  if command -v pv >/dev/null 2>&1; then
    { docker save blackwell-serving/sglang-spark:3179620c3637 | pv -f -s "$size" -i 10 | peer docker load; } 2>&1 | progress
  else
    docker save blackwell-serving/sglang-spark:3179620c3637 | peer docker load 2>&1 | progress
  fi
  sent=$size
fi
have=$(peer "$(declare -f image_id); image_id" blackwell-serving/sglang-spark:3179620c3637)
if [ "$have" != "$want" ]; then
  log "peer has $have after the copy, expected $want"
  exit 1
fi
peer rm -rf "$(printf %q "$stage")"
log "copied in $(( $(date +%s) - start )) s"
if [ -n "$had" ]; then
  # The image this tag named before: gone unless something still uses it.
  peer docker image rm "$had" >/dev/null 2>&1 || true
fi
echo "image-id=$want"
echo "sent-bytes=$sent"
