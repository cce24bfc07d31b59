"""single: the engine on one node, one rank."""

from __future__ import annotations

from components.launches.base import Launch


class Single(Launch):
    name = "single"
    spans_nodes = False

    def node_count_problem(self, d):
        if len(d.nodes) != 1:
            return ("topology: 'single' takes exactly one node; "
                    "fix: use 'ray' (vLLM) or 'native' (SGLang) for more, or list one node")
        return None
