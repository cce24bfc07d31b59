"""The stack config: schema (schema.py, plain models on the types of fields.py, every key
described; docs/stack-reference.md is made from it by reference.py), the rules across keys that
load.py runs once the models hold (checks.py: cross-field references.py, cross-resource
crosscheck.py, plain-text secrets plaintext.py, gateway.py, sanity.py), the whole namespace
(namespace.py), stack files read as the engine reads them (stackfile.py), and the one validation
both paths end in (load.py)."""

from components.config.load import ConfigError, load_from_pulumi, load_stack_file, parse, validate
from components.config.schema import StackSpec

__all__ = ["ConfigError", "StackSpec", "load_from_pulumi", "load_stack_file", "parse", "validate"]
