"""The flag checker (templates/scripts/engine_flags.py) without an engine: its logic over a stand-in
argparse parser, its --help fallback, and the one program each runtime sends to the node with it
(components/steps/render.py python_program). The real vLLM parser runs in the lab
(tests/lab/test_lab_preflight.py)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys

import pytest

from components.engines import ENGINES
from components.steps.render import TEMPLATES, python_program


@pytest.fixture(scope="module")
def flags():
    spec = importlib.util.spec_from_file_location("engine_flags", TEMPLATES / "scripts" / "engine_flags.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["engine_flags"] = module   # dataclasses look their module up there
    sys.path.insert(0, str(TEMPLATES / "scripts"))   # the engines' own modules, as bundled on the node
    spec.loader.exec_module(module)
    yield module
    sys.path.remove(str(TEMPLATES / "scripts"))
    for name in ("engine_flags", *(e.probe_module for e in ENGINES.values())):
        sys.modules.pop(name, None)


def stand_in_parser() -> argparse.ArgumentParser:
    """Shaped as vLLM's `serve` parser: an optional positional model, flags, a choice, typed values."""
    p = argparse.ArgumentParser(prog="vllm serve")
    p.add_argument("model_tag", nargs="?")
    p.add_argument("--port", type=int)
    p.add_argument("--dtype", choices=["auto", "bfloat16", "float16"])
    p.add_argument("--enforce-eager", action="store_true")
    p.add_argument("--max-num-seqs", type=int)
    p.add_argument("--fp4-gemm-backend")
    return p


def test_a_command_line_the_parser_takes_has_no_problem_model_path_included(flags):
    args = ["/models/tiny", "--port", "8000", "--dtype", "bfloat16", "--enforce-eager"]
    assert flags.parser_problems(stand_in_parser(), args, "vllm", "0.32.0") == []


def test_an_unknown_flag_is_named_with_the_engine_its_version_and_the_fix(flags):
    [line] = flags.parser_problems(stand_in_parser(), ["/m", "--enforce-eagerr", "--port", "1"], "vllm", "0.32.0")
    assert line.startswith("--enforce-eagerr: unknown to vllm 0.32.0 (did you mean --enforce-eager?); fix: ")
    assert "extra_args" in line


def test_a_wrong_choice_and_a_bad_value_are_named_too(flags):
    problems = flags.parser_problems(stand_in_parser(), ["/m", "--dtype", "bf17", "--port", "eighty"],
                                     "vllm", "0.32.0")
    assert len(problems) == 2, problems
    assert problems[0].startswith("--dtype: vllm 0.32.0 rejects it: invalid choice: 'bf17'")
    assert problems[1].startswith("--port: vllm 0.32.0 rejects it: invalid int value: 'eighty'")
    assert all("fix: " in p for p in problems)


def test_every_problem_of_one_command_line_is_named_in_one_run(flags):
    args = ["/m", "--no-such", "x", "--dtype", "bf17", "--max-num-seqs", "4", "--other-unknown"]
    problems = flags.parser_problems(stand_in_parser(), args, "vllm", "1")
    assert [p.split(":", 1)[0] for p in problems] == ["--dtype", "--no-such", "--other-unknown"], problems


def test_a_renamed_flag_says_what_this_version_calls_it(flags):
    [line] = flags.parser_problems(stand_in_parser(), ["--fp4-gemm-runner-backend", "flashinfer_cudnn"],
                                   "sglang", "0.5.23")
    assert line.startswith("--fp4-gemm-runner-backend: this sglang (0.5.23) calls it --fp4-gemm-backend (")
    assert "fix: write --fp4-gemm-backend instead" in line


def test_each_rename_names_both_spellings_and_their_versions(flags):
    for r in (r for engine in ENGINES for r in flags.renames(engine)):
        assert r.old.startswith("--") and r.new.startswith("--") and r.old != r.new
        assert r.new in r.versions and r.old in r.versions


def test_drop_option_takes_the_flag_and_its_values_only(flags):
    assert flags.drop_option(["/m", "--a", "1", "2", "--b"], "--a") == ["/m", "--b"]
    assert flags.drop_option(["/m", "--a=1", "--b", "2"], "--a") == ["/m", "--b", "2"]
    assert flags.drop_option(["/m", "--b"], "--a") == ["/m", "--b"]


def test_the_command_line_is_taken_after_the_engine_program(flags):
    assert flags.engine_args("vllm", ["vllm", "serve", "/m", "--port", "1"]) == ["/m", "--port", "1"]
    assert flags.engine_args("sglang", ["python3", "-m", "sglang.launch_server", "--tp", "4"]) == ["--tp", "4"]


def test_without_the_parser_the_help_text_names_unknown_flags_and_says_so(flags, monkeypatch):
    def no_parser(engine):
        raise ImportError("no make_arg_parser here")
    monkeypatch.setattr(flags, "serve_parser", no_parser)
    monkeypatch.setattr(flags, "help_text", lambda engine: "  --port PORT\n  --dtype {auto,bfloat16}\n")
    checked, problems = flags.check("vllm", ["vllm", "serve", "/m", "--port", "1", "--dtyp", "x"])
    assert "checked against its --help text, values unchecked" in checked
    assert "ImportError: no make_arg_parser here" in checked
    assert [p.split(":", 1)[0] for p in problems] == ["--dtyp"]
    assert "(did you mean --dtype?)" in problems[0]


def test_check_all_names_a_problem_shared_by_the_ranks_once(flags, monkeypatch):
    monkeypatch.setattr(flags, "serve_parser", lambda engine: (stand_in_parser(), "stand-in"))
    rank0 = ["vllm", "serve", "/m", "--enforce-eagerr"]
    checked, problems = flags.check_all("vllm", [rank0, [*rank0, "--port", "2"]])
    assert "its own parser (stand-in) checked" in checked
    assert len(problems) == 1 and problems[0].startswith("--enforce-eagerr: unknown to vllm")


def test_the_bundled_program_runs_its_main_with_the_module_imported(tmp_path):
    """python_program: engine_flags registered, then probe_engine runs as __main__ (here up to its
    first need of an engine: the model registry it cannot import is a finding, not a crash)."""
    program = python_program("probe_engine", "engine_flags", ENGINES["vllm"].probe_module)
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    argvs = json.dumps([["vllm", "serve", str(tmp_path), "--port", "1"]])
    done = subprocess.run([sys.executable, "-", "vllm", str(tmp_path), argvs], input=program,
                          capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 1, done.stderr
    assert "PREFLIGHT FAILED: could not read the vllm model registry" in done.stdout
    assert "flags: vllm " in done.stdout     # the checker ran (here on --help, which is absent too)


def test_a_check_of_the_parser_beyond_argparse_is_a_problem_not_a_crash(flags):
    class Strict(argparse.ArgumentParser):
        def parse_args(self, args=None, namespace=None):
            raise ValueError("`model` should be provided as the first positional argument")
    [line] = flags.parser_problems(Strict(), ["--port", "1"], "vllm", "0.32.0")
    assert line.startswith("the command line: vllm 0.32.0 rejects it: ValueError: `model` should be provided")
