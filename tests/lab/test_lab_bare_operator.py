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
It runs against nodes the lab already serves from: its `up` rewrites what they have, and the
checks below read that `up`'s own record in the container's own state (its history and its
resources), never what the nodes already answer.

It runs only when asked (LAB_OPT_IN: `BWS_BARE_OPERATOR=1 bash scripts/test.sh
tests/lab/test_lab_bare_operator.py`), not in the default suite nor in CI. Its `up`, from a state
of its own, rewrites every step's work on the shared nodes under the operator's `lab` state: in a
full run of 2026-12-07 the e2e tests that followed it failed from their 13th on (the same tests pass
on the lab re-converged by the operator's state alone). (CI's refusals of SSH while its container
ran were not this test's doing: a dead Docker daemon's ghost nodes on the lab's bridge, pruned since
by tests/lab/networks.sh; tests/lab/README.md.) Until it has a lab of its own (or runs
after the destroy and destroys in turn, about 9 minutes more), it runs alone, followed by
`bash scripts/run-lab.sh`.

What it does not cover: the lab itself. The container is the operator's machine, not the lab's
host: it is told the lab's nodes are up (BLACKWELL_LAB_STARTED=1), so neither `tests/lab/lab up`
nor `tests/lab/engine/prepare.sh` (the nodes' rootfs, the engine images, the registry) runs in it;
those run on the host, and CI's cold run (`.ci/run`, empty BLACKWELL_CACHE) is what proves them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.lab import topology as lab
from tests.lab.helpers import REPO, check_lab, completion, docker, minbase_image, node_state, require_lab

pytestmark = pytest.mark.lab
LAB_STATE = "converged"  # tests/lab/conftest.py: the lab tests run grouped by the state they share
LAB_OPT_IN = "BWS_BARE_OPERATOR"  # only when asked: see the docstring


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
        f"\n(whole output: {lab.STATE_DIR / 'bare-operator.log'})\n" + \
        f"the lab's nodes now: {[node_state(n) for n in lab.nodes(2)]}; tests/lab/lab check: {check_lab()[1]}"
    assert "command not found" not in out and "Traceback" not in out
    # The machine was bare: rsync, which the upload needs, came from our package install.
    installed = [line for line in out.splitlines() if line.startswith("[setup] installing Debian packages:")]
    assert installed and "rsync" in installed[0].split(), installed
    # The `up`'s own record, in the container's own state: the update succeeded and only created
    # (nothing kept from before: every step ran), at least one resource per step in the state.
    update, resources = operator_record()
    assert update["kind"] == "update" and update["result"] == "succeeded", update
    assert set(update["resourceChanges"]) == {"create"}, update["resourceChanges"]
    steps = [r for r in resources if r["type"].startswith("command:")]
    assert update["resourceChanges"]["create"] >= len(steps) > 0, (update["resourceChanges"], len(steps))
    # The upload of the local model from the operator's machine, with rsync, is one of them (its
    # script travels on the step's stdin, a secret in the state: read decrypted, never shown whole).
    [upload] = [str(r["inputs"].get("stdin", "")) for r in resources if r["urn"].endswith("::tiny-upload")]
    assert "rsync" in upload, f"no rsync in the upload's script ({len(upload)} characters)"
    # The health gate of this `up` (its output is this run's) got a real completion.
    [said] = [str(r.get("outputs", {}).get("stdout", "")) for r in resources if r["urn"].endswith("::tiny-health")]
    assert '"choices"' in said, said[-2000:]
    # and the lab serves, as the operator's machine left it
    assert completion()["choices"][0]["message"]["content"]


def operator_record() -> tuple[dict, list[dict]]:
    """The last update of the container's `lab` stack and the resources of its state (secrets
    decrypted with the container's passphrase: never printed whole), read with the container's
    own CLI and backend."""
    read = ("source scripts/env.sh lab >/dev/null && pulumi stack history --stack lab --json --page-size 1 "
            "&& echo BWS-SPLIT && pulumi stack export --stack lab --show-secrets")
    done = in_operator(read, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "BWS-SPLIT" in done.stdout, done.stdout[:2000]
    history, state = done.stdout.split("BWS-SPLIT", 1)
    return json.loads(history)[0], json.loads(state)["deployment"]["resources"]
