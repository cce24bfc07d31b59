"""The Hugging Face token on the lab, on the real engine: a hub model downloaded by the real
huggingface_hub on lab-1 from a Hub stand-in on this machine (tests/lab/hub.py: the Hub is not
reachable from here), pointed at by the model's `source.endpoint`, with a sentinel token as the
model's `hf_token`. The stand-in shows that the token reached the downloader; after the `up` the
token is in no container's config, no process's arguments, no journal, no step log, no file left
on the nodes, and not in the state or the outputs in plain text. Then the engine serves the
downloaded model (the up's health gate). A one-node variant of the lab stack, as its own stack."""

from __future__ import annotations

import os

import pytest

from tests.lab import topology as lab
from tests.lab.helpers import Stack, api_key, base_image_only, destroy_lab_stack, one_node, require_lab, sh
from tests.lab.hub import HubStandIn

pytestmark = pytest.mark.lab
LAB_STATE = "clean"  # tests/lab/conftest.py: the lab tests run grouped by the state they share

NODE1, NODE2 = lab.nodes(2)
REPO_ID = "blackwell-lab/tiny-llama-hub"
COMMIT = "5e17b0c0ffee5e17b0c0ffee5e17b0c0ffee5e17"


@pytest.fixture(scope="module")
def lab_clean():
    require_lab(NODE1, NODE2)
    api_key()
    destroy_lab_stack()


def test_a_hub_download_uses_the_token_and_leaves_it_nowhere(lab_clean, tmp_path):
    token = "hf_bwsSentinel" + os.urandom(12).hex()
    token_file = tmp_path / "hf-token"
    token_file.write_text(token + "\n")
    token_file.chmod(0o600)
    with HubStandIn(REPO_ID, COMMIT, lab.STATE_DIR / "tiny-model", host=lab.ENV["LAB_MGMT_GATEWAY"]) as hub:
        def from_the_hub(c):
            one_node(c)
            base_image_only(c)
            c["blackwell-serving:models"][0].update(
                repo=REPO_ID, revision=COMMIT, hf_token={"file": str(token_file)},
                source={"kind": "hub", "endpoint": hub.url})

        stack = Stack(tmp_path, "lab-hub", from_the_hub)
        try:
            todo = stack.todo()
            assert f"Download model tiny ({REPO_ID}) on lab-1 from {hub.url}" in todo, todo[-3000:]
            # The preview's fit check read config.json and the weights' size from the same mirror.
            preview = stack.run("preview")
            assert preview.returncode == 0, preview.stdout[-3000:] + preview.stderr[-2000:]
            assert f"fit of tiny (hub {REPO_ID}@{COMMIT[:12]}): fits" in preview.stdout, preview.stdout[-3000:]
            up = stack.run("up", "--yes", "--skip-preview")
            assert up.returncode == 0, up.stdout[-4000:] + up.stderr[-2000:]
            # The token reached the Hub: every request for the model (its tree, its files) carried it.
            # (huggingface_hub also asks for things of its own, such as /api/agent-harnesses: no token needed.)
            model_requests = [(m, p, a) for m, p, a in hub.requests if REPO_ID in p]
            assert model_requests and {a for _, _, a in model_requests} == {f"Bearer {token}"}, \
                [(m, p) for m, p, a in model_requests if a != f"Bearer {token}"]

            cache = f"/var/lib/blackwell-serving/models/{REPO_ID.replace('/', '--')}--{COMMIT}"
            assert sh(NODE1, f"cd {cache} && sha256sum -c --quiet .blackwell-manifest.sha256 && echo ok") == "ok"
            for node in (NODE1, NODE2):
                for what, command in (
                        ("docker inspect", "docker ps -aq | xargs -r docker inspect"),
                        ("ps", "ps -eo args"),
                        ("the journal", "journalctl --no-pager -q -o cat")):
                    assert token not in sh(node, command), f"the HF token shows in {what} on {node.name}"
                # Where a script could leave it in a file: temporary files, root's home, configs,
                # the step logs, the model caches (not the venvs: gigabytes of torch).
                found = sh(node, f"timeout 100 grep -rIl -D skip -e {token} /tmp /run /root /etc /var/log "
                                 "/var/lib/blackwell-serving/models 2>/dev/null; echo rc=$?").splitlines()
                assert found[-1] in ("rc=1", "rc=2") and found[:-1] == [], f"the HF token is in {found} on {node.name}"
            for args in (("stack", "export"), ("stack", "output", "--json")):
                shown = stack.run(*args)
                assert shown.returncode == 0 and token not in shown.stdout, args
        finally:
            stack.destroy()
