"""Secrets written where they would be read in plain text: an API key or token in a
deployment's `env` or `extra_args` (both land in the unit file, the process table and `docker
inspect`), and a `{config: KEY}` reference whose value in the stack config is not a Pulumi
secret. Each problem is "key.path: what; fix: how", relative to the stack."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from components.config.fields import SecretRef
from components.config.namespace import PROJECT

if TYPE_CHECKING:
    from components.config.schema import StackSpec
# A name is a secret's when one of its words (split at - and _) is one of these, or it has the
# words API KEY in a row: HF_TOKEN, OPENAI_API_KEY, --api-key, DB_PASSWORD; not MAX_TOKENS or
# TOKENIZERS_PARALLELISM.
SECRET_WORDS = {"token", "secret", "password", "passwd", "apikey", "credentials"}
# A Hugging Face access token, wherever it is written.
HF_TOKEN = re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")

_SET_SECRET = f"pulumi config set --secret {PROJECT}:KEY VALUE"


def secret_named(name: str) -> bool:
    words = [w for w in re.split(r"[-_]+", name.lower()) if w]
    return bool(SECRET_WORDS.intersection(words)) or any(a == "api" and b == "key" for a, b in zip(words, words[1:]))


def plaintext_problems(spec: "StackSpec") -> list[str]:
    problems: list[str] = []
    for i, d in enumerate(spec.deployments):
        p = f"deployments[{i}]"
        for name, value in d.env.items():
            if secret_named(name) or HF_TOKEN.search(value):
                problems.append(f"{p}.env.{name}: a secret in env would sit in the unit file and `docker inspect` in "
                                f"plain text; fix: remove it and use a secret reference — api_key: {{config: KEY}} for "
                                f"the engine's API key, models[].hf_token: {{config: KEY}} for a Hugging Face token "
                                f"({_SET_SECRET})")
        for j, arg in enumerate(d.extra_args):
            flag = arg.split("=", 1)[0]
            if HF_TOKEN.search(arg):
                problems.append(f"{p}.extra_args[{j}]: a Hugging Face token on the command line is readable in `ps` "
                                f"and the unit file; fix: remove it and set models[].hf_token: {{config: KEY}} "
                                f"({_SET_SECRET})")
            elif flag.startswith("-") and secret_named(flag.lstrip("-")):
                problems.append(f"{p}.extra_args[{j}]: {flag} puts a secret on the engine's command line (`ps`, the "
                                f"journal, `docker inspect`); fix: remove it (and its value) and set "
                                f"api_key: {{config: KEY}} ({_SET_SECRET})")
    return problems


def secret_refs(value: Any, path: str = "") -> Iterator[tuple[str, SecretRef]]:
    """(key path, ref) of every secret reference in a validated spec."""
    if isinstance(value, SecretRef):
        yield path, value
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            yield from secret_refs(getattr(value, name), f"{path}.{name}" if path else name)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from secret_refs(v, f"{path}[{i}]")
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from secret_refs(v, f"{path}.{k}")


def config_ref_problems(spec: "StackSpec", keys: Collection[str], secret_keys: Collection[str]) -> list[str]:
    """Every {config: KEY} names a key of this project's namespace that is set, and a secret.
    `keys`: the namespace's keys (without the prefix); `secret_keys`: those that are secrets."""
    problems: list[str] = []
    for path, ref in secret_refs(spec):
        key = ref.config
        if key is None:
            continue
        full = f"{PROJECT}:{key}"
        if key in type(spec).model_fields:
            problems.append(f"{path}.config: '{key}' is a key of the stack config itself, not a secret; "
                            f"fix: keep the secret in a key of its own ({_SET_SECRET}) and name that key")
        elif key not in keys:
            problems.append(f"{path}.config: secret config key {full} is not set; "
                            f"fix: pulumi config set --secret {full} VALUE")
        elif key not in secret_keys:
            problems.append(f"{path}.config: {full} is stored in plain text in the stack config; "
                            f"fix: pulumi config set --secret {full} VALUE (its value becomes `secure: …`)")
    return problems
