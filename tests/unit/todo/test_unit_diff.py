"""The todo item of a changed unit names the change: the engine's flag, its environment value —
read from the old and new plain stdin of its install step, never from a secret."""

from __future__ import annotations

from components.steps.remote import command_line
from components.steps.render import render
from components.todo import unit_diff
from components.todo.plan import Step, reason_of
from components.resources.unit import container_unit_text


def unit(max_len: str = "32768", env: dict | None = None, image: str = "vllm:1") -> str:
    return container_unit_text(component="Deployment d", description="d", container="bws-d", image=image,
                               command=["vllm", "serve", "/models/m", "--max-model-len", max_len,
                                        "--enable-auto-tool-choice", "--tool-call-parser", "qwen3 coder"],
                               docker_args=["--init", "-e", "VLLM_X"], environment=env or {"VLLM_X": "a"})


def install_inputs(text: str, inputs: tuple[str, ...] = ("sha256:1",)) -> dict:
    create = render("scripts/install-unit.sh.j2", unit_text=text, unit_name="bws-d.service", env_file=None,
                    container="bws-d", must_stay_up=True, release=None)
    delete = render("scripts/remove-unit.sh.j2", unit_name="bws-d.service", env_file=None)
    line = lambda which, inp: command_line(label="d-install on n", lock="d-install on n", scripts=[create, delete],
                                           which=which, timeout_s=60, inputs=inp)
    return {"create": line(0, inputs), "delete": line(1, ()), "stdin": create + delete}


def update(old: dict, new: dict) -> Step:
    diffs = [k for k in new if old.get(k) != new.get(k)]
    return Step(urn="urn:pulumi:s::p::command:remote:Command::d-install", type="command:remote:Command",
                ops=["update"], parent=None, custom=True, inputs=new, diffs=diffs, old_inputs=old)


def test_a_changed_flag_and_env_value_are_named():
    step = update(install_inputs(unit()), install_inputs(unit("65536", {"VLLM_X": "b"})))
    assert {"create", "stdin"} <= set(step.diffs)
    assert reason_of(step) == "update: --max-model-len 32768 → 65536, env VLLM_X: a → b"


def test_a_longer_script_moves_the_delete_scripts_offset_which_is_no_change_of_its_own():
    step = update(install_inputs(unit()), install_inputs(unit("131072")))
    assert set(step.diffs) == {"create", "delete", "stdin"}
    assert reason_of(step) == "update: --max-model-len 32768 → 131072"


def test_added_removed_and_quoted_tokens():
    old = ["vllm", "serve", "--a", "1", "--flag", "--p", "x y"]
    new = ["vllm", "serve", "--a", "1", "--p", "x z", "--new", "2"]
    assert unit_diff.argv_changes(old, new) == ["---flag", "--p 'x y' → 'x z'", "+--new 2"]
    assert unit_diff.env_changes({"A": "1", "B": "2"}, {"B": "2", "C": "$3%"}) == ["env -A", "env +C=$3%"]


def test_systemd_escapes_are_read_back():
    text = unit(env={"VLLM_X": "100%"})
    argv, env, _ = unit_diff.parts(text)
    assert env == {"VLLM_X": "100%"}
    assert argv[-1] == "qwen3 coder" and argv[:2] == ["/usr/bin/docker", "run"]


def test_a_new_image_trigger_is_still_named_as_an_input_change():
    step = update(install_inputs(unit()), install_inputs(unit("65536"), inputs=("sha256:2",)))
    assert reason_of(step) == "update: --max-model-len 32768 → 65536, script changed"


def test_only_the_script_changed_says_so():
    old = install_inputs(unit())
    new = dict(old, stdin=old["stdin"].replace("# Install (or update)", "# Install (or update!)"))
    assert reason_of(update(old, new)) == "update: script changed"


def test_a_secret_stdin_is_never_read():
    old, new = {"stdin": "[secret]", "create": "x"}, {"stdin": "[secret]", "create": "x"}
    step = update(old, new)
    step.diffs = ["stdin"]
    assert reason_of(step) == "update: secret or script changed"
    assert unit_diff.changes("[secret]", install_inputs(unit())["stdin"]) is None


def test_other_lines_are_named_by_their_key():
    old, new = unit(), unit().replace("RestartSec=10", "RestartSec=20")
    assert unit_diff.changes(install_inputs(old)["stdin"], install_inputs(new)["stdin"]) == ["unit RestartSec changed"]


def test_many_changes_are_summed_up():
    found = [f"+--f{i}" for i in range(7)]
    assert unit_diff.summary(found) == "+--f0, +--f1, +--f2, +--f3, … 3 more"
