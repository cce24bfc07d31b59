"""Where an old tag of a derived image goes (templates/scripts/_retire_tags.sh.j2; its real Docker
behaviour: tests/lab/test_lab_image_tags.py): after a build, and where a container of the image
starts (an engine's or a Ray node's unit, the gateway); never for the operator's own image."""

from __future__ import annotations

import shlex

from components import names
from components.steps.render import render

DERIVED = f"{names.DERIVED_IMAGE_REPOSITORY}/vllm-lab:0123456789ab"
OPERATORS = "nvcr.io/nvidia/vllm:25.11-py3"
UNIT = "[Unit]\nDescription=d\n"


def call(tag: str) -> str:
    return f"retire_older_tags {shlex.quote(tag)}"


def retires(script: str, tag: str) -> bool:
    return call(tag) in script


def test_only_our_repository_counts_as_derived():
    assert names.derived_image(DERIVED)
    assert not names.derived_image(OPERATORS)
    assert not names.derived_image(f"registry.example/{names.DERIVED_IMAGE_REPOSITORY}/x:1")
    assert not names.derived_image(None) and not names.derived_image("")


def install_unit(image):
    return render("scripts/install-unit.sh.j2", unit_text=UNIT, container="bws-d", image=image,
                  must_stay_up=True, release=None, unit_name="bws-d.service", env_file=None)


def test_a_unit_whose_container_runs_a_derived_image_retires_its_older_tags():
    assert retires(install_unit(DERIVED), DERIVED)
    assert "retire_older_tags" not in install_unit(OPERATORS)
    assert "retire_older_tags" not in install_unit(None)


def test_a_build_retires_the_older_tags_no_container_uses():
    script = render("scripts/build-image.sh.j2", tag=DERIVED, base=OPERATORS, dockerfile="FROM x\n",
                    ca_bundle=None, pull_only=False)
    assert retires(script, DERIVED)
    # The tag is set before the retire runs: the new image is never a candidate.
    assert script.index(f"docker tag {shlex.quote(DERIVED + '-staging')} {shlex.quote(DERIVED)}") < script.index(call(DERIVED))


def test_the_gateway_retires_its_older_tags_after_its_restart():
    script = render("scripts/install-gateway.sh.j2", unit_text=UNIT, config_text="x: 1\n", config_file="/c",
                    key_check_text="", key_check_file="/k", image=DERIVED, unit_name="bws-gateway.service",
                    container="bws-gateway", config_dir="/etc/c")
    assert script.index("systemctl restart") < script.index(call(DERIVED))
