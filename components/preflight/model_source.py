"""Where the fit check reads a model's config.json and weight size from: the directory the
operator uploads (local source), the hub at the pinned revision, or — offline, or when the
hub cannot be reached — the catalog of known models shipped in catalog/."""

from __future__ import annotations

import json
from pathlib import Path

from ..config.schema import ModelSpec
from .model_facts import safetensors_dir_bytes, weight_bytes_from_index

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


def from_hub(spec: ModelSpec) -> tuple[dict, int]:
    """config.json and the safetensors index at the pinned revision (a few KB, not the weights)."""
    from huggingface_hub import hf_hub_download

    config = json.loads(Path(hf_hub_download(spec.repo, "config.json", revision=spec.revision)).read_text())
    index = json.loads(Path(hf_hub_download(spec.repo, "model.safetensors.index.json",
                                            revision=spec.revision)).read_text())
    return config, weight_bytes_from_index(index)


def config_and_weight_bytes(spec: ModelSpec, offline: bool) -> tuple[tuple[dict, int], str]:
    """((config, weight bytes), where they came from)."""
    if spec.source.kind == "local":
        directory = Path(spec.source.path).expanduser()
        if not (directory / "config.json").is_file():
            raise ModelFactsUnavailable(f"{directory}/config.json not found")
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
        else:  # pragma: no cover
            hub_error = ""
    else:
        hub_error = "offline" if offline else f"source kind {spec.source.kind}"
    entry = catalog_entry(spec.repo)
    if entry is None:
        raise ModelFactsUnavailable(f"no config.json for {spec.repo} ({hub_error}) and no catalog entry")
    return entry, f"catalog ({hub_error})"
