"""A failing step's block (templates/scripts/_failure.sh.j2), run by real bash through a step's
real command line (components/remote.command_line): the sentence, the node, the status and what
it means, this run's lines of the log, the fix; the script's own `trap ... EXIT` still runs
first, and the status is the script's. And its reading by the outer tools (components/steps/failure.py)."""

from __future__ import annotations

import re
import subprocess
import sys
import uuid

from components.steps import failure
from components.steps.remote import command_line
from components.steps.render import environment, fill_node_packages

SENTENCE = "Build image vllm-lab on lab-1 (transformers>=5)"


def script(tmp_path, body: str, packages=None, **values) -> str:
    """A step's script: the scripts' prelude (progress into a log file under tmp_path)."""
    head = '{% include "scripts/_prelude.sh.j2" %}\n'
    values = {"step": "t", "with_progress": True, "log_file": str(tmp_path / "step.log"), **values}
    return fill_node_packages(environment().from_string(head + body).render(**values), packages)


def run(text: str, *, doing: str = SENTENCE, stdin_data: str = "", cwd=None) -> subprocess.CompletedProcess:
    line = command_line(label="t on lab-1", lock=f"test-{uuid.uuid4().hex}", scripts=[text], which=0,
                        timeout_s=30, doing=doing, node="lab-1" if doing else "")
    return subprocess.run(["bash", "-c", line], input=text + stdin_data, capture_output=True, text=True,
                          timeout=60, cwd=cwd)


def test_a_command_not_found_in_a_progress_pipeline_names_its_package_on_the_node(tmp_path):
    (tmp_path / "step.log").write_text("bws-no-such-tool: command not found (an earlier run's line)\n")
    text = script(tmp_path, 'log "building"\necho "step 1 of 2 done" 2>&1 | progress\n'
                            'bws-no-such-tool --version 2>&1 | progress\necho never\n',
                  packages=[("bws-tools", ["bws-other", "bws-no-such-tool"]), ("bws-unused", ["bws-unused"])])
    done = run(text)
    assert "bws-no-such-tool) package=bws-tools ;;" in text and "bws-unused" not in text  # what it names
    assert done.returncode == 127
    block = done.stdout.splitlines()[-8:]
    assert block[:6] == [
        f"FAILED: {SENTENCE}",
        "  node:   lab-1",
        "  status: exit 127 (a command was not found: bws-no-such-tool)",
        "  said:   building",  # the script's last words (not where its log is)
        f"  log:    last lines of {tmp_path / 'step.log'}",
        "    | step 1 of 2 done",
    ], done.stdout
    assert re.fullmatch(r"    \| bash: line \d+: bws-no-such-tool: command not found", block[6]), block
    assert block[7] == ("  fix:    install the Debian package bws-tools on lab-1 (apt-get install bws-tools); "
                        "then run pulumi up again")
    # Only this run's lines of the log; the script's stderr is the progress alone.
    assert "an earlier run" not in done.stdout and "never" not in done.stdout
    assert done.stderr.splitlines()[0] == "[blackwell t] building"


def test_a_missing_command_on_the_operators_machine_is_looked_up_in_its_package_list(tmp_path):
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "host-packages.txt").write_text("# list\nbws-host-tools   bws-a bws-no-such-tool\n")
    text = script(tmp_path, "bws-no-such-tool -a\n", operator_side=True)
    done = run(text, cwd=tmp_path)
    assert done.returncode == 127
    assert "  status: exit 127 (a command was not found: bws-no-such-tool)" in done.stdout
    assert "  node:   lab-1 (this step runs on the operator's machine)" in done.stdout
    assert ("  fix:    install the Debian package bws-host-tools on this machine (apt-get install bws-host-tools; "
            "it is in scripts/host-packages.txt") in done.stdout


def test_the_scripts_own_exit_trap_runs_first_and_the_status_is_the_scripts(tmp_path):
    text = script(tmp_path, 'work=$(mktemp -d)\ntrap \'rm -rf "$work"; echo cleaned\' EXIT\n'
                            '( trap "echo subshell-cleaned" EXIT; exit 0 )\n'
                            'log "checking"\ngrep -q needle "$work/nothing"\n')
    done = run(text)
    assert done.returncode == 2
    out = done.stdout.splitlines()
    assert out[:2] == ["subshell-cleaned", "cleaned"] and out.count(f"FAILED: {SENTENCE}") == 1
    assert '  status: exit 2 (the command that failed: grep -q needle "$work/nothing")' in out
    assert "log:" not in done.stdout  # nothing went to the log in this run
    assert out[-2:] == ['  status: exit 2 (the command that failed: grep -q needle "$work/nothing")',
                        "  said:   checking"]


def test_success_and_a_script_outside_a_step_print_no_block(tmp_path):
    assert run(script(tmp_path, "echo ok\n")).stdout == "ok\n"
    outside = run(script(tmp_path, "false\n"), doing="")
    assert outside.returncode == 1 and failure.MARKER not in outside.stdout


def test_a_timeout_ends_the_script_with_its_block(tmp_path):
    text = script(tmp_path, "sleep 30\n")
    line = command_line(label="t", lock=f"test-{uuid.uuid4().hex}", scripts=[text], which=0, timeout_s=1,
                        doing=SENTENCE, node="lab-1")
    done = subprocess.run(["bash", "-c", line], input=text, capture_output=True, text=True, timeout=60)
    assert done.returncode == 124
    assert "  status: exit 143 (ended by SIGTERM: the step's timeout, or the run was stopped)" in done.stdout


def test_the_outer_tools_read_each_block_once_and_drop_the_quoted_command_line():
    block = (f"FAILED: {SENTENCE}\n  node:   lab-1\n  status: exit 127 (a command was not found: pv)\n"
             "  log:    last lines of /var/log/x.log\n    | bash: pv: command not found\n"
             "  fix:    install the Debian package pv on lab-1")
    message = ('Process exited with status 127: running "exec env BWS_STEP=\'x\' bash -c \'s=$(head -c 9)\'":\n'
               "[blackwell x] building\n\n" + block + "\n")
    pulumi_output = "    error: " + message.replace("\n", "\n    ") + "\n  command:remote:Command (y):\n"
    assert failure.blocks(pulumi_output) == [block]
    assert failure.blocks(pulumi_output + pulumi_output) == [block]
    assert failure.condense(message) == block.splitlines()
    assert failure.status_line(message) == "exit 127 (a command was not found: pv)"
    other = 'Process exited with status 255: running "exec env BWS_STEP=\'x\' bash":\nssh: dial failed\n'
    assert failure.condense(other) == ["Process exited with status 255", "ssh: dial failed"]
    config = "stacks/Pulumi.x.yaml: the stack config is invalid\n" + "".join(f"  key{i}: bad\n" for i in range(15))
    assert len(failure.condense(config)) == 16  # not a step's error: whole


def test_the_main_jobs_filter_leaves_out_the_quoted_command_line():
    line = ' +  command:remote:Command x **creating failed** error: Process exited with status 127: running "exec env A=\'b\' bash -c \'s=\\"$4\\"\'":\n'
    assert failure.without_command_line(line) == " +  command:remote:Command x **creating failed** error: Process exited with status 127"
    done = subprocess.run([sys.executable, "-m", "components.steps.failure", "--filter"], input=line + "other\n",
                          capture_output=True, text=True, timeout=60)
    assert done.stdout == " +  command:remote:Command x **creating failed** error: Process exited with status 127\nother\n"
