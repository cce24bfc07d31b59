#!/usr/bin/env bash
# Provide the Pulumi engine at pinned versions in <repo>/.engine/bin (git-ignored):
#
#   pulumi                         the CLI, built from the Go module github.com/pulumi/pulumi/pkg/v3
#   pulumi-language-python         the Python language host (see LANGUAGE HOST below)
#   pulumi-language-python-exec    Pulumi's program runner script, from the sdk/v3 module
#   pulumi-resource-pulumi-python  Pulumi's dynamic-provider host script, from the sdk/v3 module
#
# Binaries already on PATH with exactly the pinned versions are used instead of a build
# (symlinked into .engine/bin). Stamps keyed on the pins make a second run a no-op.
#
# No resource plugin is needed: our commands run through a Python dynamic provider
# (components/remote.py). pulumi-command's provider is not used because its Go module
# (github.com/pulumi/pulumi-command/provider) is refused by the only module proxy reachable here.
#
# Go caches live outside the repo, in ${BLACKWELL_CACHE:-/var/cache/blackwell-serving}/go, so that
# every clone on a machine shares them; the script works from an empty cache too.
#
# LANGUAGE HOST: the Go language host is module
# github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3, untagged, so it is fetched by
# the pseudo-version of the commit of tag pkg/v3.274.1. The Go module proxy reachable here does not
# serve that module at any version, so unless BLACKWELL_LANGUAGE_PYTHON_VERSION names a
# pseudo-version that the proxy serves, this script installs a small stand-in host (Python, same
# gRPC protocol) that runs programs through Pulumi's own pulumi-language-python-exec, as the Go
# host does. It needs a Python with the `pulumi` package: the virtualenv named in Pulumi.yaml
# (runtime.options.virtualenv), else $VIRTUAL_ENV, else python3 on PATH.
#
# Exit status: 0 when every piece is in place; 1 on any failure.
set -euo pipefail

# --- pins ---------------------------------------------------------------------------------------
PULUMI_VERSION=v3.274.1
PULUMI_TAGS=osusergo,grpcnotrace
# pkg/go.mod replaces github.com/atotto/clipboard; replaces of a dependency are ignored, so the
# build module repeats it.
CLIPBOARD_REPLACE=github.com/atotto/clipboard=github.com/tgummerer/clipboard@v0.0.0-20241001131231-d02d263e614e
LANGUAGE_MODULE=github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3
LANGUAGE_MODULE_VERSION=${BLACKWELL_LANGUAGE_PYTHON_VERSION:-}

# --- places -------------------------------------------------------------------------------------
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ENGINE="$ROOT/.engine"
BIN="$ENGINE/bin"
STAMPS="$ENGINE/stamps"
WORK="$ENGINE/build"
export PULUMI_HOME="$ENGINE/home"
CACHE="${BLACKWELL_CACHE:-/var/cache/blackwell-serving}/go"

