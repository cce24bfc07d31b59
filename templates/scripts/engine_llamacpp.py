"""llama.cpp's server, as the engine probe reads it inside the image (bundled with it by
components/render.py python_program; components/engines/llamacpp.py names it, and loads this file
too for the fit check's GGUF facts: one reader). The interface is engine_vllm.py's.

llama-server is a C++ program: there is no Python parser to import, so serve_parser() says so and
engine_flags.py checks every flag name against `llama-server --help` (an unknown flag fails the
probe). The model is a GGUF file, not a Hugging Face checkpoint: model_problems() reads the header
of each file the command lines name (standard library only: the image need not have the `gguf`
package)."""

import json
import os
import struct
import subprocess
import sys

MODULE = "engine_llamacpp"        # no Python package: this module's __version__ asks the binary
DISTS = ()
ARGS_AFTER = "llama-server"       # its flags follow the program's name
RENAMES = ()

MAGIC = b"GGUF"
# GGUF value types (ggml/include/gguf.h): struct formats of the scalars; 8 string, 9 array.
SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
STRING, ARRAY = 8, 9
# Arrays that are long and of no use to a fact (the tokenizer's): skipped, not kept.
SKIPPED_ARRAYS = ("tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type",
                  "tokenizer.ggml.merges", "tokenizer.ggml.precompiled_charsmap")


class GGUFError(ValueError):
    pass


def _read(f, fmt: str):
    size = struct.calcsize("<" + fmt)
    data = f.read(size)
    if len(data) != size:
        raise GGUFError("the file ends inside its header")
    return struct.unpack("<" + fmt, data)[0]


def _string(f) -> str:
    n = _read(f, "Q")
    if n > 1 << 24:
        raise GGUFError(f"a string of {n} bytes in the header")
    return f.read(n).decode("utf-8", "replace")


def _value(f, kind: int, keep: bool):
    if kind in SCALARS:
        return _read(f, SCALARS[kind])
    if kind == STRING:
        return _string(f)
    if kind == ARRAY:
        item, n = _read(f, "I"), _read(f, "Q")
        if item in SCALARS and not keep:   # fixed size: seek past it
            f.seek(n * struct.calcsize("<" + SCALARS[item]), os.SEEK_CUR)
            return None
        values = [_value(f, item, keep) for _ in range(n)]
        return values if keep else None
    raise GGUFError(f"unknown value type {kind} in the header")


def gguf_metadata(path: str) -> dict:
    """The key/value metadata of a GGUF file (v2 or v3), the tokenizer's arrays left out."""
    with open(path, "rb") as f:
        if f.read(4) != MAGIC:
            raise GGUFError("not a GGUF file (no GGUF magic)")
        version = _read(f, "I")
        if version not in (2, 3):
            raise GGUFError(f"GGUF version {version}, not 2 or 3")
        _tensors, count = _read(f, "Q"), _read(f, "Q")
        meta = {"GGUF.version": version}
        for _ in range(count):
            key = _string(f)
            value = _value(f, _read(f, "I"), keep=key not in SKIPPED_ARRAYS)
            if value is not None:
                meta[key] = value
        return meta


def gguf_facts(path: str) -> dict:
    """What serving it needs to know: architecture, context length, layers, heads, the file's size."""
    meta = gguf_metadata(path)
    arch = meta.get("general.architecture")
    if not isinstance(arch, str):
        raise GGUFError("no general.architecture in its metadata")

    def of(key: str):
        return meta.get(f"{arch}.{key}")
    heads = of("attention.head_count")
    return {"architecture": arch, "name": meta.get("general.name"), "context_length": of("context_length"),
            "block_count": of("block_count"), "embedding_length": of("embedding_length"),
            "head_count": heads, "head_count_kv": of("attention.head_count_kv") or heads,
            "key_length": of("attention.key_length"), "file_type": meta.get("general.file_type"),
            "size_bytes": os.path.getsize(path)}


def model_files(argvs: list) -> list:
    """The GGUF files the command lines load (the value of each --model)."""
    return list(dict.fromkeys(a[i + 1] for a in argvs for i, w in enumerate(a[:-1]) if w in ("--model", "-m")))


def model_problems(model_dir: str) -> tuple:
    """(what the model is, the problems): each file our command lines name (probe_engine.py's third
    argument, ARGVS_JSON) is in the model's directory and is a GGUF file whose header reads."""
    files = model_files(json.loads(sys.argv[3])) if len(sys.argv) > 3 else []
    if not files:
        return "no GGUF file named", ["no --model FILE.gguf on the command line; fix: name the file in the "
                                      "deployment's extra_args: [--model, FILE.gguf]"]
    found, problems = [], []
    present = sorted(n for n in os.listdir(model_dir) if n.endswith(".gguf")) if os.path.isdir(model_dir) else []
    for path in files:
        if not os.path.isfile(path):
            problems.append(f"{path}: no such file in the model's cache (it holds: {', '.join(present) or 'no .gguf'})"
                            f"; fix: name one of them in extra_args: [--model, FILE.gguf]")
            continue
        try:
            facts = gguf_facts(path)
        except (OSError, GGUFError, struct.error) as exc:
            problems.append(f"{path}: {exc}; fix: fetch the model again (or name another file)")
            continue
        found.append(f"{os.path.basename(path)}: GGUF {facts['architecture']}, context {facts['context_length']}, "
                     f"{facts['block_count']} layers, {facts['size_bytes']} bytes")
    return "; ".join(found) or "no readable GGUF file", problems


def __getattr__(name: str):
    """__version__, read when engine_flags.engine_version asks: the first line of
    `llama-server --version` (e.g. "version: 0.5.0-dev (build 0, commit 0c1e570)")."""
    if name != "__version__":
        raise AttributeError(name)
    done = subprocess.run(["llama-server", "--version"], capture_output=True, text=True, timeout=60)
    lines = (done.stdout + done.stderr).splitlines()
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("version:")), "unknown version")


def known_architectures() -> set:
    return set()   # not used: model_problems reads the file itself


def serve_parser():
    raise ImportError("llama-server is a C++ program: no Python parser to import")


def help_argvs(python: str, path: str) -> list:
    return [["llama-server", "--help"]]
