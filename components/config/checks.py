"""The rules that span keys of a stack config (references between its parts, the fabric of each
node, the gateway, monitoring, plausibility, claims on one node, secrets in plain text). They run once the
models of schema.py hold, from load.validate: schema.py stays plain models and imports none of
them, so the config package has no import cycle."""

from __future__ import annotations

from typing import TYPE_CHECKING

from components.config.crosscheck import cross_problems, node_fabric_problems
from components.config.gateway import gateway_problems
from components.config.monitoring import monitoring_problems
from components.config.plaintext import plaintext_problems
from components.config.references import reference_problems
from components.config.sanity import sanity_problems

if TYPE_CHECKING:
    from components.config.schema import StackSpec


def cross_key_problems(spec: StackSpec) -> list[str]:
    """Every problem as "key.path: what; fix: how", relative to the stack."""
    problems = (reference_problems(spec) + node_fabric_problems(spec) + gateway_problems(spec)
                + monitoring_problems(spec) + sanity_problems(spec))
    # Cross-resource checks look names up: they run once the references hold.
    return problems + (cross_problems(spec) if not problems else []) + plaintext_problems(spec)
