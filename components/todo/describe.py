"""One pending step → what an operator reads: the sentence, phase, node and priority that its
component declared when it created the step (components/steps/info.py), for what the step does now
(create, update, replace or delete). Nothing is guessed from names, types or script text.

Priority rule (declared by each component; one line, on purpose): **normal** for checks of kept
services and for deletions (clean-up); **high** for everything else, the path to a serving
engine.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.steps.info import PHASES, StepInfo

__all__ = ["PHASES", "Description", "describe"]


@dataclass(frozen=True)
class Description:
    content: str
    phase: str
    priority: str
    node: str | None


def describe(info: StepInfo | None, op: str, name: str) -> Description:
    """op: create, update, replace or delete. A step with no declaration (a state written by
    another version, a resource no component made) is still listed, by its resource name."""
    if info is None:
        gone = op == "delete"
        return Description(content=f"Remove {name}" if gone else f"Run {name}", phase="serve",
                           priority="normal" if gone else "high", node=None)
    return Description(content=info.sentence(op), phase=info.phase, priority=info.priority_for(op), node=info.node)
