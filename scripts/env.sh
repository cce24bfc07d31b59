# shellcheck shell=bash
# Environment for running the Pulumi engine of this repo: `source scripts/env.sh [lab]`.
# Local file backend and passphrase secrets, never Pulumi Cloud; no automatic plugin downloads.
# Prints nothing. The engine itself comes from scripts/install-engine.sh.
# Plugins are never taken from PATH: the language host comes from beside the CLI (.engine/bin),
# providers (pulumi-resource-command 1.2.1) from the plugin cache in $PULUMI_HOME/plugins, so a
# stray provider on PATH is neither used nor warned about.

_bw_root="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")/.." && pwd)"

case ":$PATH:" in
  *":$_bw_root/.engine/bin:$_bw_root/.venv/bin:"*) ;;
  *) export PATH="$_bw_root/.engine/bin:$_bw_root/.venv/bin:$PATH" ;;
esac

export PULUMI_HOME="$_bw_root/.engine/home"
mkdir -p "$_bw_root/.state/backend"
export PULUMI_BACKEND_URL="file://$_bw_root/.state/backend"
export PULUMI_SKIP_UPDATE_CHECK=true
export PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true
export PULUMI_IGNORE_AMBIENT_PLUGINS=true

# Passphrase for the secrets provider. `source scripts/env.sh lab`: the lab stack's, which is fixed
# and public (LAB_PULUMI_PASSPHRASE in tests/lab/lab.env: its salt is in git), whatever the caller
# had; the main job, the tests and the README's commands all take it from there. Otherwise: the
# caller's, else one generated once for this clone (.state/passphrase), for the operator's stacks.
if [ "${1:-}" = lab ]; then
  unset PULUMI_CONFIG_PASSPHRASE_FILE
  PULUMI_CONFIG_PASSPHRASE=$(sed -n 's/^LAB_PULUMI_PASSPHRASE=//p' "$_bw_root/tests/lab/lab.env")
  export PULUMI_CONFIG_PASSPHRASE
elif [ -z "${PULUMI_CONFIG_PASSPHRASE+x}" ] && [ -z "${PULUMI_CONFIG_PASSPHRASE_FILE+x}" ]; then
  if [ ! -s "$_bw_root/.state/passphrase" ]; then
    (
      umask 077
      od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$_bw_root/.state/passphrase.$$" &&
        mv -n "$_bw_root/.state/passphrase.$$" "$_bw_root/.state/passphrase"
      rm -f "$_bw_root/.state/passphrase.$$"
    )
  fi
  chmod 600 "$_bw_root/.state/passphrase"
  export PULUMI_CONFIG_PASSPHRASE_FILE="$_bw_root/.state/passphrase"
fi

unset _bw_root
