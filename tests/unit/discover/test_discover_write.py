"""Discovery's writer and merge: a new stack file loads with the config loader as written; an
existing one (the shipped lab stack) gets only its nodes/fabric/retire/keep blocks rewritten,
every other line as the operator wrote it, retire/keep only growing; a second run changes
nothing; the CLI writes an existing file only with consent. Host keys: OpenSSH's fingerprint."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from unittest import mock

import pytest

from components.config import load_stack_file
from components.config.load import values_from_stack_file
from components.discover import __main__ as cli
from components.discover import hostkeys
from components.discover.facts import DiscoveryError
from components.discover.merge import compose, merge_values, split, unified_diff
from components.discover.write import new_stack_file
from tests.unit.discover import captured
from tests.unit.discover.captured import DATA, discovered

REPO = Path(__file__).resolve().parents[3]
LAB_STACK = REPO / "stacks" / "Pulumi.lab.yaml"
LAB_KEYS = captured.LAB_KEYS
LAB, SPARKS = captured.LAB, captured.SPARKS


def test_new_spark_stack_loads_as_written(tmp_path):
    path = tmp_path / "Pulumi.sparks.yaml"
    path.write_text(new_stack_file("sparks", ["198.18.3.12", "198.18.3.13"], discovered(SPARKS)))
    spec = load_stack_file(path)
    assert [n.name for n in spec.nodes] == ["spark-1a32", "spark-5be3"]
    assert spec.fabric.netdev == "enp1s0f1np1" and spec.fabric.hcas == ["rocep1s0f1", "roceP2p1s0f1"]
    assert spec.fabric.gid_index == 3 and spec.fabric.mtu == 9000 and not spec.fabric.disable_ib
    assert spec.nodes[1].fabric.netdev == "enp1s0f0np0" and spec.nodes[1].fabric.hcas == ["rocep1s0f0", "roceP2p1s0f0"]
    assert spec.nodes[0].gpu.kind == "gb10" and str(spec.nodes[0].fabric_address) == "192.168.200.12"
    assert [(r.node, r.unit) for r in spec.retire] == [("spark-1a32", "vllm-cluster.service")]
    assert [(k.node, k.unit) for k in spec.keep] == [("spark-5be3", "vllm-embeddings.service")]
    assert spec.deployments == [] and spec.images == []
    text = path.read_text()
    assert "#   fabric enp1s0f1np1 192.168.200.12/24, MTU 9000, 200000 Mb/s; RDMA: rocep1s0f1, roceP2p1s0f1, " \
           "RoCE v2 GID index 3" in text
    assert "container sglang-try on spark-1a32 serves model Qwen/Qwen3-8B, port 30000" in text
    assert "  # blackwell-serving:deployments:" in text          # the placeholders, commented out
    assert "PRIVATE KEY" not in text


def test_single_gpu_less_machine_loads_without_a_fabric(tmp_path):
    path = tmp_path / "Pulumi.box.yaml"
    path.write_text(new_stack_file("box", ["198.18.7.20"], discovered([("box", "cpu-box", "198.18.7.20")])))
    spec = load_stack_file(path)
    assert spec.fabric is None and spec.nodes[0].gpu.kind == "cpu"


def _lab_copy(tmp_path) -> Path:
    path = tmp_path / "Pulumi.lab.yaml"
    path.write_text(LAB_STACK.read_text())
    return path


def test_merge_into_the_lab_stack_rewrites_only_the_discovered_blocks(tmp_path):
    path = _lab_copy(tmp_path)
    old = path.read_text()
    new = compose(old, merge_values(values_from_stack_file(path), discovered(LAB, [re.compile(r"http\.server")])))
    diff = unified_diff(old, new, str(path))
    changed = [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    # The lab stack writes memory_gb 16 where the machines have 23.5; the fabric gets its prefix.
    assert {"-      gpu: {kind: cpu, count: 1, memory_gb: 16}", "+      gpu: {kind: cpu, count: 1, memory_gb: 23.5}",
            "+    prefix_len: 24", "     bandwidth_check: {size_mb: 64, iterations: 3}"} <= set(changed) | set(
        diff.splitlines()), diff
    # Everything before the nodes and from images on (retire and keep already listed) is as it was.
    head, rest = old.index("  blackwell-serving:nodes:"), old.index("  blackwell-serving:images:")
    assert new.startswith(old[:head]) and new.endswith(old[rest:])
    merged = tmp_path / "Pulumi.merged.yaml"
    merged.write_text(new)
    spec = load_stack_file(merged)
    assert spec.fabric.bandwidth_check.size_mb == 64 and spec.fabric.netdev == "eth1"
    assert [(r.node, r.unit) for r in spec.retire] == [("lab-1", "glm.service")]
    assert [n.gpu.memory_gb for n in spec.nodes] == [23.5, 23.5]


def test_second_run_is_a_fixed_point_and_names_come_from_the_file(tmp_path):
    path = _lab_copy(tmp_path)
    renamed = [("bws-lab-1", "lab-1", "198.18.0.11"), ("bws-lab-2", "lab-2", "198.18.0.12")]
    once = compose(path.read_text(), merge_values(values_from_stack_file(path), discovered(renamed)))
    path.write_text(once)
    twice = compose(once, merge_values(values_from_stack_file(path), discovered(renamed)))
    assert twice == once
    with_engines = compose(once, merge_values(values_from_stack_file(path),
                                              discovered(renamed, [re.compile(r"http\.server")])))
    assert with_engines == once             # retire/keep name the file's nodes: already listed
    assert "- name: lab-1" in once and "    # bws-lab-1: x86_64, 23.5 GiB memory, no GPU" in once


def test_retired_unit_not_running_any_more_stays_in_retire(tmp_path):
    """glm.service, retired by `up`, is not running when the machines are discovered again: the
    retire block stays as written (retire and keep only grow)."""
    path = _lab_copy(tmp_path)
    old = path.read_text()
    merged = merge_values(values_from_stack_file(path), discovered(LAB))
    assert merged.retire == [] and merged.keep == []
    new = compose(old, merged)
    block = old[old.index("  blackwell-serving:retire:"):old.index("  blackwell-serving:ray:")]
    assert block in new


def test_a_new_unit_grows_retire_and_keeps_the_listed_ones(tmp_path):
    path = tmp_path / "Pulumi.grow.yaml"
    path.write_text(LAB_STACK.read_text().replace("    - {node: lab-1, unit: glm.service}\n",
                                                  "    - {node: lab-2, unit: old.service}\n"))
    lab1_running_glm = (DATA / "lab-1.txt").read_text() + "service\tglm.service\tGLM\tpython3 -m http.server 8000\n"
    (tmp_path / "lab-1-glm.txt").write_text(lab1_running_glm)
    merged = merge_values(values_from_stack_file(path),
                          discovered([("lab-1", "lab-1", "198.18.0.11"), ("lab-2", "lab-2", "198.18.0.12")],
                                     [re.compile(r"http\.server")], data=tmp_path, files={"lab-1": "lab-1-glm"}))
    assert [i.value for i in merged.retire] == [{"node": "lab-2", "unit": "old.service"},
                                                {"node": "lab-1", "unit": "glm.service"}]
    assert merged.keep == []                 # embeddings.service is listed already


def test_a_file_indented_by_four_and_a_file_without_config(tmp_path):
    four = "config:\n    blackwell-serving:offline: true   # mine\nencryptionsalt: v1:x\n"
    text = compose(four, discovered(LAB))
    assert "    blackwell-serving:offline: true   # mine\n" in text and text.endswith("encryptionsalt: v1:x\n")
    assert "    blackwell-serving:nodes:\n" in text and "      - name: lab-1\n" in text
    path = tmp_path / "Pulumi.four.yaml"
    path.write_text(text)
    assert load_stack_file(path).offline
    bare = compose("encryptionsalt: v1:x\n", discovered(LAB))
    path.write_text(bare)
    assert len(load_stack_file(path).nodes) == 2


def test_split_keeps_comments_with_their_key():
    layout = split("config:\n  # about a\n  a: 1\n\n  # loose\n\n  b:\n    - 1\n\n    - 2\ntop: x\n")
    assert [(s.key, s.lines) for s in layout.segments] == [
        ("a", ["  # about a", "  a: 1"]), (None, [""]), (None, ["  # loose", ""]), ("b", ["  b:", "    - 1", "", "    - 2"])]
    assert layout.after == ["top: x"]


def test_fingerprint_is_openssh_s():
    pub = REPO / "tests/lab/hostkeys/bws-lab-1/ssh_host_ed25519_key.pub"
    keygen = subprocess.run(["ssh-keygen", "-lf", str(pub)], capture_output=True, text=True, check=True)
    assert hostkeys.fingerprint(LAB_KEYS[1]) == keygen.stdout.split()[1]


def test_host_key_is_trusted_only_by_fingerprint_or_consent():
    scan = f"# 198.18.0.11:22 SSH-2.0-OpenSSH\n198.18.0.11 ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ==\n" \
           f"198.18.0.11 {LAB_KEYS[1]}\n"
    keys = hostkeys.parse_keyscan(scan)
    assert keys[0] == LAB_KEYS[1]                      # ed25519 first
    fp = hostkeys.fingerprint(LAB_KEYS[1])
    assert hostkeys.trusted_key("h", keys, {fp}, None) == LAB_KEYS[1]
    assert hostkeys.trusted_key("h", keys, set(), lambda q: True) == LAB_KEYS[1]
    with pytest.raises(DiscoveryError, match=re.escape(f"--accept-host-key {fp}")):
        hostkeys.trusted_key("h", keys, set(), lambda q: False)
    with pytest.raises(DiscoveryError, match="is not trusted"):
        hostkeys.trusted_key("h", keys, {hostkeys.normalized("AAAA")}, None)


def test_cli_writes_an_existing_file_only_with_consent(tmp_path, capsys):
    path = _lab_copy(tmp_path)
    old = path.read_text()
    args = ["lab-1=198.18.0.11", "lab-2=198.18.0.12", "--out", str(path)]
    with mock.patch.object(cli, "discover", return_value=discovered(LAB)), \
            mock.patch("sys.stdin.isatty", return_value=False):
        assert cli.main(args) == 3
        assert path.read_text() == old
        out = capsys.readouterr()
        assert "+      gpu: {kind: cpu, count: 1, memory_gb: 23.5}" in out.out and "not written; fix: answer y on a terminal, or pass --yes" in out.err
        assert cli.main([*args, "--yes"]) == 0
        assert path.read_text() != old
        assert cli.main([*args, "--yes"]) == 0
        assert "already says what the machines show" in capsys.readouterr().out
        # The engine re-encodes a stack file now and then (comments moved, lists indented): the
        # same values are not rewritten.
        written = path.read_text()
        path.write_text(written.replace("    # bws-lab-1: x86_64", "  # bws-lab-1: x86_64"))
        assert cli.main(args) == 0 and "already says what the machines show" in capsys.readouterr().out
