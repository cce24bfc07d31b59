"""A fresh operator machine, for real: a bare Debian container (the lab's own debootstrap
minbase, nothing installed on it) on the lab's management network is the operator's machine. In
it, the README's main job (`bash scripts/run-lab.sh`, told that the lab's nodes are already up on
this host) must set everything up with our own scripts and run a preview and an `up` of the
`lab` stack against the lab's nodes, from a state of its own: every step runs, the upload of the
local model with rsync among them. A command our scripts use that they do not install fails it.

What the container gets from this machine, and why it is no installed package: a copy of the
project's tracked files (no .engine, .venv or .state) with the lab's keys and local models (the
lab's, as an operator would hold them); Go (the README asks the machine for it) read-only; the
source trees of the two Pulumi pieces (as on any machine, BLACKWELL_VENDOR_DIR); this machine's
CA bundle (its TLS proxy); and, to keep it fast, this machine's Go module cache read-only as a
module proxy and a copy of its Go build cache (caches: the build still runs, it compiles less).
It runs first among the lab tests (by its name), when the lab is converged (`bash
scripts/run-lab.sh` in CI): its `up` then rewrites what the nodes already have."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.lab import topology as lab
from tests.lab.helpers import REPO, completion, require_lab

CONTAINER = "bws-lab-operator"
# What an operator holds of the lab: its SSH key and host keys, its API keys, and the local models
# the lab stack uploads (lab_models()).
LAB_KEYS = ["id_ed25519", "id_ed25519.pub", "known_hosts", "api-key", "gateway-key"]


def lab_models() -> list[str]:
    """The lab's files that the lab stack's local model sources name (the tiny model, its GGUF
    form, any added later): read from the stack file, so a new one cannot be forgotten here."""
    config = yaml.safe_load((REPO / "stacks" / "Pulumi.lab.yaml").read_text())["config"]
    state = Path(lab.ENV["LAB_STATE_DIR"])
    return sorted({Path(m["source"]["path"]).relative_to(state).parts[0]
                   for m in config["blackwell-serving:models"] if m.get("source", {}).get("kind") == "local"})


def docker(*args: str, timeout: int = 120, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"docker {' '.join(args[:3])}: {done.stderr[-2000:]}")
    return done


def minbase_image() -> str:
    """The lab's debootstrap minbase (tests/lab/engine/prepare.sh builds it for the lab images)."""
    tags = docker("images", "bws-lab/bookworm-minbase", "--format", "{{.Repository}}:{{.Tag}}").stdout.split()
    if not tags:
        pytest.fail("no bws-lab/bookworm-minbase image; fix: tests/lab/lab up (its engine step builds it)")
    return tags[0]


def project_copy(dest: Path) -> Path:
    """The project's tracked (and new, not ignored) files, and the lab's files an operator holds."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, check=True,
                           capture_output=True, text=True).stdout.split("\0")
    for name in filter(None, files):
        src = REPO / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    state = dest / lab.ENV["LAB_STATE_DIR"]
    state.mkdir(parents=True, exist_ok=True)
    for name in LAB_KEYS + lab_models():
        src = lab.STATE_DIR / name
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, state / name)
    return dest


def go_paths() -> tuple[str, Path]:
    goroot = subprocess.run(["go", "env", "GOROOT"], capture_output=True, text=True, check=True).stdout.strip()
    return goroot, Path(os.environ.get("BLACKWELL_CACHE", "/var/cache/blackwell-serving")) / "go"


def vendor_dir() -> Path:
    done = subprocess.run(["bash", "scripts/install-engine.sh", "--vendor-dir", "pulumi-language-python"],
                          cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip()).parent


@pytest.fixture(scope="module")
def operator(tmp_path_factory):
    require_lab(*lab.nodes(2))
    project = project_copy(tmp_path_factory.mktemp("operator") / "blackwell-serving")
    goroot, gocache = go_paths()
    docker("rm", "-f", CONTAINER, check=False)
    docker("run", "-d", "--name", CONTAINER, "--network", lab.ENV["LAB_MGMT_NET"],
           "-v", f"{project}:/root/blackwell-serving",
           "-v", f"{goroot}:/usr/local/go:ro",
           "-v", f"{vendor_dir()}:/vendor:ro",
           "-v", f"{gocache}:/host-go:ro",
           "-v", "/etc/ssl/certs/ca-certificates.crt:/etc/host-ca.crt:ro",
           minbase_image(), "sleep", "infinity")
    try:
        yield project
    finally:
        docker("rm", "-f", CONTAINER, check=False)


def in_operator(script: str, timeout: int) -> subprocess.CompletedProcess:
    env = {
        "PATH": "/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": "/root", "LANG": "C.UTF-8",
        "BLACKWELL_VENDOR_DIR": "/vendor",
        # Go modules from this machine's cache, as a module proxy; checksums still checked (via
        # the real proxy's sumdb, the next in the list).
        "GOPROXY": "file:///host-go/mod/cache/download,https://proxy.golang.org",
        # this machine's TLS proxy
        "PIP_CERT": "/etc/host-ca.crt", "SSL_CERT_FILE": "/etc/host-ca.crt", "REQUESTS_CA_BUNDLE": "/etc/host-ca.crt",
        "GIT_SSL_CAINFO": "/etc/host-ca.crt", "CURL_CA_BUNDLE": "/etc/host-ca.crt",
    }
    argv = ["exec", *(a for k, v in env.items() for a in ("-e", f"{k}={v}")), "-w", "/root/blackwell-serving",
            CONTAINER, "bash", "-c", script]
    return docker(*argv, timeout=timeout, check=False)


def test_the_machine_starts_bare(operator):
    done = in_operator("for c in rsync ssh git curl shellcheck docker python3 pulumi; do "
                       "command -v $c || echo missing=$c; done", timeout=60)
    assert done.stdout.split() == [f"missing={c}" for c in
                                   ("rsync", "ssh", "git", "curl", "shellcheck", "docker", "python3", "pulumi")]


def test_the_readme_main_job_converges_from_the_bare_machine(operator):
    # A copy of this machine's Go build cache: a cache, not an install (the build still runs).
    seed = "mkdir -p /var/cache/blackwell-serving/go && cp -a /host-go/build /var/cache/blackwell-serving/go/build"
    done = in_operator(f"{seed} && BLACKWELL_LAB_STARTED=1 bash scripts/run-lab.sh", timeout=3000)
    out = done.stdout + done.stderr
    # The whole output stays beside the lab's keys (git-ignored) for whoever reads a failure.
    (lab.STATE_DIR / "bare-operator.log").write_text(out)
    errors = [line for line in out.splitlines() if "error" in line.lower()][:40]
    assert done.returncode == 0, "\n".join(errors) + "\n...\n" + out[-3000:] + \
        f"\n(whole output: {lab.STATE_DIR / 'bare-operator.log'})"
    assert "[setup] installing Debian packages:" in out and "rsync" in out
    assert "command not found" not in out and "Traceback" not in out
    # the upload from the operator's machine ran (its state is its own: every step ran)
    assert "tiny-upload" in out or "Upload model tiny" in out, out[-4000:]
    assert "Hello" in out or "choices" in out, out[-3000:]
    # and the lab serves, as the operator's machine left it
    assert completion()["choices"][0]["message"]["content"]
