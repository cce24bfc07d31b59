"""The parts discovery writes, built from the captured script outputs of data/ as
`python -m components.discover` builds them from the machines (for the writer's unit tests and
the engine's preview of a discovered stack)."""

from __future__ import annotations

from pathlib import Path

from components.discover.fabric import choose
from components.discover.facts import parse
from components.discover.nodes import Discovered, assemble

REPO = Path(__file__).resolve().parents[3]
DATA = Path(__file__).parent / "data"
LAB_KEYS = {i: " ".join((REPO / f"tests/lab/hostkeys/bws-lab-{i}/ssh_host_ed25519_key.pub").read_text().split()[:2])
            for i in (1, 2)}
# (name in the stack, data file, host)
LAB = [("lab-1", "lab-1", "198.18.0.11"), ("lab-2", "lab-2", "198.18.0.12")]
SPARKS = [("spark-1a32", "spark-1", "198.18.3.12"), ("spark-5be3", "spark-2-port0", "198.18.3.13")]


def discovered(pairs: list[tuple[str, str, str]], patterns=(), data: Path = DATA, files: dict | None = None) -> Discovered:
    """`files`: another capture (in `data`) in place of a data file."""
    machines = [parse(host, ((data if f in (files or {}) else DATA) / f"{(files or {}).get(f, f)}.txt").read_text())
                for _, f, host in pairs]
    named = [(name, m, LAB_KEYS[1 + i % 2]) for i, ((name, _, _), m) in enumerate(zip(pairs, machines))]
    return assemble(named, "root", 22, "tests/lab/.state/id_ed25519", choose(machines), patterns)
