"""The configuration of the stack's own Prometheus: promtool accepts it with the stack's rules;
every target carries the labels the rules select on; the alert windows follow the stack's
monitoring.alerts (a lab uses short ones)."""

from __future__ import annotations

import yaml

from components.config.monitoring import AlertWindows
from components.monitoring.rules import rules_text
from components.monitoring.scrape import GATEWAY_METRICS_PATH, KEYS_DIR, key_file, prometheus_config
from tests.unit.monitoring.exposition import spec
from tests.unit.monitoring.promtool import promtool, rule


def test_promtool_accepts_the_config_and_its_rules(tmp_path):
    """With the key files where the keys step writes them (here under tmp_path: promtool refuses
    a configuration whose key file is missing, which is why that step runs first)."""
    s = spec("spark-duo")
    (tmp_path / "rules.yml").write_text(rules_text("spark-duo", s))
    (tmp_path / "keys").mkdir()
    for job in ("engine-qwen35", "gateway"):
        (tmp_path / "keys" / job).write_text("k")
    text = prometheus_config("spark-duo", s, str(tmp_path / "rules.yml")).replace(KEYS_DIR, str(tmp_path / "keys"))
    (tmp_path / "prometheus.yml").write_text(text)
    done = promtool("check", "config", str(tmp_path / "prometheus.yml"))
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_target_is_labelled_with_its_stack_and_node():
    config = yaml.safe_load(prometheus_config("spark-duo", spec("spark-duo"), "/r.yml"))
    jobs = {j["job_name"]: j for j in config["scrape_configs"]}
    assert sorted(jobs) == ["engine-qwen35", "gateway", "node", "prometheus"]
    for job in jobs.values():
        for group in job["static_configs"]:
            assert group["labels"]["stack"] == "spark-duo" and group["labels"]["node"], job
    assert [g["targets"] for g in jobs["node"]["static_configs"]] == [["spark-1a32:9100"], ["spark-5be3:9100"]]
    assert jobs["engine-qwen35"]["static_configs"][0]["labels"]["deployment"] == "qwen35"
    assert jobs["gateway"]["metrics_path"] == GATEWAY_METRICS_PATH
    assert config["global"]["scrape_interval"] == "15s"


def test_the_alert_windows_are_the_stacks():
    s = spec("spark-duo")
    short = s.model_copy(update={"monitoring": s.monitoring.model_copy(update={"alerts": AlertWindows(
        engine_down_s=30, wedged_s=90, memory_pressure_s=120)})})
    rules = rules_text("spark-duo", short)
    assert rule(rules, "blackwell-serving/spark-duo/qwen35", "BwsEngineDown")["for"] == "30s"
    assert rule(rules, "blackwell-serving/spark-duo/qwen35", "BwsEngineWedged")["for"] == "90s"
    assert rule(rules, "blackwell-serving/spark-duo/node/spark-1a32", "BwsNodeMemoryPressure")["for"] == "2m"
    assert rule(rules_text("spark-duo", s), "blackwell-serving/spark-duo/qwen35", "BwsEngineDown")["for"] == "5m"


def test_a_target_with_a_key_is_scraped_with_it_from_a_file_and_one_without_is_not():
    """llama-server and LiteLLM answer /metrics only with the key: a scrape without it would read as
    the engine being down. The key is a file the keys step writes, never in the configuration."""
    s = spec("spark-duo")
    open_engine = s.model_copy(update={"deployments": [s.deployments[0].model_copy(update={"api_key": None})]})
    for stack, keyed in ((s, True), (open_engine, False)):
        text = prometheus_config("spark-duo", stack, "/r.yml")
        jobs = {j["job_name"]: j for j in yaml.safe_load(text)["scrape_configs"]}
        engine = jobs["engine-qwen35" if keyed else "engines"]
        assert ("authorization" in engine) == keyed, engine
        if keyed:
            assert engine["authorization"] == {"type": "Bearer", "credentials_file": key_file("engine-qwen35")}
        assert jobs["gateway"]["authorization"]["credentials_file"] == key_file("gateway")
