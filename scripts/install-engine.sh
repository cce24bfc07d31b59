#!/usr/bin/env bash
# Provide the Pulumi engine at pinned versions in <repo>/.engine/bin (git-ignored):
#
#   pulumi                         the CLI, built from the Go module github.com/pulumi/pulumi/pkg/v3
#   pulumi-language-python         the Python language host (see LANGUAGE HOST below)
#   pulumi-language-python-exec    Pulumi's program runner script, from the sdk/v3 module
#   pulumi-resource-pulumi-python  Pulumi's dynamic-provider host script, from the sdk/v3 module
#   pulumi-resource-command        the command provider (module github.com/pulumi/pulumi-command/provider)
#
# and registers the command provider as a plugin in PULUMI_HOME=<repo>/.engine/home without any
# download. Binaries already on PATH with exactly the pinned versions are used instead of a build
# (symlinked into .engine/bin). Stamps keyed on the pins make a second run a no-op.
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
# Exit status: 0 when every piece is in place; 2 when only the command provider could not be
# provided (set BLACKWELL_ALLOW_MISSING_COMMAND=1 to make that a warning); 1 on any other failure.
set -euo pipefail

# --- pins ---------------------------------------------------------------------------------------
PULUMI_VERSION=v3.274.1
PULUMI_TAGS=osusergo,grpcnotrace
# pkg/go.mod replaces github.com/atotto/clipboard; replaces of a dependency are ignored, so the
# build module repeats it.
CLIPBOARD_REPLACE=github.com/atotto/clipboard=github.com/tgummerer/clipboard@v0.0.0-20241001131231-d02d263e614e
LANGUAGE_MODULE=github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3
LANGUAGE_MODULE_VERSION=${BLACKWELL_LANGUAGE_PYTHON_VERSION:-}
COMMAND_VERSION=1.2.1
COMMAND_COMMIT=7f3eb6f3b77cd0fa3895ba437a695dd393f7dd25
# canonical pseudo-version of COMMAND_COMMIT (the provider module has no tags of its own)
COMMAND_MODULE_VERSION=v0.0.0-20260303235922-7f3eb6f3b77c
COMMAND_PKG=github.com/pulumi/pulumi-command/provider/cmd/pulumi-resource-command

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

# The language host stand-in's source is part of this script: key its stamp on this script's text.
SELF_SUM="$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-16)"

key_pulumi() { printf 'pulumi %s tags=%s' "$PULUMI_VERSION" "$PULUMI_TAGS"; }
key_language() {
  if [ -n "$LANGUAGE_MODULE_VERSION" ]; then
    printf 'language %s@%s sdk=%s' "$LANGUAGE_MODULE" "$LANGUAGE_MODULE_VERSION" "$PULUMI_VERSION"
  else
    printf 'language stand-in sdk=%s script=%s' "$PULUMI_VERSION" "$SELF_SUM"
  fi
}
key_command() { printf 'command %s commit=%s' "$COMMAND_VERSION" "$COMMAND_COMMIT"; }
key_plugin() { printf 'plugin command %s' "$COMMAND_VERSION"; }

all_done() {
  stamp_ok pulumi "$(key_pulumi)" && [ -x "$BIN/pulumi" ] &&
    stamp_ok language "$(key_language)" && [ -x "$BIN/pulumi-language-python" ] &&
    [ -x "$BIN/pulumi-language-python-exec" ] &&
    stamp_ok command "$(key_command)" && [ -x "$BIN/pulumi-resource-command" ] &&
    stamp_ok plugin "$(key_plugin)"
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
    write_language_host_py >"$ENGINE/lib/pulumi_language_python_host.py"
    write_language_host_wrapper >"$BIN/pulumi-language-python"
    chmod 0755 "$BIN/pulumi-language-python"
    say "pulumi-language-python (stand-in) installed in $(elapsed $((SECONDS - start)))"
  fi
  stamp_set language "$key"
}

write_language_host_wrapper() {
  cat <<'EOF'
#!/usr/bin/env bash
# pulumi-language-python: stand-in language host written by scripts/install-engine.sh.
# Picks the Python that has the program's `pulumi` package, then runs the host with it.
set -euo pipefail
here="$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")"
host="$here/../lib/pulumi_language_python_host.py"
for arg in "$@"; do
  case $arg in -version | --version) python3 "$host" -version; exit;; esac
