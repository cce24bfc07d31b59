"""Run inside the engine image on its node, before anything is stopped: does this engine know
the model, and does the engine's own parser take the command lines we will start it with
(engine_flags.py and the engine's engine_NAME.py, bundled)? The model check of a Hugging Face
checkpoint (hf_model_problems: the engine registers its architecture, this image's transformers
parses its config.json) serves every engine whose module defines no model_problems of its own.
Argv: ENGINE MODEL_DIR ARGVS_JSON (a list of argv lists). Prints one line per finding; exits 1
with the fix when one fails."""

import json
import sys
from importlib import metadata

import engine_flags


def version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "absent"


def hf_model_problems(hooks, engine: str, model_dir: str) -> tuple[str, list[str]]:
    """(what the model is, the problems) of a Hugging Face checkpoint directory."""
    config = json.load(open(f"{model_dir}/config.json"))
    archs = config.get("architectures") or []
    problems = []
    try:
        known = hooks.known_architectures()
        missing = [a for a in archs if a not in known]
        if missing:
            problems.append(f"the engine does not register {', '.join(missing)}; fix: a base image whose "
                            f"{engine} knows it (a newer release or main)")
    except Exception as exc:  # an engine that cannot even load its registry is a finding too
        problems.append(f"could not read the {engine} model registry: {exc.__class__.__name__}: {exc}")
    try:
        from transformers import AutoConfig
        AutoConfig.from_pretrained(model_dir)
    except Exception as exc:
        problems.append(f"transformers {version('transformers')} cannot parse config.json "
                        f"({exc.__class__.__name__}: {str(exc)[:200]}); fix: set the image's transformers "
                        f"upgrade layer (images[].transformers, e.g. '>=5.2')")
    return f"architectures: {', '.join(archs) or 'none'}", problems


def main() -> int:
    engine, model_dir, argvs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    hooks = engine_flags.engine_module(engine)   # engine_NAME.py, bundled with this program
    versions = {d: version(d) for d in (*hooks.DISTS, "transformers")}
    found = ", ".join(f"{k} {v}" for k, v in versions.items() if v != "absent")
    own = getattr(hooks, "model_problems", None)
    model, problems = own(model_dir) if own else hf_model_problems(hooks, engine, model_dir)
    checked, flag_problems = engine_flags.check_all(engine, argvs)
    problems += flag_problems
    print(f"{model}; found: {found}")
    print(f"flags: {checked}")
    for problem in problems:
        print(f"PREFLIGHT FAILED: {problem}")
    return 1 if problems else 0


sys.exit(main())
