"""Config validation: a bad stack file gives one ConfigError naming the file, the key path and a
fix (never a traceback); shell metacharacters in any string field are either rejected, or —
where the field is free text — reach every script and unit only quoted."""

from __future__ import annotations

import copy
import json
import re
import shlex
import subprocess
import typing
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

from components.config import ConfigError, StackSpec, load_stack_file, parse
from components.config.load import PROJECT, values_from_stack_file
from tests.unit import systemd_syntax
from tests.unit.mocked import REPO, snapshot

DUO = REPO / "stacks" / "Pulumi.spark-duo.yaml"
QUAD = REPO / "stacks" / "Pulumi.rtxpro-quad.yaml"


def write_stack(tmp_path: Path, values: dict, name: str = "bad") -> Path:
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump({"config": {f"{PROJECT}:{k}": v for k, v in values.items()}}))
    return path


def duo() -> dict:
    return copy.deepcopy(values_from_stack_file(DUO))


def quad() -> dict:
    return copy.deepcopy(values_from_stack_file(QUAD))


def expect_error(tmp_path: Path, values: dict, key_path: str, *words: str) -> str:
    path = write_stack(tmp_path, values)
    with pytest.raises(ConfigError) as caught:
        load_stack_file(path)
    err = caught.value
    text = str(err)
    assert err.__cause__ is None and err.__suppress_context__, "a pydantic traceback would be chained"
    assert "Traceback" not in text and "pydantic" not in text.lower().replace("components/config", "")
    assert text.startswith(f"{path}: "), text
    lines = [line for line in text.splitlines()[1:] if f"{PROJECT}:{key_path}:" in line]
    assert lines, f"no line names {PROJECT}:{key_path}:\n{text}"
    assert any("fix:" in line for line in lines), f"no fix given:\n{text}"
    for w in words:
        assert any(w in line for line in lines), f"{w!r} not said about {key_path}:\n{text}"
    return text


def _set(d, path, value):
    for p in path[:-1]:
        d = d[p]
    d[path[-1]] = value


def _del(d, path):
    for p in path[:-1]:
        d = d[p]
    del d[path[-1]]


# ---------------------------------------------------------------------------------------------
# Bad inputs, one at a time

