"""What a step is, in the operator's words: the descriptor every component gives a step when it
creates it. The todo list (components/todo) shows these sentences; it never guesses them from
resource names, type chains or script text.

The descriptors travel as an output of the Node component each step runs on (STEPS_OUTPUT): a
list of plain records keyed by the step's URN. A preview's events carry the new ones; the state
the last `up` left holds the ones of steps that are now being deleted. (Not a stack output:
those are printed at the end of every `pulumi up`.)"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from components.steps.rollback import Rollback
    from components.steps.target import Observer

STEPS_OUTPUT = "todo_steps"

# The order work happens in: preflight checks gate the first change, then retire, image, model,
# cluster, serve and verify.
PHASES = ("preflight", "retire", "image", "model", "cluster", "serve", "verify")


@dataclass(frozen=True)
class StepContext:
    """What every step of a node is run with, given to the Node when it is built (NodeArgs):
    observer: when the nodes are observed, what each step expects is checked there before the
    plan (components/facts; None: offline, or not observed); rollback: when a failed `up`
    puts back what it changed (components/steps/rollback.py; None: it does not)."""
    observer: Observer | None = None
    rollback: Rollback | None = None


@dataclass(frozen=True)
class StepInfo:
    """do: the sentence for the first run; redo: for a re-run after a change (default: do);
    undo: for the delete (default: "Undo: <do>"). priority: high on the path to a serving engine,
    normal for checks that change nothing (deletions are always normal)."""
    node: str
    phase: str
    do: str
    undo: str | None = None
    redo: str | None = None
    priority: str = "high"

    def __post_init__(self) -> None:
        if self.phase not in PHASES:
            raise ValueError(f"unknown phase {self.phase!r}; one of {', '.join(PHASES)}")
        if self.priority not in ("high", "normal"):
            raise ValueError(f"unknown priority {self.priority!r}")

    def sentence(self, op: str) -> str:
        if op == "delete":
            return self.undo or f"Undo: {self.do}"
        if op in ("update", "replace"):
            return self.redo or self.do
        return self.do

    def priority_for(self, op: str) -> str:
        return "normal" if op == "delete" else self.priority

    def record(self, urn: Any) -> dict:
        """The stack output's entry (urn may be an Output; it is known in previews too)."""
        return {"urn": urn, **{k: v for k, v in asdict(self).items() if v is not None}}

    @classmethod
    def from_record(cls, record: Mapping) -> "StepInfo":
        return cls(**{k: record[k] for k in ("node", "phase", "do", "undo", "redo", "priority")
                      if record.get(k) is not None})


def index(records: Any) -> dict[str, StepInfo]:
    """The stack output → {urn: StepInfo}; anything malformed is skipped (an old state may hold
    another shape; the item then falls back to a plain description)."""
    out: dict[str, StepInfo] = {}
    if not isinstance(records, list):
        return out
    for r in records:
        if not isinstance(r, Mapping) or not isinstance(r.get("urn"), str):
            continue
        try:
            out[r["urn"]] = StepInfo.from_record(r)
        except (KeyError, TypeError, ValueError):
            continue
    return out
