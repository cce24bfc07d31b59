"""VenvEngine: the engine of an image entry of runtime `venv`, installed into a Python venv on each
of the entry's nodes from its pinned recipe (components/config/venv.py) — no Docker. Seed 003 ran
SGLang main this way: built from source with `uv pip install --no-deps -e` over the machine's own
CUDA 13 torch, patches applied, under a systemd unit.

On each node one step (templates/scripts/build-venv.sh.j2):
- builds the venv once into ROOT/IMAGE/<digest>, the content address of the recipe (a venv cannot
  be moved after it is built, so the digest directory is its staging place: it is not in use until
  `current` names it, and a build left half-done has no built mark (names.VENV_BUILT_MARK) and starts over);
- verifies it: the engine imports and prints its version, the packages the node provides are the
  versions it had, and the engine's own parser takes the command line of every deployment of
  this entry (components/engines; templates/scripts/engine_flags.py);
- only then switches: a `current` symlink renamed over the old one (`previous` keeps the one
  before, for a rollback by hand); a running unit keeps its venv until its own step restarts it;
- prints `venv-id=<digest>`, the trigger of the units that run it.
Destroy removes ROOT/IMAGE, every venv this entry built there. Drift: `current` no longer names a
built venv of this recipe (components/facts VenvCurrent)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence
from urllib.parse import unquote

import pulumi

from components.config import ConfigError
from components.config.load import PROJECT
from components.config.schema import DeploymentSpec, ImageSpec
from components.config.venv import GIT_COMMIT, ConfigPin, VenvSpec, WheelFile
from components.engines import ENGINES
from components.launches import launch_of
from components.facts import VenvCurrent
from components.resources.component import Component, Ready
from components.resources.node import Node
from components.steps import types
from components.steps.info import StepInfo
from components.steps.remote import run, tagged_line
from components.steps.render import digest, python_program, render

# What a commit that is not set yet reads as in a preview's scripts (the build refuses it).
UNSET_COMMIT = "not_set"


def venv_dir(img: ImageSpec) -> str:
    """ROOT/IMAGE: every venv of the entry on a node, and its `current` link."""
    return f"{img.venv.root}/{img.name}"


def venv_bin(img: ImageSpec) -> str:
    """The bin directory of the venv in use: units run the engine from here."""
    return f"{venv_dir(img)}/current/bin"


def resolve_commit(venv: VenvSpec, key_path: str, project_config=None) -> str:
    """The source's commit: written in the stack, or read from its plain config key. Unset, a
    preview warns and plans the build with UNSET_COMMIT (the script refuses it); `up` stops here."""
    commit = venv.source.commit
    if not isinstance(commit, ConfigPin):
        return commit
    value = (project_config or pulumi.Config(PROJECT)).get(commit.config)
    if value is not None and GIT_COMMIT.fullmatch(value):
        return value
    why = (f"{PROJECT}:{key_path}: config key {commit.config} is not set; fix: pulumi config set "
           f"{PROJECT}:{commit.config} <40-hex commit> (e.g. from `git ls-remote {venv.source.git} main`)"
           if value is None else
           f"{PROJECT}:{key_path}: {commit.config} is not a 40-hex commit; fix: pulumi config set "
           f"{PROJECT}:{commit.config} <40-hex commit>")
    if not pulumi.runtime.is_dry_run():
        raise ConfigError(why)
    pulumi.log.warn(f"{why} (preview continues; `up` will stop here)")
    return UNSET_COMMIT


def read_patches(venv: VenvSpec, key_path: str, project_dir: Path | None = None) -> list[tuple[str, str]]:
    """(file name, base64 content) of each patch, read from the project (where the engine runs the
    program); a missing one stops the plan with the fix."""
    base = project_dir or Path.cwd()
    out = []
    for i, rel in enumerate(venv.patches):
        path = base / rel
        if not path.is_file():
            raise ConfigError(f"{PROJECT}:{key_path}.patches[{i}]: {rel} is not a file of the project ({base}); "
                              f"fix: add the patch there, or remove it from the list")
        out.append((f"{i:03d}-{Path(rel).name}", base64.b64encode(path.read_bytes()).decode()))
    return out


def recipe(img: ImageSpec, commit: str | None, patches: Sequence[tuple[str, str]]) -> str:
    """The canonical text of what the venv is made of; its digest names the venv's directory.
    (What is only checked — the flags — is not part of it: a new flag re-verifies, never rebuilds.)"""
    v = img.venv
    doc = {"python": v.python, "installer": v.installer, "requirements": list(v.requirements),
           "no_deps_over": list(v.no_deps_over),
           "source": None if v.source is None else {"git": v.source.git, "commit": commit,
                                                    "subdirectory": v.source.subdirectory,
                                                    "extras": list(v.source.extras)},
           "wheels": [w.model_dump() if isinstance(w, WheelFile) else w for w in v.wheels],
           "patches": {name: hashlib.sha256(base64.b64decode(b64)).hexdigest() for name, b64 in patches}}
    # Named only when set, so that the recipes (and venv directories) written before these keys stay.
    for key in ("find_links", "no_index", "no_deps"):
        if getattr(v, key):
            doc[key] = getattr(v, key)
    return json.dumps(doc, sort_keys=True)


def build_script(img: ImageSpec, commit: str | None, patches: Sequence[tuple[str, str]],
                 checks: dict[str, list[str]]) -> str:
    """The build step's script (templates/scripts/build-venv.sh.j2); the verify program follows
    it on stdin (verify_program)."""
    v = img.venv
    text = recipe(img, commit, patches)
    return render("scripts/build-venv.sh.j2", name=img.name, root=venv_dir(img), digest=digest(text), recipe=text,
                  venv=v, commit=commit or "", unset_commit=UNSET_COMMIT,
                  commit_key=v.source.commit.config if v.source is not None
                  and isinstance(v.source.commit, ConfigPin) else None,
                  patches=list(patches), wheels=wheel_items(v), checks=checks)


def wheel_items(v: VenvSpec) -> list[dict]:
    """The wheels as the build script takes them: {pin} from the index, or {url, sha256, file}
    (the file name as pip needs it: the URL's last part, %-decoded)."""
    items = []
    for w in v.wheels:
        if isinstance(w, WheelFile):
            file = unquote(w.url.rsplit("/", 1)[-1])
            if not re.fullmatch(r"[A-Za-z0-9._+-]+\.whl", file):
                raise ConfigError(f"{PROJECT}: wheel URL {w.url[:80]} does not end in a wheel file name; "
                                  f"fix: give the .whl file's own URL")
            items.append({"pin": None, "url": w.url, "sha256": w.sha256, "file": file})
        else:
            items.append({"pin": w, "url": None})
    return items


def engine_command_lines(deployments: Sequence[DeploymentSpec]) -> dict[str, list[list[str]]]:
    """{engine module: the command line of every rank of every deployment of an entry}, with a
    stand-in model path and head address (the parser takes any)."""
    out: dict[str, list[list[str]]] = {}
    for d in deployments:
        out.setdefault(d.engine, []).extend(list(r.argv) for r in launch_of(d).ranks(d, "/model", "127.0.0.1"))
    return out


def verify_program(engines: Sequence[str]) -> str:
    """The verify (templates/scripts/verify_venv.py) with the checker and each engine's own module."""
    return python_program("verify_venv", "engine_flags", *(ENGINES[e].probe_module for e in engines))


def venv_argv(img: ImageSpec, argv: list[str]) -> list[str]:
    """An engine command line (components/engines) run from the venv in use: its program, a bare
    name, taken from the venv's bin (`python3 -m ...` with the venv's python; a console script
    such as `vllm`, whose first line names the venv's python)."""
    head = argv[0]
    if not head or "/" in head:
        raise ValueError(f"no venv program for the engine command {head!r}: an engine names its program bare")
    return [f"{venv_bin(img)}/{head}", *argv[1:]]


def venv_unit_text(*, component: str, description: str, img: ImageSpec, command: list[str],
                   environment: dict[str, str], env_file: str | None = None, after: Sequence[str] = (),
                   binds_to: Sequence[str] = (), restart: str = "on-failure",
                   pre_start: Sequence[list[str]] = ()) -> str:
    """A unit that runs the engine from the venv in use, in the foreground (no container): the
    secrets come from the root-only EnvironmentFile (its path alone is in the unit)."""
    return render("units/venv.service.j2", component=component, description=description,
                  command=venv_argv(img, command), environment=environment, env_file=env_file,
                  after=list(after), binds_to=list(binds_to), restart=restart, pre_start=list(pre_start),
                  venv_dir=venv_dir(img))


@dataclass(frozen=True)
class VenvEngineArgs:
    """img: the image entry (runtime venv); deployments: those that run it (their command lines
    are checked by the verify); key_path: the entry's key in the stack file, for messages."""
    img: ImageSpec
    nodes: Sequence[Node]
    deployments: Sequence[DeploymentSpec]
    key_path: str
    depends_on: Sequence[pulumi.Resource] = ()


class VenvEngine(Component):
    """The venv of one image entry on each of its nodes; `ready` holds each node's build step,
    and `image_id` is the venv's digest once built (what units run)."""
    TYPE = types.VENV_ENGINE

    def __init__(self, name: str, args: VenvEngineArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        img, key_path = args.img, args.key_path
        self.spec = img
        v = img.venv
        commit = resolve_commit(v, f"{key_path}.venv.source.commit") if v.source is not None else None
        patches = read_patches(v, f"{key_path}.venv")
        self.recipe = recipe(img, commit, patches)
        self.digest = digest(self.recipe)
        self.root = venv_dir(img)
        self.bin = venv_bin(img)
        self.python = f"{self.bin}/python3"
        self.tag = f"{self.root}/current"   # what it is, where a container image would have a tag
        checks = engine_command_lines(args.deployments)
        if v.source is not None:
            what = (f"from source ({v.source.git.rsplit('/', 1)[-1].removesuffix('.git')} at "
                    f"{commit[:12] if commit != UNSET_COMMIT else 'the commit to set'})")
        else:
            what = "from pinned wheels (" + ", ".join(w if isinstance(w, str) else w.url.rsplit("/", 1)[-1]
                                                      for w in v.wheels) + ")"
        kept = f", --no-deps over the node's {', '.join(v.no_deps_over)}" if v.no_deps_over else ""
        built: dict[str, pulumi.Resource] = {}
        ids = {}
        for node in args.nodes:
            step = StepInfo(node.name, "image", do=f"Build venv {img.name} on {node.name} {what}{kept}",
                            redo=f"Rebuild or re-verify venv {img.name} on {node.name} {what}{kept}",
                            undo=f"Remove the venvs of {img.name} from {node.name}")
            built[node.name] = run(
                f"{name}-venv-{node.name}", node, parent=self, depends_on=args.depends_on, step=step,
                timeout_s=v.build_timeout_s,
                create=build_script(img, commit, patches, checks), stdin=verify_program(list(checks)),
                delete=render("scripts/remove-venv.sh.j2", name=img.name, root=self.root),
                expect=VenvCurrent(node.name, self.root, self.digest),
                # A failed `up` points `current` back at the previous build (kept on the node).
                undo="switch")
            ids[node.name] = tagged_line(built[node.name].stdout, "venv-id")
        self.ready = Ready.of(built.items())
        # The units' trigger: the digest, once a node has built and verified it.
        self.image_id = pulumi.Output.all(*ids.values()).apply(lambda values: ",".join(sorted(set(values))))
        self.register_outputs({"digest": self.digest, "root": self.root})