BAD = [
    # (id, mutate, key path, words in the message)
    ("unknown-top-key", lambda d: d.update(deploymnets=[]), "deploymnets", "unknown key"),
    ("unknown-nested-key", lambda d: d["deployments"][0].update(tensor_paralel=2),
     "deployments[0].tensor_paralel", "unknown key"),
    ("unknown-ssh-key", lambda d: d["nodes"][1]["ssh"].update(hostkey="x"), "nodes[1].ssh.hostkey", "unknown key"),
    ("missing-served-name", lambda d: d["deployments"][0].pop("served_name"),
     "deployments[0].served_name", "missing"),
    ("missing-nodes", lambda d: d.pop("nodes"), "nodes", "missing"),
    ("missing-host-key", lambda d: d["nodes"][0]["ssh"].pop("host_key"), "nodes[0].ssh.host_key", "missing"),
    ("type-tp-string", lambda d: _set(d, ["deployments", 0, "tensor_parallel"], "two"),
     "deployments[0].tensor_parallel", "integer"),
    ("type-nodes-not-list", lambda d: _set(d, ["deployments", 0, "nodes"], "spark-1a32"),
     "deployments[0].nodes", "list"),
    ("type-port-range", lambda d: _set(d, ["deployments", 0, "port"], 70000), "deployments[0].port", "65535"),
    ("type-engine", lambda d: _set(d, ["deployments", 0, "engine"], "tgi"), "deployments[0].engine", "vllm"),
    ("type-gpu-count", lambda d: _set(d, ["nodes", 0, "gpu", "count"], [1]), "nodes[0].gpu.count", "integer"),
    ("unknown-node-deployment", lambda d: _set(d, ["deployments", 0, "nodes", 1], "spark-9999"),
     "deployments[0].nodes[1]", "spark-9999"),
    ("unknown-node-keep", lambda d: _set(d, ["keep", 0, "node"], "spark-0000"), "keep[0].node", "spark-0000"),
    ("unknown-node-retire", lambda d: _set(d, ["retire", 1, "node"], "spark-0000"), "retire[1].node", "spark-0000"),
    ("unknown-build-node", lambda d: _set(d, ["images", 0, "build_node"], "nope"), "images[0].build_node", "nope"),
    ("unknown-fetch-node", lambda d: _set(d, ["models", 0, "fetch_node"], "nope"), "models[0].fetch_node", "nope"),
    ("unknown-image", lambda d: _set(d, ["deployments", 0, "image"], "nope"), "deployments[0].image", "nope"),
    ("tp-times-pp-not-gpus", lambda d: _set(d, ["deployments", 0, "tensor_parallel"], 4),
     "deployments[0].tensor_parallel", "2 GPUs"),
    ("pp-times-tp-not-gpus", lambda d: _set(d, ["deployments", 0, "pipeline_parallel"], 2),
     "deployments[0].tensor_parallel", "2 GPUs"),
    ("single-with-two-nodes", lambda d: _set(d, ["deployments", 0, "topology"], "single"),
     "deployments[0].topology", "single"),
    ("ray-for-sglang", lambda d: _set(d, ["deployments", 0, "engine"], "sglang"), "deployments[0].topology", "ray"),
    ("unpinned-revision-main", lambda d: _set(d, ["models", 0, "revision"], "main"), "models[0].revision", "40-hex"),
    ("unpinned-revision-short", lambda d: _set(d, ["models", 0, "revision"], "abc1234"), "models[0].revision", "40-hex"),
    ("retired-and-kept", lambda d: d["keep"].append({"node": "spark-1a32", "unit": "vllm-proxy.service"}),
     "keep[1]", "also retired"),
    ("host-key-missing-type", lambda d: _set(d, ["nodes", 0, "ssh", "host_key"], "AAAAC3NzaC1lZDI1NTE5AAAAIGQc"),
     "nodes[0].ssh.host_key", "ssh-keyscan"),
    ("host-key-not-base64", lambda d: _set(d, ["nodes", 0, "ssh", "host_key"], "ssh-ed25519 not base64!"),
     "nodes[0].ssh.host_key", "ssh-keyscan"),
    ("host-key-truncated", lambda d: _set(d, ["nodes", 1, "ssh", "host_key"], "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5"),
     "nodes[1].ssh.host_key", "ssh-keyscan"),
    ("host-key-wrong-type", lambda d: _set(d, ["nodes", 1, "ssh", "host_key"],
                                           d["nodes"][1]["ssh"]["host_key"].replace("ssh-ed25519", "ssh-rsa")),
     "nodes[1].ssh.host_key", "ssh-keyscan"),
    ("host-key-empty", lambda d: _set(d, ["nodes", 0, "ssh", "host_key"], ""), "nodes[0].ssh.host_key", "ssh-keyscan"),
    ("secret-two-sources", lambda d: _set(d, ["deployments", 0, "api_key"], {"env": "A", "file": "/x"}),
     "deployments[0].api_key", "exactly one"),
    ("multi-node-without-fabric-address", lambda d: d["nodes"][1].pop("fabric_address"),
     "deployments[0].nodes[1]", "fabric_address"),
    ("node-named-twice", lambda d: d["nodes"].append(copy.deepcopy(d["nodes"][0])), "nodes[2].name", "twice"),
    ("node-path-with-newline", lambda d: _set(d, ["models", 0, "source"], {"kind": "node", "path": "/srv/m\n"}),
     "models[0].source.path", "absolute path"),
    ("env-value-with-newline", lambda d: _set(d, ["deployments", 0, "env", "A"], "x\ny"), "deployments[0].env.A",
     "not allowed"),
    ("extra-arg-with-newline", lambda d: _set(d, ["deployments", 0, "extra_args"], ["--a\n--b"]),
     "deployments[0].extra_args[0]", "not allowed"),
    ("sglang-option-on-vllm", lambda d: _set(d, ["deployments", 0, "fp4_gemm_backend"], "flashinfer_cudnn"),
     "deployments[0].fp4_gemm_backend", "sglang"),
    ("bandwidth-size-zero", lambda d: _set(d, ["fabric", "bandwidth_check"], {"size_mb": 0}),
     "fabric.bandwidth_check.size_mb", "greater than or equal to 1"),
    ("bandwidth-too-many-iterations", lambda d: _set(d, ["fabric", "bandwidth_check"], {"iterations": 101}),
     "fabric.bandwidth_check.iterations", "100"),
    ("bandwidth-privileged-port", lambda d: _set(d, ["fabric", "bandwidth_check"], {"port": 80}),
     "fabric.bandwidth_check.port", "1024"),
    ("bandwidth-min-not-positive", lambda d: _set(d, ["fabric", "bandwidth_check"], {"min_bus_gbps": 0}),
     "fabric.bandwidth_check.min_bus_gbps", "greater than 0"),
    ("bandwidth-unknown-key", lambda d: _set(d, ["fabric", "bandwidth_check"], {"size_gb": 1}),
     "fabric.bandwidth_check.size_gb", "unknown key"),
    ("vllm-option-on-sglang", lambda d: (_set(d, ["deployments", 0, "engine"], "sglang"),
                                         _set(d, ["deployments", 0, "topology"], "native"),
                                         _set(d, ["deployments", 0, "kv_cache_dtype"], "fp8_e4m3"),
                                         _set(d, ["deployments", 0, "speculative"], {"method": "mtp"})),
     "deployments[0].speculative", "vllm"),
    # vLLM's spelling of an fp8 KV cache is not SGLang's: refused with SGLang's own list.
    ("vllm-kv-dtype-on-sglang", lambda d: (_set(d, ["deployments", 0, "engine"], "sglang"),
                                           _set(d, ["deployments", 0, "topology"], "native"),
                                           _set(d, ["deployments", 0, "kv_cache_dtype"], "fp8")),
     "deployments[0].kv_cache_dtype", "'fp8' is not a KV cache dtype of sglang", "fp8_e4m3, fp8_e5m2"),
    ("kv-dtype-of-no-engine", lambda d: _set(d, ["deployments", 0, "kv_cache_dtype"], "int3"),
     "deployments[0].kv_cache_dtype", "vllm, which takes auto, float16, bfloat16, fp8"),
]


