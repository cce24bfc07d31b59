#!/usr/bin/env bash
# Provide the Pulumi engine at pinned versions in <repo>/.engine (git-ignored):
#
#   .engine/bin/pulumi                         the CLI v3.274.1
#   .engine/bin/pulumi-language-python         the Go Python language host (Pulumi's own)
#   .engine/bin/pulumi-language-python-exec    its program runner script  } from the Go module
#   .engine/bin/pulumi-resource-pulumi-python  its dynamic-provider script } sdk/v3 v3.274.1
#   .engine/home/plugins/resource-command-v1.2.1/pulumi-resource-command
#                                              the provider that PyPI's pulumi-command==1.2.1 drives,
#                                              in the Pulumi plugin cache (PULUMI_HOME=.engine/home,
#                                              as scripts/env.sh sets)
#
# Where each piece comes from, first match wins:
#
# pulumi CLI
#   1. `pulumi` on PATH that reports v3.274.1 (symlinked into .engine/bin);
#   2. built from the Go module github.com/pulumi/pulumi/pkg/v3@v3.274.1 (module proxy).
#
# pulumi-language-python (+ the two scripts)
#   1. `pulumi-language-python` on PATH that reports v3.274.1 with pulumi-language-python-exec
#      beside its real path (symlinked into .engine/bin);
#   2. built from its source tree (upstream tag v3.259.0, go.mod moved to pkg/sdk v3.274.1; see
#      ../shared/vendor/README.md), the first of these folders that exists:
#        a. $BLACKWELL_VENDOR_DIR/pulumi-language-python when BLACKWELL_VENDOR_DIR is set (then
#           only there);
#        b. <repo>/../shared/vendor/pulumi-language-python;
#        c. <origin>/../shared/vendor/pulumi-language-python, where <origin> is the folder named
#           by this clone's `origin` remote when that is a local path (`git clone /work/main /tmp/x`
#           → /work/shared/vendor/…);
#      version string v3.259.0+sdk3.274.1 (upstream code v3.259.0, Pulumi libraries v3.274.1);
#   3. otherwise: an error naming the folders searched. (Pulumi's official installer bundles the
#      host: users with internet get it with the CLI, which then comes from PATH in step 1.)
#
# pulumi-resource-command 1.2.1
#   1. already in the plugin cache ($PULUMI_HOME/plugins/resource-command-v1.2.1/), or on PATH and
#      reporting 1.2.1 in its schema (`pulumi package get-schema`; the binary has no -version flag),
#      then registered into the plugin cache;
#   2. built from its source tree ($BLACKWELL_VENDOR_DIR/pulumi-command-provider, else
#      <repo>/../shared/vendor/pulumi-command-provider, else <origin>/../shared/vendor/…, as
#      above) and registered with `pulumi plugin install resource command 1.2.1 --file …`;
#   3. otherwise `pulumi plugin install resource command 1.2.1` (Pulumi's ordinary download).
#
# Source trees are built with GOFLAGS=-mod=readonly and never written to (read-only in CI);
# outputs go to .engine/build. Stamps in .engine/stamps are keyed on the pins and, for a piece
# built from source, on a hash of its source tree: a second run is a quick no-op, a changed source
# rebuilds that piece. Go caches live outside the repo, in
# ${BLACKWELL_CACHE:-/var/cache/blackwell-serving}/go, shared by every clone on a machine; the
# script works from empty caches too (measured on 2 cores: CLI 17 min, language host 16 s,
# provider 4 min; with warm caches 20 s, 2-6 s, 4 s; a no-op run well under a second). It never
# prompts and logs to stderr only, so callers may run it in the background.
#
# Exit status: 0 when every piece is in place; 1 on any failure.
set -euo pipefail

# --- pins ---------------------------------------------------------------------------------------
PULUMI_VERSION=v3.274.1
PULUMI_TAGS=osusergo,grpcnotrace
# pkg/go.mod replaces github.com/atotto/clipboard; replaces of a dependency are ignored, so the
# build module repeats it.
CLIPBOARD_REPLACE=github.com/atotto/clipboard=github.com/tgummerer/clipboard@v0.0.0-20241001131231-d02d263e614e
# The language host's source is upstream v3.259.0 built against pkg/sdk v3.274.1: say both
# (semver build metadata, which the CLI parses and ignores when comparing).
LANGUAGE_VERSION=v3.259.0+sdk3.274.1
COMMAND_VERSION=1.2.1

