"""The interface every serving engine implements: plain data where a fact is fixed (its API key
variable, its paths, the launches it supports, the options only it takes), methods where the answer
depends on the deployment (its command line per rank, its restart policy). How its ranks are
spread over nodes is the launch's (components/launches).

A new engine is: one module here defining a subclass; its in-image module
templates/scripts/engine_NAME.py (how the probe and the venv verify read its model registry, or
check a model of another format, and its own flag parser); its tests. Outside those it touches
components/engines/__init__.py (its ENGINES entry) and docs/stack-reference.md (regenerated:
`engine:` takes one more value). Nothing else reads an engine's name."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel

if TYPE_CHECKING:  # the schema imports the registry: the engines take its models as plain values
    from components.config.schema import DeploymentSpec, ModelSpec


class NoOptions(BaseModel):
    """The deployment keys only an engine takes, with their types, bounds and descriptions: each
    engine's own model (Engine.Options), whose fields the stack schema adds to every deployment
    (config/schema.py) and refuses on another engine's deployment."""


class ModelFileError(Exception):
    """An engine's own model file cannot be read (Engine.fit_inputs): the plan stops with this
    message, which names the file and the fix."""


class Engine(ABC):
    """What it needs from its runtime (components/runtimes), whichever runs it: its program,
    argv[0] of argv(), a bare name found on the image's PATH or in the venv's bin; a python there
    that imports its package (the probe and the verify run probe_module in it); its API key in the
    environment (api_key_var, from the root-only env file the runtime hands over)."""

    name: ClassVar[str]                   # what `engine:` says in a stack file
    launches: ClassVar[frozenset[str]]    # the launches it supports (components/launches; the schema checks)
    api_key_var: ClassVar[str]            # the environment variable it reads its API key from
    health_path: ClassVar[str] = "/health"    # answers once the server is up (the drift observation)
    metrics_path: ClassVar[str] = "/metrics"  # Prometheus text on the API port
    # Its finest live work counters on metrics_path: what moves at every step while it works, not
    # when a request ends. The watchdog tells a busy engine from a wedged one by them, the wedged
    # alert reads them (components/monitoring/series.py PROGRESS); none: every unanswered check counts.
    progress_counters: ClassVar[tuple[str, ...]] = ()
    probe_module: ClassVar[str]           # templates/scripts/<it>.py: its registry and parser, in the image
    Options: ClassVar[type[BaseModel]] = NoOptions  # deployment keys only this engine takes, typed
    dist_port_what: ClassVar[str] = "rendezvous port"  # the native launch's port on the head, in messages
    api_on_every_rank: ClassVar[bool] = False  # every rank serves the API (else the head's alone)
    # Whether its images carry python3 with huggingface_hub, so that a hub model's download can run
    # in one (components/runtimes/docker.py); when not, the fetch checks the image before it starts.
    images_download: ClassVar[bool] = True
    # Its memory semantics (the fit asks the engine, never assumes vLLM's). memory_fraction_flag:
    # the flag that takes `memory_fraction`, a share of each GPU's memory the engine sizes weights,
    # KV cache and its own buffers against; None: it takes no share, its memory is what its context
    # needs (memory_sized_by). kv_cache_dtypes: the KV dtypes it accepts, spelled its own way (each
    # one's bytes per element: sizing.model_facts.KV_DTYPE_BYTES); smaller_kv_dtype: the one the
    # fit advises when the KV cache does not fit.
    memory_fraction_flag: ClassVar[str | None] = None
    memory_sized_by: ClassVar[str] = ""
    kv_cache_dtypes: ClassVar[tuple[str, ...]] = ("auto",)
    smaller_kv_dtype: ClassVar[str | None] = None
    # Its own log line of the KV cache it allocated, the memory ledger's measurement (read from
    # the unit's journal after the health gate): a fixed string that finds the line, and a
    # pattern whose group `tokens` is the cache's size in tokens (kv_tokens_reported).
    kv_report_marker: ClassVar[str] = ""
    # How its servers show in someone's command line (a word's file name, an image's name, a
    # Python module): discovery proposes to retire what runs them (components/discover/engines.py).
    programs: ClassVar[tuple[str, ...]] = ()
    kv_report_pattern: ClassVar[str] = ""

    @property
    def options(self) -> frozenset[str]:
        """The names of its own deployment keys."""
        return frozenset(self.Options.model_fields)

    @abstractmethod
    def argv(self, d: DeploymentSpec, model_path: str, rank: int = 0, head_address: str | None = None) -> list[str]:
        """The command line of rank `rank` of its launch (argv[0] a program name: the runtime says
        where it lives); the launch (components/launches) says which ranks there are."""

    def env(self, d: DeploymentSpec) -> dict[str, str]:
        """Environment the engine itself needs, before the deployment's own env."""
        return {}

    def restart(self, d: DeploymentSpec) -> str:
        """systemd Restart= of every rank's unit."""
        return "on-failure"

    def watches_ranks(self, d: DeploymentSpec) -> bool:
        """Whether each rank past the head needs a rank watch (components/resources/watchdog.py RankWatch)."""
        return False

    def layout_problem(self, d: DeploymentSpec) -> str | None:
        """Why the deployment's launch does not suit this engine (schema message with the fix), or None."""
        if d.topology not in self.launches:
            return (f"topology: '{d.topology}' is not a launch of {self.name}; fix: use one of "
                    f"{', '.join(sorted(self.launches))}")
        return None

    def memory_problem(self, d: DeploymentSpec) -> str | None:
        """Why the deployment's memory keys do not suit this engine (schema message with the fix), or None."""
        if d.kv_cache_dtype not in self.kv_cache_dtypes:
            return (f"kv_cache_dtype: '{d.kv_cache_dtype}' is not a KV cache dtype of {self.name}, which takes "
                    f"{', '.join(self.kv_cache_dtypes)}; fix: use one of these (its own spelling)")
        # Set away from its default (a dump of the spec writes the default back: that one passes).
        if self.memory_fraction_flag is None and d.memory_fraction != type(d).model_fields["memory_fraction"].default:
            return (f"memory_fraction: {self.name} takes no memory share: {self.memory_sized_by}; fix: remove "
                    f"memory_fraction and size it with max_model_len and max_num_seqs")
        return None

    def memory_budget_fraction(self, d: DeploymentSpec) -> float:
        """The share of each GPU's usable memory the fit measures the engine's need against: its
        memory_fraction where it takes one; all of it where it allocates only what it needs."""
        return d.memory_fraction if self.memory_fraction_flag else 1.0

    def kv_tokens_allocated(self, d: DeploymentSpec) -> int | None:
        """The KV cache's size in tokens where the engine sizes it by its context (the prediction);
        None where it fills what its memory share leaves after the weights."""
        return None

    def kv_tokens_reported(self, line: str) -> int | None:
        """The KV cache's size in tokens that its log line (kv_report_marker's) says, or None."""
        found = re.search(self.kv_report_pattern, line) if self.kv_report_pattern else None
        return int(found["tokens"].replace(",", "")) if found else None

    def kv_bytes_allocated(self, d: DeploymentSpec) -> int | None:
        """The KV cache's size in bytes per rank where the deployment sets it outright; None where
        the engine sizes it itself."""
        return None

    def fit_inputs(self, d: DeploymentSpec, model: ModelSpec) -> tuple[tuple[dict, int], str] | None:
        """What the memory-fit check computes with (components/sizing/stack_fit.py), when this
        engine's models are files of their own: ((a config in config.json's terms, the weights'
        bytes), where they came from); ModelFileError when they cannot be read. None: the fit reads
        the model's Hugging Face config.json (every engine of safetensors checkpoints)."""
        return None

    def model_files(self, d: DeploymentSpec) -> list[str] | None:
        """The files of the model repository the deployment serves from, as huggingface_hub's
        allow_patterns (fnmatch); None: the whole snapshot (a checkpoint directory)."""
        return None
