"""Which running units and containers serve a model (an engine that is not ours), what each
serves when its command line says, and what to propose for it: `retire` (stopped before ours
start, restored on destroy), or `keep` for an embeddings or reranker server, which usually
shares the machine on purpose."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from components.config.schema import protected_unit
from components.engines import ENGINES
from components.discover.facts import MachineFacts, Service

# Programs (a word's file name, an image's name or a Python module) that serve models: our
# engines' own (Engine.programs) and servers we do not drive but a machine may run.
OTHER_SERVERS = ("ollama", "text-generation")
ENGINE_PROGRAMS = re.compile(
    "^(" + "|".join(re.escape(p) for e in ENGINES.values() for p in e.programs) + "|"
    + "|".join(re.escape(p) for p in OTHER_SERVERS) + ")")
KEEP_HINTS = ("embed", "rerank")
PORT_FLAGS = ("--port", "-p", "--http-port")
MODEL_FLAGS = ("--model", "--model-path", "--model-id", "-m", "--served-model-name")


@dataclass(frozen=True)
class EngineService:
    node: str
    service: Service
    port: int | None
    model: str | None
    keep: bool

    @property
    def seen(self) -> str:
        """'NAME on NODE serves model M, port P' (as far as its command line says)."""
        parts = ([f"model {self.model}"] if self.model else []) + ([f"port {self.port}"] if self.port else [])
        where = f"{self.service.name} on {self.node}"
        return f"{where} serves {', '.join(parts)}" if parts else f"{where} (its command line names no model or port)"


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:  # an unbalanced quote in someone's command line
        return command.split()


def is_engine(command: str, patterns: list[re.Pattern]) -> bool:
    for word in _words(command):
        name = word.rsplit("/", 1)[-1]
        if ENGINE_PROGRAMS.match(name) or ENGINE_PROGRAMS.match(word.removeprefix("-m")):
            return True
    return any(p.search(command) for p in patterns)


def _flag(words: list[str], flags: tuple[str, ...]) -> str | None:
    for i, word in enumerate(words):
        name, eq, value = word.partition("=")
        if name == "-m" and i and words[i - 1].rsplit("/", 1)[-1].startswith("python"):
            continue                 # python -m MODULE: a module, not a model
        if name in flags:
            if eq:
                return value
            if i + 1 < len(words):
                return words[i + 1]
    return None


def served(command: str) -> tuple[int | None, str | None]:
    """(port, model) from an engine's command line, when it names them: `vllm serve MODEL`,
    --model/--model-path/--model-id/-m, --port/-p."""
    words = _words(command)
    port = _flag(words, PORT_FLAGS)
    model = _flag(words, MODEL_FLAGS)
    if model is None and "serve" in words:
        after = words[words.index("serve") + 1:]
        model = after[0] if after and not after[0].startswith("-") else None
    return (int(port) if port and port.isdigit() else None), model


def container_names(command: str) -> set[str]:
    """The containers a unit's `docker run --name NAME` starts (they are the unit's, not apart)."""
    words = _words(command)
    return {w.partition("=")[2] if "=" in w else words[i + 1]
            for i, w in enumerate(words) if (w == "--name" and i + 1 < len(words)) or w.startswith("--name=")}


def engine_services(node: str, facts: MachineFacts, patterns: list[re.Pattern] = ()) -> list[EngineService]:
    """The machine's running engines: its units, then containers no unit of it started. Units
    that keep the node reachable are never proposed: an SSH session's processes (a step of ours,
    someone's `docker run`) live in ssh.service's cgroup on a node without logind sessions."""
    units = [s for s in facts.services if s.kind == "unit" and not protected_unit(s.name)
             and not s.name.startswith("user@") and is_engine(s.command, patterns)]
    started = set().union(*(container_names(u.command) for u in units))
    containers = [s for s in facts.services if s.kind == "container" and s.name not in started
                  and is_engine(f"{s.description} {s.command}", patterns)]
    return [EngineService(node=node, service=s, port=(ps := served(s.command))[0], model=ps[1],
                          keep=any(h in f"{s.name} {s.command}".lower() for h in KEEP_HINTS))
            for s in units + containers]
