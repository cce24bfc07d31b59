"""The env file fact: a unit's secret EnvironmentFile is on its node (its generation token), read by
the real probe shell; a wiped node makes the env step pending again, and nothing of the file's
content reaches the probe's output."""

from __future__ import annotations

import subprocess

from components.facts import EnvFileWritten
from components.facts.observation import NodeFacts, Watch, parse, probe_script


def observe(path: str) -> NodeFacts:
    probe = probe_script(Watch(env_files={path}))
    return parse(subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True).stdout)


def test_the_probe_reads_the_token_and_never_the_secret(tmp_path):
    env = tmp_path / "bws-tiny.env"
    assert observe(str(env)).env_files == {str(env): "absent"}
    env.write_text("VLLM_API_KEY=sk-very-secret\n")
    assert observe(str(env)).env_files == {str(env): "absent"}        # no token: not written by us
    (tmp_path / "bws-tiny.env.generation").write_text("3f1c-77aa\n")
    facts = observe(str(env))
    assert facts.env_files == {str(env): "3f1c-77aa"}
    assert "secret" not in repr(facts)


def test_a_missing_file_is_drift_for_its_step():
    expect = EnvFileWritten("lab-1", "/etc/blackwell-serving/tiny.env")
    assert expect.watch() == [("lab-1", "env_files", "/etc/blackwell-serving/tiny.env")]
    wiped = parse("envfile\t/etc/blackwell-serving/tiny.env\tabsent\n")
    assert expect.drift({"lab-1": wiped}) == "drift: secret environment file /etc/blackwell-serving/tiny.env absent"
    assert expect.drift({"lab-1": NodeFacts()}) is not None
    kept = parse("envfile\t/etc/blackwell-serving/tiny.env\t3f1c-77aa\n")
    assert expect.drift({"lab-1": kept}) is None
