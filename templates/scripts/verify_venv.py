"""Run with the venv's python before it is put in use (templates/scripts/build-venv.sh.j2):
the engine imports and says its version, the packages the node provides (no_deps_over) still have
the versions they had, and the engine's own parser takes the command line of every deployment of
this venv (engine_flags.py and each engine's engine_NAME.py, bundled with this program by
components/render.py python_program).
Argv: ENGINE KEPT_FILE ARGVS_JSON (a list of argv lists). Prints its findings; exits 1 with the fix."""

import importlib
import json
import sys
from importlib import metadata
from pathlib import Path

import engine_flags

engine, kept_file, argvs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
problems = []

# The engine's module (engine_NAME.py, bundled) says what imports it.
module = importlib.import_module(engine_flags.engine_module(engine).MODULE)
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

checked, flag_problems = engine_flags.check_all(engine, argvs)
problems += flag_problems
print(f"[blackwell verify] flags: {checked}")

for problem in problems:
    print(f"VERIFY FAILED: {problem}")
sys.exit(1 if problems else 0)
