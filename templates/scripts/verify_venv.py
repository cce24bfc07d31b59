"""Run with the venv's python before it is put in use (templates/scripts/build-venv.sh.j2):
the engine imports and says its version, the packages the node provides (no_deps_over) still have
the versions they had, and the engine's `--help` knows every flag the stack passes it.
Argv: ENGINE KEPT_FILE RENAMED_JSON FLAG... Prints its findings; exits 1 with the fix."""

import importlib
import json
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

engine, kept_file, renamed = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
flags = sys.argv[4:]
problems = []

module = importlib.import_module(engine)
version = getattr(module, "__version__", None)
if version is None:
    try:
        version = metadata.version(engine)
    except metadata.PackageNotFoundError:
        version = "unknown"
print(f"[blackwell verify] {engine} {version} imports from {Path(module.__file__).parent}")

for line in Path(kept_file).read_text().splitlines():
    name, _, want = line.partition("==")
    try:
        have = metadata.version(name)
    except metadata.PackageNotFoundError:
        have = "absent"
    if have != want:
        problems.append(f"{name} is {have}, the node provided {want}: the install replaced it; fix: pin the "
                        f"engine's requirements so that they accept {name}=={want}")

bindir = Path(sys.executable).parent
if engine == "sglang":
    tries = [[sys.executable, "-m", "sglang.launch_server", "--help"]]
else:
    # vLLM: `--help=all` lists every flag on releases that group them; older ones know only --help.
    tries = [[str(bindir / "vllm"), "serve", "--help=all"], [str(bindir / "vllm"), "serve", "--help"]]
helptext = ""
for argv in tries:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    if done.returncode == 0:
        helptext = done.stdout
        break
if not helptext:
    problems.append(f"`{' '.join(argv[-3:])}` failed: {(done.stderr or done.stdout).strip()[-400:]}")
else:
    known = set(re.findall(r"(?<![\w-])(--[A-Za-z0-9][A-Za-z0-9_-]*)", helptext))
    for flag in flags:
        if flag in known:
            continue
        other = renamed.get(flag)
        if other in known:
            problems.append(f"{flag}: this {engine} ({version}) calls it {other}; fix: write {other} instead (in "
                            f"extra_args: the option fp4_gemm_backend writes --fp4-gemm-backend), or pin a commit "
                            f"whose {engine} knows {flag}")
        else:
            problems.append(f"{flag}: unknown to this {engine} ({version}); fix: remove the option, or pin an "
                            f"engine that knows it")
    print(f"[blackwell verify] {engine} --help knows all {len(flags) - len([p for p in problems if p.startswith('--')])}"
          f" of {len(flags)} flags we pass")

for problem in problems:
    print(f"VERIFY FAILED: {problem}")
sys.exit(1 if problems else 0)
