"""Where the fit check reads a model's config.json and weight size from: the directory the
operator uploads (local source), the hub at the pinned revision, or — offline, or when the
hub cannot be reached — the catalog of known models shipped in catalog/."""

from __future__ import annotations

import json
from pathlib import Path

from components.config.schema import ModelSpec
from components.sizing.model_facts import safetensors_dir_bytes, weight_bytes_from_index

CATALOG = Path(__file__).resolve().parent / "catalog"


class ModelFactsUnavailable(Exception):
    """No config.json to compute with; the fit is then reported as unchecked, not failed."""


class ModelConfigError(Exception):
    """The operator's own model directory has a config.json no engine could load: the plan stops."""


def read_local_config(path: Path) -> dict:
    """A local model's config.json as a JSON object, or ModelConfigError saying what is wrong."""
    fix = "fix: write the model's config.json again (copy it from the model's repository)"
    try:
        doc = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError) as err:  # unreadable, not UTF-8, not JSON
        raise ModelConfigError(f"{path}: not a readable JSON file ({err}); {fix}") from None
    if not isinstance(doc, dict):
        raise ModelConfigError(f"{path}: holds a JSON {type(doc).__name__}, not an object; {fix}")
    return doc


def catalog_entry(repo: str) -> tuple[dict, int] | None:
    path = CATALOG / f"{repo.replace('/', '--')}.json"
    if not path.is_file():
        return None
    doc = json.loads(path.read_text())
    return doc["config"], int(doc["weight_bytes"])


def hub_token(spec: ModelSpec) -> str | None:
    """The model's hf_token for the few-KB reads below, when it can be read here; without it a
    gated repo falls back to the catalog like an unreachable hub."""
    if spec.hf_token is None:
        return None
    from components.steps.secrets import plain_value
    try:
        return plain_value(spec.hf_token, f"models.{spec.name}.hf_token") or None
    except Exception:  # a secret not set on this machine: the read goes without it
        return None


def from_hub(spec: ModelSpec) -> tuple[dict, int]:
    """config.json and the weights' size at the pinned revision (a few KB, not the weights), from
    the model's `source.endpoint` (a mirror) when it has one, with its token: the size from the
    safetensors index, or for a single-file model from the file's metadata."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url
    from huggingface_hub.errors import EntryNotFoundError

    where = dict(revision=spec.revision, endpoint=spec.source.endpoint, token=hub_token(spec))

    def read(filename: str) -> dict:
        return json.loads(Path(hf_hub_download(spec.repo, filename, **where)).read_text())

    config = read("config.json")
    try:
        return config, weight_bytes_from_index(read("model.safetensors.index.json"))
    except EntryNotFoundError:
        url = hf_hub_url(spec.repo, "model.safetensors", revision=spec.revision, endpoint=spec.source.endpoint)
        size = get_hf_file_metadata(url, token=where["token"]).size
        if not size:
            raise
        return config, size


def config_and_weight_bytes(spec: ModelSpec, offline: bool) -> tuple[tuple[dict, int], str]:
    """((config, weight bytes), where they came from)."""
    if spec.source.kind == "local":
        directory = Path(spec.source.path).expanduser()
        fix = (f"fix: models.{spec.name}.source.path names the model's directory on this machine (its "
               f"config.json and weights), relative to the project")
        if not directory.is_dir():
            raise ModelConfigError(f"{directory}: no such directory on this machine; {fix}")
        if not (directory / "config.json").is_file():
            raise ModelConfigError(f"{directory}: holds no config.json, so it is not a model directory; {fix}")
        config = read_local_config(directory / "config.json")
        try:
            weights = safetensors_dir_bytes(directory)
        except OSError as err:
            raise ModelConfigError(f"{directory}: {err}; fix: the directory must hold the model's *.safetensors "
                                   f"weights (models[].source.path)") from None
        return (config, weights), str(directory)
    if spec.source.kind == "hub" and not offline:
        try:
            return from_hub(spec), f"hub {spec.repo}@{spec.revision[:12]}"
        except Exception as exc:  # the hub is optional: fall back to the catalog below
            hub_error = f"hub: {exc.__class__.__name__}"
    else:
        hub_error = "offline" if offline else f"source kind {spec.source.kind}"
    entry = catalog_entry(spec.repo)
    if entry is None:
        raise ModelFactsUnavailable(f"no config.json for {spec.repo} ({hub_error}) and no catalog entry")
    return entry, f"catalog ({hub_error})"
