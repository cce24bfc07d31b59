"""The stack config: schema (schema.py), cross-field checks (references.py), loading (load.py)."""

from .load import ConfigError, load_from_pulumi, load_stack_file, parse
from .schema import StackSpec

__all__ = ["ConfigError", "StackSpec", "load_from_pulumi", "load_stack_file", "parse"]
