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