done
py=""
# 1. runtime.options.virtualenv in the Pulumi.yaml of the project (the CLI starts us in its directory)
dir="$PWD"
while :; do
  if [ -f "$dir/Pulumi.yaml" ]; then
    venv="$(sed -n 's/^[[:space:]]*virtualenv:[[:space:]]*["'\'']\{0,1\}\([^"'\''#]*\)["'\'']\{0,1\}[[:space:]]*\(#.*\)\{0,1\}$/\1/p' "$dir/Pulumi.yaml" | head -n 1)"
    venv="${venv%"${venv##*[![:space:]]}"}"
    if [ -n "$venv" ]; then
      case $venv in /*) ;; *) venv="$dir/$venv" ;; esac
      [ -x "$venv/bin/python" ] && py="$venv/bin/python"
    fi
    break
  fi
  [ "$dir" != / ] || break
  dir="$(dirname "$dir")"
done
# 2. the active virtualenv; 3. python3 on PATH
if [ -z "$py" ] && [ -n "${VIRTUAL_ENV:-}" ] && [ -x "$VIRTUAL_ENV/bin/python" ]; then py="$VIRTUAL_ENV/bin/python"; fi
if [ -z "$py" ]; then py="$(command -v python3 || true)"; fi
if [ -z "$py" ] || ! "$py" -c 'import pulumi, grpc' 2>/dev/null; then
  echo "pulumi-language-python: no Python with the 'pulumi' package found (tried ${py:-none}); set runtime.options.virtualenv in Pulumi.yaml or activate the project's virtualenv" >&2
  exit 1
fi
exec "$py" "$host" "$@"
EOF
}

write_language_host_py() {
  cat <<'EOF'
"""Pulumi language host for Python programs (the `pulumi-language-python` plugin).

Written by blackwell-serving's scripts/install-engine.sh as a stand-in for the Go language
host, whose module (github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3) the Go
module proxy of this workplace does not serve. It speaks the same gRPC protocol to the CLI and
runs each program the way the Go host does: in a fresh process of the project's Python, through
Pulumi's own `pulumi-language-python-exec` script (installed in the bin folder beside the
wrapper), with the config in PULUMI_CONFIG / PULUMI_CONFIG_SECRET_KEYS.
"""

import json
import os
import signal
import subprocess
import sys
import threading
from concurrent import futures

HOST_VERSION = "3.274.1"
HERE = os.path.dirname(os.path.realpath(__file__))
EXEC = os.path.join(os.path.dirname(HERE), "bin", "pulumi-language-python-exec")
# The exec script exits with this code after printing a message meant for the user.
BAIL_EXIT_CODE = 32

if "-version" in sys.argv[1:] or "--version" in sys.argv[1:]:
    print(HOST_VERSION)
    sys.exit(0)

import grpc  # noqa: E402
from google.protobuf import empty_pb2  # noqa: E402
from pulumi.runtime.proto import language_pb2, language_pb2_grpc, plugin_pb2  # noqa: E402

_PLUGINS_SCRIPT = r"""
import importlib.metadata as md, json
out = []
for dist in md.distributions():
    for f in dist.files or []:
        if f.name != "pulumi-plugin.json" or len(f.parts) != 2:
            continue
        try:
            data = json.loads(f.read_text())
        except Exception:
            continue
        if not data.get("resource", True):
            continue
        name = data.get("name") or dist.metadata["Name"].lower().replace("_", "-").removeprefix("pulumi-")
        version = data.get("version") or dist.version
        out.append({"name": name, "version": version if version.startswith("v") else "v" + version,
                    "server": data.get("server", ""), "parameterized": bool(data.get("parameterization"))})
print(json.dumps(out))
"""


def _options(info):
    try:
        return dict(info.options.items())
    except Exception:  # noqa: BLE001 - a protobuf Struct; be lenient
        return {}


def _python_for(info):
    """The interpreter of the program's virtualenv (runtime option `virtualenv`), else ours."""
    venv = _options(info).get("virtualenv")
    if venv:
        root = info.root_directory or info.program_directory or os.getcwd()
        venv = venv if os.path.isabs(venv) else os.path.join(root, venv)
        for name in ("python", "python3"):
            candidate = os.path.join(venv, "bin", name)
            if os.access(candidate, os.X_OK):
                return candidate
        raise RuntimeError(
            f"the virtualenv {venv} named in Pulumi.yaml (runtime.options.virtualenv) has no bin/python: "
            "create it and install the project's requirements into it"
        )
    return sys.executable


class LanguageHost(language_pb2_grpc.LanguageRuntimeServicer):
    def __init__(self, engine_address, tracing):
        self.engine_address = engine_address
        self.tracing = tracing
        self.children = set()
        self.lock = threading.Lock()

    def Handshake(self, request, context):
        if request.engine_address:
            self.engine_address = request.engine_address
        return language_pb2.LanguageHandshakeResponse()

    def GetPluginInfo(self, request, context):
        return plugin_pb2.PluginInfo(version=HOST_VERSION)

    def About(self, request, context):
        python = _python_for(request.info)
        version = subprocess.run(
            [python, "-c", "import platform; print(platform.python_version())"],
            capture_output=True, text=True, check=False,
        ).stdout.strip()
        return language_pb2.AboutResponse(executable=python, version=version)

    def _plugins(self, info):
        python = _python_for(info)
        done = subprocess.run([python, "-c", _PLUGINS_SCRIPT], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"listing the Pulumi plugins of {python} failed: {done.stderr.strip()}")
        return [p for p in json.loads(done.stdout or "[]") if not p["parameterized"]]

    def GetRequiredPlugins(self, request, context):
        plugins = [
            plugin_pb2.PluginDependency(name=p["name"], kind="resource", version=p["version"], server=p["server"])
            for p in self._plugins(request.info)
        ]
        return language_pb2.GetRequiredPluginsResponse(plugins=plugins)

    def GetRequiredPackages(self, request, context):
        packages = [
            plugin_pb2.PackageDependency(name=p["name"], kind="resource", version=p["version"], server=p["server"])
            for p in self._plugins(request.info)
        ]
        return language_pb2.GetRequiredPackagesResponse(packages=packages)

    def Run(self, request, context):
        info = request.info
        try:
            python = _python_for(info)
        except RuntimeError as exn:
            return language_pb2.RunResponse(error=str(exn))
        args = [python, EXEC]

        def arg(key, value):
            if value:
                args.extend([f"--{key}", str(value)])

        arg("monitor", request.monitor_address)
        arg("engine", self.engine_address)
        arg("project", request.project)
        arg("root_directory", info.root_directory)
        arg("stack", request.stack)
        arg("pwd", request.pwd)
        arg("dry_run", "true" if request.dryRun else "false")
        arg("parallel", str(request.parallel))
        arg("tracing", self.tracing)
        arg("organization", request.organization)
        args.append(info.entry_point or request.program or ".")
        args.extend(request.args)

        env = dict(os.environ)
        env["PULUMI_CONFIG"] = json.dumps(dict(request.config))
        env["PULUMI_CONFIG_SECRET_KEYS"] = json.dumps(list(request.configSecretKeys))
        try:
            child = subprocess.Popen(args, cwd=info.program_directory or None, env=env)
        except OSError as exn:
            return language_pb2.RunResponse(error=f"problem executing program (could not run language executor): {exn}")
        with self.lock:
            self.children.add(child)
        try:
            code = child.wait()
        finally:
            with self.lock:
                self.children.discard(child)
        if code == 0:
            return language_pb2.RunResponse()
        if code == BAIL_EXIT_CODE:
            return language_pb2.RunResponse(bail=True)
        return language_pb2.RunResponse(error=f"program exited with non-zero exit code: {code}")

    def Cancel(self, request, context):
        self.signal_children(signal.SIGINT)
        return empty_pb2.Empty()

    def signal_children(self, sig):
        with self.lock:
            children = list(self.children)
        for child in children:
            try:
                child.send_signal(sig)
            except OSError:
                pass


def main(argv):
    tracing = ""
    positional = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-tracing", "--tracing") and i + 1 < len(argv):
            tracing = argv[i + 1]
            i += 1
        elif a.startswith(("-tracing=", "--tracing=")):
            tracing = a.split("=", 1)[1]
        elif not a.startswith("-"):
            positional.append(a)
        # other flags of the Go host (-root=..., -logtostderr, -v=N) are not needed here
        i += 1
    if not os.path.exists(EXEC):
        print(f"missing executor {EXEC}", file=sys.stderr)
        return 1

    host = LanguageHost(positional[-1] if positional else "", tracing)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=8),
        options=[("grpc.max_receive_message_length", 400 * 1024 * 1024)],
    )
    language_pb2_grpc.add_LanguageRuntimeServicer_to_server(host, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    # The plugin protocol: the first line on stdout is the port the CLI dials.
    print(port, flush=True)

    def shutdown(signum, frame):
        host.signal_children(signal.SIGTERM)
        server.stop(0)

    signal.signal(signal.SIGTERM, shutdown)
    signal.signal(signal.SIGINT, shutdown)
    server.wait_for_termination()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
EOF
}

# --- command provider ---------------------------------------------------------------------------
provide_command() {
  local key found start gobin
  key="$(key_command)"
  if stamp_ok command "$key" && [ -x "$BIN/pulumi-resource-command" ]; then
    return 0
  fi
  if found="$(find_on_path pulumi-resource-command "$COMMAND_VERSION" -version)"; then
    ln -sfn "$found" "$BIN/pulumi-resource-command"
    say "using pulumi-resource-command $COMMAND_VERSION from $found"
    stamp_set command "$key"
    return 0
  fi
  go_env
  start=$SECONDS
  say "building pulumi-resource-command $COMMAND_VERSION (commit $COMMAND_COMMIT)…"
  gobin="$WORK/command-bin"
  rm -rf "$gobin"
  # Built on its own (not in the CLI's module), so that version selection keeps its own SDK.
  if ! (cd "$WORK" && GOBIN="$gobin" go install -trimpath \
    -ldflags "-s -w -X github.com/pulumi/pulumi-command/provider/pkg/version.Version=$COMMAND_VERSION" \
    "$COMMAND_PKG@$COMMAND_MODULE_VERSION"); then
    say "cannot provide pulumi-resource-command $COMMAND_VERSION: the Go module proxy did not serve"
    say "  github.com/pulumi/pulumi-command/provider@$COMMAND_MODULE_VERSION (commit $COMMAND_COMMIT),"
    say "  and no pulumi-resource-command $COMMAND_VERSION is on PATH."
    return 2
  fi
  install -m 0755 "$gobin/pulumi-resource-command" "$BIN/pulumi-resource-command"
  rm -rf "$gobin"
  stamp_set command "$key"
  say "pulumi-resource-command $COMMAND_VERSION built in $(elapsed $((SECONDS - start)))"
}

# Register the command provider in PULUMI_HOME, from the file (no download).
register_command_plugin() {
  local key
  key="$(key_plugin)"
  if stamp_ok plugin "$key"; then
    return 0
  fi
  PULUMI_SKIP_UPDATE_CHECK=true PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true \
    "$BIN/pulumi" plugin install resource command "$COMMAND_VERSION" \
    --file "$(readlink -f "$BIN/pulumi-resource-command")" --non-interactive >&2 ||
    die "pulumi plugin install resource command $COMMAND_VERSION --file … failed"
  stamp_set plugin "$key"
  say "registered plugin resource command $COMMAND_VERSION in $PULUMI_HOME"
}

total=$SECONDS
provide_pulumi
provide_language
status=0
provide_command || status=$?
if [ "$status" -eq 0 ]; then
  register_command_plugin
elif [ "${BLACKWELL_ALLOW_MISSING_COMMAND:-}" = 1 ]; then
  say "warning: continuing without pulumi-resource-command (BLACKWELL_ALLOW_MISSING_COMMAND=1)"
  status=0
fi
say "engine in $BIN ($(elapsed $((SECONDS - total))))"
exit "$status"
