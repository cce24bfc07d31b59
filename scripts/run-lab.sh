#!/usr/bin/env bash
# The main job: set everything up, start the lab, then preview and `up` the embedded `lab`
# stack on the real Pulumi engine, and show the endpoint with a sample completion.
# Idempotent: run it again and the `up` has nothing to do.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
phase_start=$SECONDS
took() {  # took WHAT: how long the phase that just ended took
  printf '[main] %s: %d m %02d s\n' "$1" $(((SECONDS - phase_start) / 60)) $(((SECONDS - phase_start) % 60)) >&2
  phase_start=$SECONDS
}
main_start=$SECONDS
bash scripts/setup-host.sh
took "Debian packages"
# The engine's Go build and the lab's build (downloads, docker builds) are both long and use
# different resources: they run side by side, the engine's lines marked [pulumi-engine].
engine_start=$SECONDS
(bash scripts/install-engine.sh 2>&1 | sed -u 's/^/[pulumi-engine] /' >&2; exit "${PIPESTATUS[0]}") &
engine=$!
bash scripts/setup-python.sh
took "Python environment"
if [[ -n ${BLACKWELL_LAB_STARTED:-} ]]; then
  # The lab's nodes run on another machine that started them (the fresh-operator test: this
  # machine only reaches them over the lab's management network).
  echo "[main] BLACKWELL_LAB_STARTED is set: the lab's nodes are already up; not starting them here" >&2
else
  tests/lab/lab up
  took "lab nodes"
fi
if ! wait "$engine"; then
  echo "[main] the Pulumi engine's build failed (its lines above, marked [pulumi-engine]); fix what they name, then run this again" >&2
  exit 1
fi
printf '[main] Pulumi engine (built beside the above): %d s\n' $((SECONDS - engine_start)) >&2
if [[ -z ${BLACKWELL_LAB_STARTED:-} ]]; then
  # The nodes answered when the lab came up; the engine's build may have run long since. A node
  # that no longer answers SSH is shown from the host (what happened to it) and brought back.
  tests/lab/lab check
fi
phase_start=$SECONDS
# The lab deployment's API key and the gateway's: random, root-only, made once.
for key in api-key gateway-key; do
  if [ ! -s "tests/lab/.state/$key" ]; then
    (umask 077 && head -c 24 /dev/urandom | base64 | tr -d '/+=' > "tests/lab/.state/$key")
  fi
done
# shellcheck source=scripts/env.sh
source scripts/env.sh lab   # with the lab stack's passphrase, as the README's commands by hand
pulumi stack select --create lab --non-interactive >/dev/null
# A run of this script that was killed left the backend's lock: cleared when its process is gone.
# What it left unfinished, this `up` runs again: one line says what, and it is taken out of the
# state so that Pulumi does not advise a `pulumi refresh` that does not apply (a step's script
# converges; components/todo/interrupted.py).
python -m components.todo.interrupted --stack lab
echo "== pulumi preview --stack lab (the todo list)"
pulumi preview --stack lab --non-interactive --diff=false
echo "== pulumi up --stack lab"
# A failed step shows one block (what failed, on which node, its exit status, its log's last
# lines, the fix); the filter leaves out the quoted command lines around it (components/steps/failure.py).
if ! pulumi up --stack lab --non-interactive --yes --skip-preview 2>&1 | python -m components.steps.failure --filter; then
  echo "[main] pulumi up failed: the FAILED block above says what failed, where, and the fix; then run this again" >&2
  exit 1
fi
echo "== endpoint and a sample completion"
pulumi stack output --stack lab endpoints
pulumi stack output --stack lab tiny_sample_completion
echo "== the benchmark after the health gate"
pulumi stack output --stack lab benchmark
echo "== one endpoint for both models (the gateway)"
pulumi stack output --stack lab gateway
took "preview and up"
printf '[main] all: %d m %02d s\n' $(((SECONDS - main_start) / 60)) $(((SECONDS - main_start) % 60)) >&2
