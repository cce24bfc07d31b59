"""The cheap model-cache check (templates/scripts/_cache_check.sh.j2), run by real bash on a real
directory: what the probe and the fetch/copy scripts call "intact"."""

from __future__ import annotations

import os
import subprocess

import pytest

from components.steps.render import render


def bash(script: str, cache) -> int:
    full = render("scripts/_cache_check.sh.j2") + script
    return subprocess.run(["bash", "-c", full, "check", str(cache)], capture_output=True, timeout=30).returncode


@pytest.fixture
def cache(tmp_path):
    d = tmp_path / "models--x"
    (d / "sub").mkdir(parents=True)
    (d / "config.json").write_text("{}")
    (d / "sub" / "model.safetensors").write_bytes(b"w" * 4096)
    (d / "name with spaces.txt").write_text("tokenizer")
    (d / ".blackwell-manifest.sha256").write_text("the manifest\n")
    assert bash('cache_stat "$1" > "$1/.blackwell-manifest.stat"', d) == 0
    return d


def intact(cache) -> bool:
    return bash('cache_intact "$1"', cache) == 0


def test_a_cache_as_installed_is_intact(cache):
    assert intact(cache)


def test_a_deleted_weight_file_is_seen(cache):
    (cache / "sub" / "model.safetensors").unlink()
    assert not intact(cache)


def test_a_truncated_file_is_seen(cache):
    (cache / "sub" / "model.safetensors").write_bytes(b"w" * 100)
    assert not intact(cache)


def test_a_file_rewritten_to_the_same_size_is_seen_by_its_mtime(cache):
    f = cache / "config.json"
    st = f.stat()
    f.write_text("[]")
    os.utime(f, (st.st_atime, st.st_mtime + 5))
    assert not intact(cache)


def test_an_added_file_is_seen(cache):
    (cache / "extra.bin").write_bytes(b"x")
    assert not intact(cache)


def test_no_manifest_or_no_fingerprint_is_not_intact(cache):
    (cache / ".blackwell-manifest.stat").unlink()
    assert not intact(cache)


def test_our_own_files_are_not_part_of_the_fingerprint(cache):
    (cache / ".blackwell-manifest.sha256").write_text("rewritten\n")
    assert intact(cache)