say() { printf 'install-engine: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

stamp_ok() { [ -f "$STAMPS/$1" ] && [ "$(cat "$STAMPS/$1")" = "$2" ]; }
stamp_set() { printf '%s\n' "$2" >"$STAMPS/$1"; }

# The language host stand-in's source lives in scripts/engine/: key its stamp on those files.
SELF_SUM="$(cat "$ROOT/scripts/engine/language_host.py" "$ROOT/scripts/engine/pulumi-language-python" | sha256sum | cut -c1-16)"

key_pulumi() { printf 'pulumi %s tags=%s' "$PULUMI_VERSION" "$PULUMI_TAGS"; }
key_language() {
  if [ -n "$LANGUAGE_MODULE_VERSION" ]; then
    printf 'language %s@%s sdk=%s' "$LANGUAGE_MODULE" "$LANGUAGE_MODULE_VERSION" "$PULUMI_VERSION"
  else
    printf 'language stand-in sdk=%s script=%s' "$PULUMI_VERSION" "$SELF_SUM"
  fi
}

all_done() {
  stamp_ok pulumi "$(key_pulumi)" && [ -x "$BIN/pulumi" ] &&
    stamp_ok language "$(key_language)" && [ -x "$BIN/pulumi-language-python" ] &&
    [ -x "$BIN/pulumi-language-python-exec" ]
}

# Fast path: everything is in place for these pins.
if all_done; then
  exit 0
fi

mkdir -p "$BIN" "$STAMPS" "$WORK" "$PULUMI_HOME"
# One run at a time per clone.
exec 9>"$ENGINE/.lock"
flock 9
if all_done; then
  exit 0
fi

# --- helpers ------------------------------------------------------------------------------------

# find_on_path NAME WANT ARGS...: print the first NAME on PATH (outside .engine/bin) whose output
# of `NAME ARGS...` contains the version WANT (with or without a leading v).
find_on_path() {
  local name=$1 want=${2#v} dir out real_bin
  shift 2
  real_bin="$(readlink -f "$BIN")"
  local -a dirs
  IFS=: read -r -a dirs <<<"${PATH:-}"
  for dir in "${dirs[@]}"; do
    if [ -z "$dir" ] || [ ! -x "$dir/$name" ]; then continue; fi
    [ "$(readlink -f "$dir")" != "$real_bin" ] || continue
    out="$(timeout 10 "$dir/$name" "$@" 2>/dev/null </dev/null || true)"
    if printf '%s\n' "$out" | grep -Eq "(^|[^0-9.])v?${want//./\\.}([^0-9.]|$)"; then
      printf '%s\n' "$dir/$name"
      return 0
    fi
  done
  return 1
}

go_env() {
  command -v go >/dev/null || die "Go is needed to build the engine (go 1.26.6 or newer on PATH)"
  export GOMODCACHE="$CACHE/mod" GOCACHE="$CACHE/build" GOTOOLCHAIN=local
  export GOFLAGS="-mod=mod -buildvcs=false"
  mkdir -p "$GOMODCACHE" "$GOCACHE"
}

# Drop go get's one line per downloaded or added module; keep the rest (errors, warnings) on stderr.
quiet_go() { grep -v -e '^go: downloading ' -e '^go: added ' -e '^go: upgraded go ' >&2 || true; }

elapsed() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# sdk/v3 module directory (for the exec scripts), downloaded into the module cache if needed.
sdk_dir() {
  go_env
  local dir
  dir="$(cd "$WORK" && go mod download -json "github.com/pulumi/pulumi/sdk/v3@$PULUMI_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [ -d "$dir/python/cmd" ] || die "could not download github.com/pulumi/pulumi/sdk/v3@$PULUMI_VERSION"
  printf '%s\n' "$dir"
}

# --- pulumi CLI ---------------------------------------------------------------------------------
provide_pulumi() {
  local key found start mod
  key="$(key_pulumi)"
  if stamp_ok pulumi "$key" && [ -x "$BIN/pulumi" ]; then
    return 0
  fi
  if found="$(find_on_path pulumi "$PULUMI_VERSION" version)"; then
    ln -sfn "$found" "$BIN/pulumi"
    say "using pulumi $PULUMI_VERSION from $found"
    stamp_set pulumi "$key"
    return 0
  fi
  go_env
  start=$SECONDS
  say "building pulumi $PULUMI_VERSION (several minutes on 2 cores; about 300 modules to fetch on an empty cache)…"
  mod="$WORK/pulumi"
  rm -rf "$mod"
  mkdir -p "$mod"
  (
    # (set -e does not apply inside a subshell tested with ||: every step checks its status.)
    cd "$mod" || exit 1
    printf 'module blackwell-serving.local/engine/pulumi\n\ngo 1.26\n' >go.mod || exit 1
    go mod edit -replace "$CLIPBOARD_REPLACE" || exit 1
    go get -tool "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi@$PULUMI_VERSION" 2>&1 | quiet_go || exit 1
    # pkg/v3 and sdk/v3 must be the same version.
    for m in github.com/pulumi/pulumi/pkg/v3 github.com/pulumi/pulumi/sdk/v3; do
      got="$(go list -m -f '{{.Version}}' "$m")" || exit 1
      [ "$got" = "$PULUMI_VERSION" ] || { echo "install-engine: $m resolved to $got, not $PULUMI_VERSION" >&2; exit 1; }
    done
    go build -trimpath -tags "$PULUMI_TAGS" \
      -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION" \
      -o "$mod/pulumi" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
  ) || die "building pulumi $PULUMI_VERSION failed"
  install -m 0755 "$mod/pulumi" "$BIN/pulumi.new"
  mv -f "$BIN/pulumi.new" "$BIN/pulumi"
  rm -rf "$mod"
  [ "$("$BIN/pulumi" version)" = "$PULUMI_VERSION" ] || die "the built pulumi does not report $PULUMI_VERSION"
  stamp_set pulumi "$key"
  say "pulumi $PULUMI_VERSION built in $(elapsed $((SECONDS - start)))"
}

# --- Python language host -----------------------------------------------------------------------
install_exec_scripts() {
  local sdk=$1
  install -m 0755 "$sdk/python/cmd/pulumi-language-python-exec" "$BIN/pulumi-language-python-exec"
  install -m 0755 "$sdk/python/dist/pulumi-resource-pulumi-python" "$BIN/pulumi-resource-pulumi-python"
}

provide_language() {
  local key found start mod sdk
  key="$(key_language)"
  if stamp_ok language "$key" && [ -x "$BIN/pulumi-language-python" ] && [ -x "$BIN/pulumi-language-python-exec" ]; then
    return 0
  fi
  # A real language host on PATH, with its exec script beside its real path (where it looks).
  if found="$(find_on_path pulumi-language-python "$PULUMI_VERSION" -version)" &&
    [ -x "$(dirname "$(readlink -f "$found")")/pulumi-language-python-exec" ]; then
    ln -sfn "$found" "$BIN/pulumi-language-python"
    ln -sfn "$(dirname "$(readlink -f "$found")")/pulumi-language-python-exec" "$BIN/pulumi-language-python-exec"
    found="$(dirname "$(readlink -f "$found")")/pulumi-resource-pulumi-python"
    [ ! -x "$found" ] || ln -sfn "$found" "$BIN/pulumi-resource-pulumi-python"
    say "using pulumi-language-python $PULUMI_VERSION from $(dirname "$found")"
    stamp_set language "$key"
    return 0
  fi
  start=$SECONDS
  sdk="$(sdk_dir)"
  rm -f "$BIN/pulumi-language-python" "$BIN/pulumi-language-python-exec" "$BIN/pulumi-resource-pulumi-python"
  if [ -n "$LANGUAGE_MODULE_VERSION" ]; then
    go_env
    say "building pulumi-language-python ($LANGUAGE_MODULE@$LANGUAGE_MODULE_VERSION)…"
    mod="$WORK/language-python"
    rm -rf "$mod"
    mkdir -p "$mod"
    (
      cd "$mod" || exit 1
      printf 'module blackwell-serving.local/engine/language-python\n\ngo 1.26\n' >go.mod || exit 1
      go mod edit -replace "$CLIPBOARD_REPLACE" || exit 1
      go get -tool "$LANGUAGE_MODULE@$LANGUAGE_MODULE_VERSION" 2>&1 | quiet_go || exit 1
      # keep pkg/v3 and sdk/v3 at the CLI's version
      go get "github.com/pulumi/pulumi/pkg/v3@$PULUMI_VERSION" "github.com/pulumi/pulumi/sdk/v3@$PULUMI_VERSION" 2>&1 | quiet_go || exit 1
      for m in github.com/pulumi/pulumi/pkg/v3 github.com/pulumi/pulumi/sdk/v3; do
        got="$(go list -m -f '{{.Version}}' "$m")" || exit 1
        [ "$got" = "$PULUMI_VERSION" ] || { echo "install-engine: $m resolved to $got, not $PULUMI_VERSION" >&2; exit 1; }
      done
      go build -trimpath -tags "$PULUMI_TAGS" \
        -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION" \
        -o "$mod/pulumi-language-python" "$LANGUAGE_MODULE"
    ) || die "building $LANGUAGE_MODULE@$LANGUAGE_MODULE_VERSION failed"
    install -m 0755 "$mod/pulumi-language-python" "$BIN/pulumi-language-python"
    rm -rf "$mod"
    install_exec_scripts "$sdk"
    say "pulumi-language-python built in $(elapsed $((SECONDS - start)))"
  else
    say "installing the Python language host stand-in (the Go host's module is not served by the Go proxy here)"
    install_exec_scripts "$sdk"
    mkdir -p "$ENGINE/lib"
    install -m 0644 "$ROOT/scripts/engine/language_host.py" "$ENGINE/lib/pulumi_language_python_host.py"
    install -m 0755 "$ROOT/scripts/engine/pulumi-language-python" "$BIN/pulumi-language-python"
    say "pulumi-language-python (stand-in) installed in $(elapsed $((SECONDS - start)))"
  fi
  stamp_set language "$key"
}




total=$SECONDS
provide_pulumi
provide_language
say "engine in $BIN ($(elapsed $((SECONDS - total))))"
