"""A stack file as discovery writes it (nodes, fabric, retire/keep, placeholders commented out),
from the captured outputs of a Spark pair, previews on the real engine as it is, offline."""

from __future__ import annotations

from components.discover.write import new_stack_file
from tests.engine.conftest import preview_json
from tests.unit.discover.captured import SPARKS, discovered


def test_discovered_spark_pair_previews_as_written(project):
    (project / "stacks" / "Pulumi.discovered.yaml").write_text(
        new_stack_file("discovered", [host for _, _, host in SPARKS], discovered(SPARKS)))
    doc = preview_json(project, "discovered", {"BLACKWELL_SERVING_OFFLINE": "1"})
    creates = {step["urn"].split("::")[-1] for step in doc["steps"] if step["op"] == "create"}
    assert {"spark-1a32-vllm-cluster-retire", "spark-5be3-vllm-embeddings-check"} <= creates, sorted(creates)
