"""The interface every serving engine implements: plain data where a fact is fixed (its API key
variable, its paths, the launches it supports, the options only it takes), methods where the answer
depends on the deployment (its command line, which ranks serve the API, its restart policy).

A new engine is: one module here defining a subclass; its in-image module
templates/scripts/engine_NAME.py (how the probe and the venv verify read its model registry, or
check a model of another format, and its own flag parser); its tests. Outside those it touches
components/engines/__init__.py (its ENGINES entry) and docs/stack-reference.md (regenerated:
`engine:` takes one more value). Nothing else reads an engine's name."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, ClassVar, Literal

if TYPE_CHECKING:  # the schema imports the registry: the engines take its models as plain values
    from components.config.schema import DeploymentSpec, ModelSpec

# single: one node; ray: over a Ray cluster; native: the engine's own multi-node launch.
Launch = Literal["single", "ray", "native"]


class ModelFileError(Exception):
    """An engine's own model file cannot be read (Engine.fit_inputs): the plan stops with this
    message, which names the file and the fix."""


class Engine(ABC):
    """What it needs from its runtime (components/runtimes), whichever runs it: its program,
    argv[0] of argv(), a bare name found on the image's PATH or in the venv's bin; a python there
    that imports its package (the probe and the verify run probe_module in it); its API key in the
    environment (api_key_var, from the root-only env file the runtime hands over)."""

    name: ClassVar[str]                   # what `engine:` says in a stack file
    launches: ClassVar[frozenset[str]]    # the topologies it supports (the schema checks against them)
    api_key_var: ClassVar[str]            # the environment variable it reads its API key from
    health_path: ClassVar[str] = "/health"    # answers once the server is up (the drift observation)
    metrics_path: ClassVar[str] = "/metrics"  # Prometheus text on the API port
    probe_module: ClassVar[str]           # templates/scripts/<it>.py: its registry and parser, in the image
    options: ClassVar[frozenset[str]] = frozenset()  # deployment keys only this engine takes
    dist_port_what: ClassVar[str] = "rendezvous port"  # the native launch's port on the head, in messages
    # Whether its images carry python3 with huggingface_hub, so that a hub model's download can run
    # in one (components/runtimes/docker.py); when not, the fetch checks the image before it starts.
    images_download: ClassVar[bool] = True

    @abstractmethod
    def argv(self, d: DeploymentSpec, model_path: str, rank: int = 0, head_address: str | None = None) -> list[str]:
        """The command line of rank `rank` (argv[0] a program name: the runtime says where it lives)."""

    def env(self, d: DeploymentSpec) -> dict[str, str]:
        """Environment the engine itself needs, before the deployment's own env."""
        return {}

    def api_ranks(self, d: DeploymentSpec) -> list[int]:
        """The ranks that listen on the API port (their nodes claim it)."""
        return [0]

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

    def rank_count(self, d: DeploymentSpec) -> int:
        return len(d.nodes) if d.topology == "native" else 1

    def fit_inputs(self, d: DeploymentSpec, model: ModelSpec) -> tuple[tuple[dict, int], str] | None:
        """What the memory-fit check computes with (components/preflight/stack_fit.py), when this
        engine's models are files of their own: ((a config in config.json's terms, the weights'
        bytes), where they came from); ModelFileError when they cannot be read. None: the fit reads
        the model's Hugging Face config.json (every engine of safetensors checkpoints)."""
        return None

    def model_files(self, d: DeploymentSpec) -> list[str] | None:
        """The files of the model repository the deployment serves from, as huggingface_hub's
        allow_patterns (fnmatch); None: the whole snapshot (a checkpoint directory)."""
        return None

    def rank_argvs(self, d: DeploymentSpec, model_path: str, head_address: str | None) -> list[list[str]]:
        """Every command line the deployment's ranks run: what the engine's own parser checks
        before anything is stopped."""
        return [self.argv(d, model_path, rank, head_address) for rank in range(self.rank_count(d))]