# --- places -------------------------------------------------------------------------------------
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ENGINE="$ROOT/.engine"
BIN="$ENGINE/bin"
STAMPS="$ENGINE/stamps"
WORK="$ENGINE/build"
export PULUMI_HOME="$ENGINE/home"
export PULUMI_SKIP_UPDATE_CHECK=true
# shellcheck source=scripts/cache.sh
. "$ROOT/scripts/cache.sh"
CACHE="$BLACKWELL_CACHE/go"
COMMAND_PLUGIN_DIR="$PULUMI_HOME/plugins/resource-command-v$COMMAND_VERSION"
COMMAND_PLUGIN="$COMMAND_PLUGIN_DIR/pulumi-resource-command"

say() { printf 'install-engine: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

stamp_get() { cat "$STAMPS/$1" 2>/dev/null || true; }
stamp_set() { printf '%s\n' "$2" >"$STAMPS/$1"; }

# --- source trees -------------------------------------------------------------------------------

# vendor_candidates NAME: print, one a line, the folders searched for the source tree NAME.
vendor_candidates() {
  local name=$1 url origin
  if [ -n "${BLACKWELL_VENDOR_DIR:-}" ]; then
    printf '%s\n' "$BLACKWELL_VENDOR_DIR/$name"
    return 0
  fi
  printf '%s\n' "$(dirname "$ROOT")/shared/vendor/$name"
  url="$(git -C "$ROOT" remote get-url origin 2>/dev/null || true)"
  case $url in
    file://*) origin=${url#file://} ;;
    /* | ./* | ../*) origin=$url ;;
    *) return 0 ;; # none, or not a local path (host:path, https://…)
  esac
  case $origin in /*) ;; *) origin="$ROOT/$origin" ;; esac
  origin=${origin%/}
  origin=${origin%/.git}
  [ -d "$origin" ] || return 0
  origin="$(cd "$origin" && pwd -P)"
  printf '%s\n' "$(dirname "$origin")/shared/vendor/$name"
}

# vendor_dir NAME: print the first searched folder holding a Go module for NAME.
vendor_dir() {
  local dir
  while IFS= read -r dir; do
    if [ -f "$dir/go.mod" ]; then
      (cd "$dir" && pwd -P)
      return 0
    fi
  done < <(vendor_candidates "$1")
  return 1
}

# tree_hash DIR: a hash of every file's path and content under DIR.
tree_hash() {
  (cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
}

# --- stamp keys ---------------------------------------------------------------------------------
# Pure Go, as Pulumi's own releases: the same build (and Go build-cache keys) whether or not the
# machine has a C compiler (a bare operator machine has none). Part of every built piece's key.
GO_CGO=0
key_pulumi() { printf 'pulumi %s tags=%s cgo=%s' "$PULUMI_VERSION" "$PULUMI_TAGS" "$GO_CGO"; }
key_language_path() { printf 'language-python %s from PATH' "$PULUMI_VERSION"; }
key_language_build() { # SRC
  printf 'language-python %s sdk=%s tags=%s cgo=%s built from source tree=%s' \
    "$LANGUAGE_VERSION" "$PULUMI_VERSION" "$PULUMI_TAGS" "$GO_CGO" "$(tree_hash "$1")"
}
key_command_found() { printf 'resource-command %s found' "$COMMAND_VERSION"; }
key_command_download() { printf 'resource-command %s downloaded' "$COMMAND_VERSION"; }
key_command_build() { # SRC
  printf 'resource-command %s cgo=%s built from source tree=%s' "$COMMAND_VERSION" "$GO_CGO" "$(tree_hash "$1")"
}

# A stamp of a piece built from source stays good while that source is unchanged, or when the
# source can no longer be found (the build stands).
built_stamp_ok() { # NAME STAMP KEYFN
  local name=$1 stamp=$2 keyfn=$3 src
  src="$(vendor_dir "$name")" || return 0
  [ "$stamp" = "$("$keyfn" "$src")" ]
}

pulumi_ok() {
  [ "$(stamp_get pulumi)" = "$(key_pulumi)" ] && [ -x "$BIN/pulumi" ]
}
language_ok() {
  local s
  [ -x "$BIN/pulumi-language-python" ] && [ -x "$BIN/pulumi-language-python-exec" ] || return 1
  s="$(stamp_get language)"
  case $s in
    "$(key_language_path)") return 0 ;;
    "language-python $LANGUAGE_VERSION sdk=$PULUMI_VERSION tags=$PULUMI_TAGS built from source "*)
      built_stamp_ok pulumi-language-python "$s" key_language_build ;;
    *) return 1 ;;
  esac
}
command_ok() {
  local s
  [ -x "$COMMAND_PLUGIN" ] || return 1
  s="$(stamp_get command)"
  case $s in
    "$(key_command_found)" | "$(key_command_download)") return 0 ;;
    "resource-command $COMMAND_VERSION built from source "*)
      built_stamp_ok pulumi-command-provider "$s" key_command_build ;;
    *) return 1 ;;
  esac
}
all_done() { pulumi_ok && language_ok && command_ok; }

# --vendor-dir NAME: only say where the source tree NAME is found (the fresh-operator lab test
# mounts it into its machine), and nothing else.
if [ "${1:-}" = --vendor-dir ]; then
  vendor_dir "${2:?--vendor-dir NAME}" || die "no source tree ${2} in: $(vendor_candidates "$2" | paste -sd " " -)"
  exit 0
fi

# Fast path: everything is in place for these pins and sources.
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

# path_lookup NAME: print, one a line, every executable NAME on PATH outside .engine/bin.
path_lookup() {
  local name=$1 dir real_bin found=1
  real_bin="$(readlink -f "$BIN")"
  local -a dirs
  IFS=: read -r -a dirs <<<"${PATH:-}"
  for dir in "${dirs[@]}"; do
    if [ -z "$dir" ] || [ ! -x "$dir/$name" ] || [ -d "$dir/$name" ]; then continue; fi
    [ "$(readlink -f "$dir")" != "$real_bin" ] || continue
    printf '%s\n' "$dir/$name"
    found=0
  done
  return $found
}

# find_on_path NAME WANT ARGS...: print the first NAME on PATH (outside .engine/bin) whose output
# of `NAME ARGS...` contains the version WANT (with or without a leading v).
find_on_path() {
  local name=$1 want=${2#v} path out
  shift 2
  while IFS= read -r path; do
    out="$(timeout 10 "$path" "$@" 2>/dev/null </dev/null || true)"
    if printf '%s\n' "$out" | grep -Eq "(^|[^0-9.])v?${want//./\\.}([^0-9.]|$)"; then
      printf '%s\n' "$path"
      return 0
    fi
  done < <(path_lookup "$name" || true)
  return 1
}

go_env() {
  command -v go >/dev/null || die "Go is needed to build the engine (go 1.26.6 or newer on PATH)"
  export GOMODCACHE="$CACHE/mod" GOCACHE="$CACHE/build" GOTOOLCHAIN=local
  export CGO_ENABLED=$GO_CGO
  export GOFLAGS="-mod=mod -buildvcs=false"
  mkdir -p "$GOMODCACHE" "$GOCACHE"
}

# Drop go get's one line per downloaded or added module; keep the rest (errors, warnings) on stderr.
quiet_go() { grep -v -e '^go: downloading ' -e '^go: added ' -e '^go: upgraded go ' >&2 || true; }

# put FILE DEST: install FILE as DEST, mode 0755, replacing DEST at once (a running engine may use it).
put() { install -m 0755 "$1" "$2.new" && mv -f "$2.new" "$2"; }

elapsed() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# searched NAME: the folders searched for source tree NAME, for messages.
searched() { vendor_candidates "$1" | paste -sd, - | sed 's/,/, /g'; }

# sdk/v3 module directory (for the exec scripts), downloaded into the module cache if needed.
sdk_dir() {
  go_env
  local dir
  dir="$(cd "$WORK" && go mod download -json "github.com/pulumi/pulumi/sdk/v3@$PULUMI_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [ -d "$dir/python/cmd" ] || die "could not download github.com/pulumi/pulumi/sdk/v3@$PULUMI_VERSION"
  printf '%s\n' "$dir"
}

# build_from_source SRC OUT PACKAGE LDFLAGS [GO-BUILD-FLAGS...]: `go build` PACKAGE of the source
# tree SRC to OUT, without writing into SRC (GOFLAGS=-mod=readonly).
build_from_source() {
  local src=$1 out=$2 pkg=$3 ldflags=$4
  shift 4
  go_env
  rm -rf "$(dirname "$out")"
  mkdir -p "$(dirname "$out")"
  # (quiet_go always succeeds: with pipefail the pipeline's status is go build's.)
  (cd "$src" && GOFLAGS="-mod=readonly -buildvcs=false" \
    go build -trimpath "$@" -ldflags "$ldflags" -o "$out" "$pkg") 2>&1 | quiet_go || return 1
  [ -x "$out" ]
}

# --- pulumi CLI ---------------------------------------------------------------------------------
provide_pulumi() {
  local key found start mod
  key="$(key_pulumi)"
  if pulumi_ok; then
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
  say "building pulumi $PULUMI_VERSION (about 17 minutes on 2 cores with empty Go caches, about 300 modules to fetch; 20 s with warm ones)…"
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
  put "$mod/pulumi" "$BIN/pulumi"
  rm -rf "$mod"
  [ "$("$BIN/pulumi" version)" = "$PULUMI_VERSION" ] || die "the built pulumi does not report $PULUMI_VERSION"
  stamp_set pulumi "$key"
  say "pulumi $PULUMI_VERSION built in $(elapsed $((SECONDS - start)))"
}

# --- Python language host -----------------------------------------------------------------------
provide_language() {
  local found dir src start out sdk got
  if language_ok; then
    return 0
  fi
  # A real language host on PATH, with its exec script beside its real path (where it looks).
  if found="$(find_on_path pulumi-language-python "$PULUMI_VERSION" -version)" &&
    dir="$(dirname "$(readlink -f "$found")")" && [ -x "$dir/pulumi-language-python-exec" ]; then
    ln -sfn "$found" "$BIN/pulumi-language-python"
    ln -sfn "$dir/pulumi-language-python-exec" "$BIN/pulumi-language-python-exec"
    if [ -x "$dir/pulumi-resource-pulumi-python" ]; then
      ln -sfn "$dir/pulumi-resource-pulumi-python" "$BIN/pulumi-resource-pulumi-python"
    else
      rm -f "$BIN/pulumi-resource-pulumi-python"
    fi
    say "using pulumi-language-python $PULUMI_VERSION from $found"
    stamp_set language "$(key_language_path)"
    return 0
  fi
  src="$(vendor_dir pulumi-language-python)" ||
    die "pulumi-language-python: not on PATH at $PULUMI_VERSION, and its source tree was not found in: $(searched pulumi-language-python). Set BLACKWELL_VENDOR_DIR to the folder holding pulumi-language-python/ (see shared/vendor/README.md), or put Pulumi's own pulumi-language-python $PULUMI_VERSION on PATH (the official Pulumi installer bundles it)."
  start=$SECONDS
  sdk="$(sdk_dir)"
  say "building pulumi-language-python $LANGUAGE_VERSION from $src…"
  out="$WORK/language-python/pulumi-language-python"
  build_from_source "$src" "$out" . \
    "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$LANGUAGE_VERSION" \
    -tags "$PULUMI_TAGS" || die "building pulumi-language-python from $src failed"
  got="$("$out" -version)"
  [ "$got" = "$LANGUAGE_VERSION" ] || die "the built pulumi-language-python reports '$got', not $LANGUAGE_VERSION"
  put "$sdk/python/cmd/pulumi-language-python-exec" "$BIN/pulumi-language-python-exec"
  put "$sdk/python/dist/pulumi-resource-pulumi-python" "$BIN/pulumi-resource-pulumi-python"
  put "$out" "$BIN/pulumi-language-python"
  rm -rf "$WORK/language-python"
  stamp_set language "$(key_language_build "$src")"
  say "pulumi-language-python $LANGUAGE_VERSION built in $(elapsed $((SECONDS - start)))"
}

# --- pulumi-resource-command --------------------------------------------------------------------

# schema_version BINARY: the version in the schema the provider BINARY reports.
schema_version() {
  local tmp
  tmp="$(mktemp -d)"
  ln -s "$1" "$tmp/pulumi-resource-command"
  timeout 60 "$BIN/pulumi" package get-schema "$tmp/pulumi-resource-command" 2>/dev/null </dev/null |
    sed -n 's/^  "version": "\(.*\)",\{0,1\}$/\1/p' | head -n 1 || true
  rm -rf "$tmp"
}

# register_command BINARY: put BINARY into the plugin cache as resource-command v1.2.1.
register_command() {
  "$BIN/pulumi" plugin install resource command "$COMMAND_VERSION" --file "$1" --reinstall \
    --non-interactive >&2 </dev/null || return 1
  [ -x "$COMMAND_PLUGIN" ]
}

provide_command() {
  local s src found got start out
  if command_ok; then
    return 0
  fi
  # In the plugin cache already, unless we put it there from a source tree that has changed since.
  s="$(stamp_get command)"
  if [ -x "$COMMAND_PLUGIN" ] && [ "${s#"resource-command $COMMAND_VERSION built from "}" = "$s" ]; then
    say "using pulumi-resource-command $COMMAND_VERSION from the plugin cache ($COMMAND_PLUGIN_DIR)"
    stamp_set command "$(key_command_found)"
    return 0
  fi
  # On PATH (outside .engine/bin), when its schema says 1.2.1: copied into the plugin cache, where
  # the CLI finds it without the warning it gives for plugins taken from PATH.
  while IFS= read -r found; do
    got="$(schema_version "$(readlink -f "$found")")"
    if [ "$got" = "$COMMAND_VERSION" ]; then
      register_command "$found" || die "could not register $found in the plugin cache"
      say "using pulumi-resource-command $COMMAND_VERSION from $found (copied into the plugin cache)"
      stamp_set command "$(key_command_found)"
      return 0
    fi
    say "ignoring $found: its schema reports version '${got:-none}', not $COMMAND_VERSION"
  done < <(path_lookup pulumi-resource-command || true)
  start=$SECONDS
  if src="$(vendor_dir pulumi-command-provider)"; then
    say "building pulumi-resource-command $COMMAND_VERSION from $src (about 4 minutes on 2 cores with empty Go caches; seconds with warm ones)…"
    out="$WORK/command/pulumi-resource-command"
    build_from_source "$src" "$out" ./cmd/pulumi-resource-command \
      "-s -w -X github.com/pulumi/pulumi-command/provider/pkg/version.Version=$COMMAND_VERSION" ||
      die "building pulumi-resource-command from $src failed"
    got="$(schema_version "$out")"
    [ "$got" = "$COMMAND_VERSION" ] || die "the built pulumi-resource-command reports version '${got:-none}', not $COMMAND_VERSION"
    register_command "$out" || die "could not register $out in the plugin cache ($PULUMI_HOME)"
    rm -rf "$WORK/command"
    stamp_set command "$(key_command_build "$src")"
    say "pulumi-resource-command $COMMAND_VERSION built in $(elapsed $((SECONDS - start)))"
    return 0
  fi
  say "pulumi-resource-command: no source tree in: $(searched pulumi-command-provider); downloading it with pulumi plugin install…"
  if timeout 600 "$BIN/pulumi" plugin install resource command "$COMMAND_VERSION" --non-interactive >&2 </dev/null &&
    [ -x "$COMMAND_PLUGIN" ]; then
    stamp_set command "$(key_command_download)"
    say "pulumi-resource-command $COMMAND_VERSION downloaded in $(elapsed $((SECONDS - start)))"
    return 0
  fi
  die "pulumi-resource-command $COMMAND_VERSION: not in the plugin cache ($COMMAND_PLUGIN_DIR), its source tree was not found in: $(searched pulumi-command-provider), and \`pulumi plugin install resource command $COMMAND_VERSION\` failed (no internet?). Set BLACKWELL_VENDOR_DIR to the folder holding pulumi-command-provider/ (see shared/vendor/README.md)."
}

total=$SECONDS
provide_pulumi
provide_language
provide_command
say "engine in $BIN, pulumi-resource-command $COMMAND_VERSION in $COMMAND_PLUGIN_DIR ($(elapsed $((SECONDS - total))))"
