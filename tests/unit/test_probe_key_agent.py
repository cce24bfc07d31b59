"""The program's own probe holds the operator's key in an ssh-agent of its own: never on disk,
and gone with the process, even when it is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

from components.steps.ssh import key_agent


def test_the_key_is_in_the_agent_and_in_no_file(tmp_path):
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "k")], check=True)
    key = (tmp_path / "k").read_text()
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    with key_agent(key, str(agent_dir)) as env:
        listed = subprocess.run(["ssh-add", "-L"], env=env, capture_output=True, text=True, check=True)
        assert listed.stdout.split()[:2] == (tmp_path / "k.pub").read_text().split()[:2]
        for path in agent_dir.rglob("*"):
            assert not path.is_file() or key not in path.read_text(errors="ignore")
    assert not (agent_dir / "agent.sock").exists() or subprocess.run(
        ["ssh-add", "-L"], env=env, capture_output=True).returncode != 0


def test_the_agent_dies_with_a_killed_program(tmp_path):
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "k")], check=True)
    program = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {os.getcwd()!r})
        from components.steps.ssh import key_agent
        with key_agent(open({str(tmp_path / 'k')!r}).read(), {str(tmp_path)!r}) as env:
            print(env["SSH_AUTH_SOCK"], flush=True)
            time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, text=True)
    sock = proc.stdout.readline().strip()
    agents = subprocess.run(["pgrep", "-f", f"ssh-agent -a {sock}"], capture_output=True, text=True).stdout.split()
    assert agents, "the agent should be running"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 25   # the agent checks on its command every 10 s
    while time.monotonic() < deadline and any(os.path.exists(f"/proc/{pid}") for pid in agents):
        time.sleep(0.1)
    assert not any(os.path.exists(f"/proc/{pid}") and "ssh-agent" in open(f"/proc/{pid}/cmdline").read()
                   for pid in agents)