@pytest.mark.parametrize("mutate,key_path,words", [b[1:3] + (b[3:],) for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_gives_one_clear_config_error(tmp_path, mutate, key_path, words):
    values = duo()
    mutate(values)
    expect_error(tmp_path, values, key_path, *words)


def test_unknown_node_in_the_single_node_stack(tmp_path):
    values = quad()
    values["retire"][0]["node"] = "llm-srv"
    expect_error(tmp_path, values, "retire[0].node", "llm-srv", "llm-server")


def test_many_problems_are_reported_together_in_one_error(tmp_path):
    values = duo()
    values["models"][0]["revision"] = "main"
    values["deployments"][0]["port"] = "eighty"
    values["bogus"] = 1
    text = expect_error(tmp_path, values, "bogus")
    assert f"{PROJECT}:models[0].revision:" in text and f"{PROJECT}:deployments[0].port:" in text
    # Cross-field checks (references, TP × PP) need valid fields: they are reported on the next run.
    values = duo()
    values["deployments"][0]["tensor_parallel"] = 3
    values["keep"][0]["node"] = "spark-0000"
    text = expect_error(tmp_path, values, "keep[0].node")
    assert f"{PROJECT}:deployments[0].tensor_parallel:" in text


def test_a_stack_file_that_is_not_yaml(tmp_path):
    path = tmp_path / "Pulumi.broken.yaml"
    path.write_text("config:\n  blackwell-serving:nodes: [\n")
    with pytest.raises(ConfigError, match=re.escape(str(path))):
        load_stack_file(path)


def test_shipped_stacks_are_valid():
    for path in sorted((REPO / "stacks").glob("Pulumi.*.yaml")):
        load_stack_file(path)


# ---------------------------------------------------------------------------------------------
# Shell metacharacters in every string field

PAYLOADS = ["x; rm -rf /", "$(touch /tmp/pwn)", "`id`", "a'b", 'a"b', "a\nb", "%n", "${HOME}$$", "a\\b c"]


def _unwrap(annotation):
    """The plain types an annotation admits (Optional/Union/Annotated removed)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return [t for a in typing.get_args(annotation) for t in _unwrap(a)]
    return [annotation]


def _admits_str(annotation) -> bool:
    for t in _unwrap(annotation):
        if t is str or typing.get_origin(t) is typing.Literal:
            return True
        if isinstance(t, type) and t.__module__ == "ipaddress":
            return True
    return False


def string_slots(model: type[BaseModel], data: dict, path: tuple = ()):
    """Every place a string can go in `data` (a valid spec of `model`, defaults filled in):
    (path, how) with how 'set' (replace the value), 'append' (add to a list) or
    'key'/'value' (a mapping's key or value)."""
    for name, field in model.model_fields.items():
        value = data.get(name)
        here = path + (name,)
        for t in _unwrap(field.annotation):
            origin = typing.get_origin(t)
            if isinstance(t, type) and issubclass(t, BaseModel):
                if isinstance(value, dict):
                    yield from string_slots(t, value, here)
            elif origin is list:
                [item] = typing.get_args(t)
                inner = _unwrap(item)
                if any(isinstance(i, type) and issubclass(i, BaseModel) for i in inner):
                    for i, v in enumerate(value or []):
                        yield from string_slots(next(x for x in inner if isinstance(x, type)), v, here + (i,))
                elif _admits_str(item):
                    for i in range(len(value or [])):
                        yield here + (i,), "set"
                    yield here, "append"
            elif origin is dict:
                k, v = typing.get_args(t)
                yield here, "key"
                if _admits_str(v):
                    yield here, "value"
        if _admits_str(field.annotation):
            yield here, "set"


def mutated(data: dict, slot, payload: str) -> dict:
    """`data` with one slot set to `payload` (copied along the path only; `data` is not changed)."""
    path, how = slot
    d = copy.copy(data)
    parent = d
    for p in path[:-1]:
        parent[p] = copy.copy(parent[p])
        parent = parent[p]
    last = path[-1]
    if how == "set":
        parent[last] = payload
    elif how == "append":
        parent[last] = list(parent.get(last) or []) + [payload]
    elif how == "key":
        parent[last] = {**(parent.get(last) or {}), payload: "1"}
    elif how == "value":
        parent[last] = {**(parent.get(last) or {}), "BWS_PROBE": payload}
    return d


def _quoted_heredocs(script: str) -> tuple[str, list[tuple[str, str]]]:
    """The script without the bodies of its quoted here-documents (<<'EOF': no expansion
    inside), and [(delimiter, body)]."""
    out, bodies = [], []
    lines = script.split("\n")
    i = 0
    while i < len(lines):
        out.append(lines[i])
        m = re.search(r"<<'([A-Z_]+)'\s*$", lines[i])
        i += 1
        if m:
            body = []
            while i < len(lines) and lines[i] != m.group(1):
                body.append(lines[i])
                i += 1
            bodies.append((m.group(1), "\n".join(body)))
    return "\n".join(out), bodies


def _single_quoted_mask(text: str) -> list[bool]:
    """For each character of a shell text: is it inside '…' (where nothing is special)?"""
    mask, state, i = [], None, 0
    while i < len(text):
        c = text[i]
        if state is None:
            if c == "\\":
                mask += [False, False]
                i += 2
                continue
            if c == "'":
                state = "'"
            elif c == '"':
                state = '"'
            mask.append(False)
        elif state == "'":
            if c == "'":
                state = None
                mask.append(False)
            else:
                mask.append(True)
        else:
            if c == "\\":
                mask += [False, False]
                i += 2
                continue
            if c == '"':
                state = None
            mask.append(False)
        i += 1
    return mask


def assert_only_quoted(script: str, payload: str, where: str) -> None:
    """Outside quoted here-documents, every occurrence of `payload` sits inside single quotes
    (a payload with a quote or a newline cannot appear verbatim at all: shlex.quote splits it)."""
    outside, _ = _quoted_heredocs(script)
    if payload not in outside:
        return
    mask = _single_quoted_mask(outside)
    for m in re.finditer(re.escape(payload), outside):
        assert all(mask[m.start():m.end()]), f"{where}: {payload!r} is not single-quoted:\n" \
            + outside[max(0, m.start() - 120):m.end() + 40]


_PARSED: dict[str, bool] = {}


def bash_parses(script: str) -> bool:
    """`bash -n` on the script (each distinct text once per session)."""
    if script not in _PARSED:
        done = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True, timeout=30)
        _PARSED[script] = done.returncode == 0 and not done.stderr
    return _PARSED[script]


def check_build(stack: str, spec: StackSpec, payload: str, tmp_path: Path) -> None:
    """Every rendered script parses, and the payload reaches shells and units only quoted."""
    snap = snapshot(stack, spec)
    units = {u._name: u for u in snap.units}
    scripts = []
    for r in snap.commands():
        for key in ("create", "delete"):
            text = r.inputs.get(key)
            if not text:
                continue
            where = f"{stack} {r.name}.{key}"
            scripts.append((where, text))
            assert_only_quoted(text, payload, where)
            _, bodies = _quoted_heredocs(text)
            for delim, body in bodies:
                assert delim not in body.split("\n"), where
                if delim == "BWS_UNIT_EOF":  # the unit arrives exactly as rendered
                    assert body + "\n" == units[r.name.removesuffix("-install")].unit_text, where
                if delim == "BWS_BODY_EOF":
                    json.loads(body)
    for where, text in scripts:
        assert bash_parses(text), f"{where} does not parse:\n{text}"
    # Units: systemd reads back exactly what was configured.
    for u in snap.units:
        env = systemd_syntax.environment(u.unit_text)
        for name, value in {**{k: v for d in spec.deployments for k, v in d.env.items()}}.items():
            if name in env:
                assert env[name] == value, f"{u.unit_name}: {name}={env[name]!r}, configured {value!r}"
        for d in spec.deployments:
            if u.unit_name == f"bws-{d.name}.service":
                [start] = systemd_syntax.values(u.unit_text, "Service", "ExecStart")
                argv = systemd_syntax.exec_argv(start)
                n = len(d.extra_args)
                assert n == 0 or argv[-n:] == list(d.extra_args), f"{u.unit_name}: extra_args changed: {argv[-n:]}"
                assert argv[argv.index("--served-model-name") + 1] == d.served_name
                if d.speculative:
                    assert json.loads(argv[argv.index("--speculative-config") + 1]) == d.speculative


@pytest.mark.parametrize("stack", ["spark-duo", "rtxpro-quad"])
def test_shell_metacharacters_in_every_string_field(stack, tmp_path):
    path = REPO / "stacks" / f"Pulumi.{stack}.yaml"
    valid = load_stack_file(path)
    data = valid.model_dump(mode="json")
    slots = list(string_slots(StackSpec, data))
    assert len(slots) > 40, f"only {len(slots)} string slots found: the walk is broken"
    paths = {".".join(map(str, p)) for p, _ in slots}
    for expected in ("deployments.0.served_name", "deployments.0.health.prompt", "deployments.0.extra_args",
                     "nodes.0.ssh.host_key", "models.0.revision", "images.0.base", "retire.0.unit"):
        assert expected in paths, expected

    accepted: dict[str, list] = {p: [] for p in PAYLOADS}
    for slot in slots:
        for payload in PAYLOADS:
            try:
                parse(mutated(data, slot, payload), str(path))
            except ConfigError as err:
                assert str(err).startswith(f"{path}: ") and "fix:" in str(err)
                continue
            accepted[payload].append(slot)

    # Free text may carry anything; names, paths, hosts, units, images, flags may not.
    free = {"deployments.0.health.prompt", "deployments.0.benchmark.prompt_set", "deployments.0.extra_args", "deployments.0.env",
            "deployments.0.speculative", "deployments.0.api_key.env", "deployments.0.api_key.config",
            "deployments.0.api_key.file", "models.0.hf_token.config", "models.0.hf_token.file",
            "models.0.hf_token.env", "models.0.source.path", "nodes.0.ssh.private_key_path",
            "nodes.1.ssh.private_key_path", "gateway.health.prompt", "gateway.api_key.env",
            "gateway.api_key.config", "gateway.api_key.file"}
    for payload, slots_ok in accepted.items():
        for p, how in slots_ok:
            key = ".".join(map(str, p))
            assert re.sub(r"\.\d+$", "", key) in free, f"{key} ({how}) accepts {payload!r}"

    # Everything accepted for one payload, all at once, in one build.
    for payload, slots_ok in accepted.items():
        if not slots_ok:
            continue
        combined = data
        for slot in slots_ok:
            combined = mutated(combined, slot, payload)
        spec = parse(combined, str(path))
        check_build(stack, spec, payload, tmp_path)


def test_free_text_reaches_the_engine_exactly(tmp_path):
    """A value with every kind of metacharacter comes out of systemd as it went in."""
    nasty = "a b'c\"d$e${HOME}%n\\f`id`;|&<>*?~#!"
    values = duo()
    values["deployments"][0]["env"]["BWS_NASTY"] = nasty
    values["deployments"][0]["extra_args"] = ["--x", nasty]
    values["deployments"][0]["speculative"] = {"method": nasty, "num_speculative_tokens": 2}
    values["deployments"][0]["health"] = {"prompt": nasty + "\nBWS_BODY_EOF\n"}
    spec = parse(values, "test")
    check_build("spark-duo", spec, nasty, tmp_path)
    [unit] = [u for u in snapshot("spark-duo", spec).units if u.unit_name == "bws-qwen35.service"]
    assert systemd_syntax.environment(unit.unit_text)["BWS_NASTY"] == nasty
    argv = systemd_syntax.exec_argv(systemd_syntax.values(unit.unit_text, "Service", "ExecStart")[0])
    assert argv[-2:] == ["--x", nasty]


def test_shlex_sees_one_word_for_quoted_values():
    from components.steps.render import shell_quote

    for payload in PAYLOADS:
        assert shlex.split(shell_quote(payload)) == [payload]
        done = subprocess.run(["bash", "-c", f"printf %s {shell_quote(payload)}"], capture_output=True, text=True)
        assert done.stdout == payload


def test_head_executor_counts_only_the_heads_gpus():
    from components.config import parse
    from tests.unit.mocked import REPO
    from components.config.load import values_from_stack_file

    values = values_from_stack_file(REPO / "stacks" / "Pulumi.lab.yaml")
    values["deployments"][0].update(topology="ray", executor="head", tensor_parallel=2)
    with pytest.raises(ConfigError) as err:
        parse(values, "stacks/Pulumi.lab.yaml")
    assert "blackwell-serving:deployments[0].tensor_parallel" in str(err.value)
    assert "its head has 1 GPUs" in str(err.value)


def test_head_executor_needs_the_ray_topology():
    from components.config import parse
    from tests.unit.mocked import REPO
    from components.config.load import values_from_stack_file

    values = values_from_stack_file(REPO / "stacks" / "Pulumi.rtxpro-quad.yaml")
    values["deployments"][0]["executor"] = "head"
    with pytest.raises(ConfigError) as err:
        parse(values, "stacks/Pulumi.rtxpro-quad.yaml")
    assert "executor" in str(err.value) and "topology 'ray'" in str(err.value)


@pytest.mark.parametrize("endpoint, ok", [
    ("https://hf-mirror.example.org", True), ("http://198.18.0.1:8080", True), ("https://proxy.example/hf/api-v1", True),
    ("ftp://mirror.example", False), ("https://mirror.example/$(id)", False), ("https://a b", False),
    ("https://mirror.example/'x'", False)])
def test_a_hub_endpoint_is_a_plain_http_url(tmp_path, endpoint, ok):
    values = duo()
    values["models"][0]["source"] = {"kind": "hub", "endpoint": endpoint}
    if ok:
        assert load_stack_file(write_stack(tmp_path, values)).models[0].source.endpoint == endpoint
    else:
        expect_error(tmp_path, values, "models[0].source.endpoint", "fix:")


@pytest.mark.parametrize("key, value", [("endpoint", "https://m.example"), ("downloader_image", "python:3.12")])
def test_only_a_hub_source_has_an_endpoint_or_a_downloader_image(tmp_path, key, value):
    values = duo()
    values["models"][0]["source"] = {"kind": "node", "path": "/srv/models/x", key: value}
    expect_error(tmp_path, values, f"models[0].source.{key}", f"only a hub source takes source.{key}",
                 f"remove source.{key}")


@pytest.mark.parametrize("python", [None, "/opt/venv/bin/python"])
def test_a_hub_endpoint_reaches_the_downloader_quoted(python):
    """HF_ENDPOINT on the downloader (a container's -e, or the node's python's environment), and
    the token still only as a file path."""
    from components.steps.render import render
    script = render("scripts/fetch-model.sh.j2", kind="hub", repo="o/m", revision="a" * 40, image="img:1",
                    python=python, with_token=True, endpoint="https://hf-mirror.example.org/hf",
                    source_path="", model_name="m", final_dir="/c/m", staging_dir="/c/.staging/m")
    expected = "HF_ENDPOINT=https://hf-mirror.example.org/hf"
    assert (f"-e {expected} " if python is None else f"{expected} HF_TOKEN_PATH=") in script
    subprocess.run(["bash", "-n"], input=script, text=True, check=True)
