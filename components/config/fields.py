"""The stack config's building blocks: the safe alphabets of names and paths, the strict base
model, secret references and the health gate's keys. Plain types with no cross-key rule, shared by
schema.py and gateway.py (which schema.py builds on), so that neither imports the other back."""

from __future__ import annotations

from typing import Annotated, Callable, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

Model = TypeVar("Model", bound=type)


def documented(text: str) -> Callable[[Model], Model]:
    """A model's docstring (its section in the stack reference) from a string built at import:
    the names of components/names.py cannot be written into a plain docstring."""
    def set_doc(model: Model) -> Model:
        model.__doc__ = text
        return model
    return set_doc


# A name that becomes part of a unit, container, image or path name.
Name = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]{0,38}$")]
# A systemd unit that is not ours: plain unit names, templated instances allowed.
UnitName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9@._:-]{0,120}\.(service|socket|timer|target)$")]
# A Linux network interface name.
NetDev = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,14}$")]


def plain_path(value: str) -> str:
    """A path without `..` components (no way out of the directory it names) and without a
    component longer than a file name may be."""
    parts = value.split("/")
    if ".." in parts:
        raise ValueError("'..' is not allowed in a path; fix: write the path without '..' (resolve it by hand)")
    if any(len(p) > 255 for p in parts):
        raise ValueError("a path component is longer than 255 characters; fix: use a shorter path")
    return value


# An absolute path on a node, without characters that need quoting anywhere (units included).
NodePath = Annotated[str, Field(pattern=r"^/[A-Za-z0-9._/-]*$", max_length=1024), AfterValidator(plain_path)]
# A path on the operator's machine (relative to the project, or starting with ~).
LocalPath = Annotated[str, Field(min_length=1, max_length=1024), AfterValidator(plain_path)]
HostName = Annotated[str, Field(pattern=r"^[A-Za-z0-9]([A-Za-z0-9.-]{0,252})$")]
# A Pulumi config key of this project's namespace (blackwell-serving:KEY) that holds a secret.
ConfigKey = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")]
# An image reference: [registry[:port]/]repo[:tag][@digest]
ImageRef = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._:/@-]{0,254}$")]
EnvName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")]
# One argument or environment value: any text but control characters (a newline cannot reach a
# unit's command line or environment).
OneLine = Annotated[str, Field(pattern=r"^[^\x00-\x1f\x7f]*$")]


class Strict(BaseModel):
    # Unknown keys are errors, numbers are finite (an .inf memory would overflow the fit check),
    # and no string is longer than a unit's line should be.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, str_max_length=4096)


class SecretRef(Strict):
    """Where a secret comes from. Its value becomes a Pulumi secret and reaches nodes only in
    root-only EnvironmentFiles, never in argv, logs or plain state."""

    config: ConfigKey | None = Field(
        None, description="a secret config key of this stack, set with "
                          "`pulumi config set --secret blackwell-serving:KEY VALUE` (its value must be `secure:`)")
    env: EnvName | None = Field(None, description="an environment variable of the operator's shell")
    file: LocalPath | None = Field(None, description="a file on the operator's machine (first line is used)")

    @model_validator(mode="after")
    def _exactly_one(self):
        given = [k for k in ("config", "env", "file") if getattr(self, k)]
        if len(given) != 1:
            raise ValueError("a secret needs exactly one source; fix: give exactly one of config / env / file")
        return self


class HealthSpec(Strict):
    timeout_s: int = Field(1800, ge=10, le=14400, description="how long the gate waits for the engine to load")
    restarts: int = Field(3, ge=0, le=100, description="restarts of the engine's unit the gate waits out; one more is a "
                          "crash loop, and the gate fails at once naming it (the units restart forever)")
    prompt: Annotated[str, Field(max_length=500)] = Field("Say hello.", description="the gate's chat prompt")
    max_tokens: int = Field(8, ge=1, le=256, description="tokens the gate's completion may generate")


class MemoryReleaseSpec(Strict):
    """A swap (a running engine's unit restarted with a change) stops the old engine first and
    starts the new one only once the old one's memory is back: MemAvailable must rise to what it
    was plus what the old engine held (its cgroup's anonymous and shared memory), less bound_gb,
    within timeout_s; else the swap stops with the figures and is rolled back.

    On by default where an engine is alone with the host's memory (gpu.kind gb10: one GPU, one
    engine); off where several engines share a node's memory and may load while another swaps
    (gpu.kind cpu: their loads would read as memory not given back), or where the GPU's memory is
    its own (rtx-pro-6000: MemAvailable does not show it). `enabled` says so outright."""
    enabled: bool | None = Field(None, description="check a swap's memory; unset: on for gpu.kind gb10 only")
    bound_gb: float = Field(1.0, ge=0, le=1024, description="how far short of its due MemAvailable may stay")
    timeout_s: int = Field(120, ge=0, le=3600, description="how long the swap waits for the memory")
