"""The gateway on the converged lab, on the real engine (components/resources/gateway.py): one endpoint,
lab-1:4000, in front of two real vLLM engines (tiny-llama on lab-1, tiny-llama-b on lab-2).
Real requests from this machine to the gateway: both models answer through it, `/v1/models`
lists both, a request without the key or with a wrong one is refused with 401 and OpenAI's error
body, a streamed completion arrives as server-sent events; the real OpenAI client (the `openai`
package, pinned in pyproject.toml's test extra) takes a wrong or missing key for an
AuthenticationError and lists, completes and streams with the right one; then a change of the gateway's config (stacks/Pulumi.lab.yaml,
put back afterwards) is an update of the gateway's steps alone, restarts the gateway and leaves
every engine's process as it was. Needs `tests/lab/lab up`; runs the operator's `lab` stack
(.state/backend) and converges it first (a no-op when it already is)."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request

import pytest

from components import names
from tests.lab import topology as lab
from tests.lab.helpers import LAB_CONFIG, changes, converge_lab_stack, our_units, pulumi, require_lab, sh, unit_prop

pytestmark = pytest.mark.lab
LAB_STATE = "converged"  # tests/lab/conftest.py: the lab tests run grouped by the state they share

NODE1, NODE2 = lab.nodes(2)
PORT = 4000
MODELS = ["tiny-llama", "tiny-llama-b", "tiny-llama-gguf"]
# The processes the gateway's change must leave alone: every service of ours but the gateway's
# (engines and Ray; the timers of the checks run no process).
ENGINES = {n: [u for u in our_units(n) if u.endswith(".service") and u != names.GATEWAY_UNIT]
           for n in (NODE1, NODE2)}
GATEWAY = names.GATEWAY_UNIT


@pytest.fixture(scope="module")
def gateway_key():
    require_lab(NODE1, NODE2)
    for name in ("api-key", "gateway-key"):  # made by `lab up` (tests/lab/keys.sh)
        path = lab.STATE_DIR / name
        if not path.exists():
            path.write_text(os.urandom(18).hex() + "\n")
            path.chmod(0o600)
    converge_lab_stack()
    return (lab.STATE_DIR / "gateway-key").read_text().strip()


def call(path: str, key: str | None, body: dict | None = None, timeout: int = 120):
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(f"http://{NODE1.mgmt_ip}:{PORT}{path}", headers=headers,
                                     data=json.dumps(body).encode() if body is not None else None)
    return urllib.request.urlopen(request, timeout=timeout)


def chat(model: str, **more) -> dict:
    return {"model": model, "max_tokens": 8, "temperature": 0,
            "messages": [{"role": "user", "content": "Say hello."}], **more}


def test_the_stack_output_names_the_one_endpoint_and_its_models(gateway_key):
    outputs = json.loads(pulumi("stack", "output", "--json").stdout)
    assert outputs["gateway"] == {"endpoint": f"http://{NODE1.mgmt_ip}:{PORT}/v1", "models": MODELS}
    assert gateway_key not in json.dumps(outputs)


def test_models_lists_both(gateway_key):
    with call("/v1/models", gateway_key) as reply:
        listed = [m["id"] for m in json.load(reply)["data"]]
    assert sorted(listed) == sorted(MODELS)


@pytest.mark.parametrize("model", MODELS)
def test_each_model_answers_through_the_one_endpoint(gateway_key, model):
    with call("/v1/chat/completions", gateway_key, chat(model)) as reply:
        body = json.load(reply)
    assert body["choices"][0]["message"]["content"], body
    assert model in body["model"]


def refused(err: urllib.error.HTTPError, key: str | None) -> bool:
    """401 with OpenAI's error body, for no key and for a wrong one alike (the gateway's key check,
    templates/gateway/bws_key_check.py: LiteLLM alone answers a wrong key 400 "No connected db.")."""
    body = json.loads(err.read().decode(errors="replace"))
    error = body.get("error") or {}
    return err.code == 401 and {"message", "type", "code"} <= set(error) and bool(error["message"]) \
        and (key is None or key not in json.dumps(body))


@pytest.mark.parametrize("key", [None, "wrong-key", "sk-1234"])
def test_a_request_without_the_key_or_with_a_wrong_one_is_refused(gateway_key, key):
    for path, body in (("/v1/models", None), ("/v1/chat/completions", chat(MODELS[0]))):
        with pytest.raises(urllib.error.HTTPError) as err:
            call(path, key, body, timeout=30)
        assert refused(err.value, key), (path, key, err.value.code)


def test_the_engines_key_is_not_the_gateways(gateway_key):
    engine_key = (lab.STATE_DIR / "api-key").read_text().strip()
    assert engine_key != gateway_key
    with pytest.raises(urllib.error.HTTPError) as err:
        call("/v1/models", engine_key, timeout=30)
    assert refused(err.value, engine_key)


@pytest.mark.parametrize("model", MODELS)
def test_streaming_passes_through(gateway_key, model):
    events = []
    with call("/v1/chat/completions", gateway_key, chat(model, stream=True, max_tokens=12)) as reply:
        assert reply.headers.get("Content-Type", "").startswith("text/event-stream")
        for raw in reply:
            line = raw.decode().strip()
            if line.startswith("data: "):
                events.append(line[len("data: "):])
    assert events and events[-1] == "[DONE]", events[-3:]
    chunks = [json.loads(e) for e in events[:-1]]
    assert len(chunks) >= 2  # streamed, not one answer
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    text = "".join((c["choices"][0].get("delta") or {}).get("content") or "" for c in chunks if c["choices"])
    assert text.strip()


def test_the_gateways_files_are_root_only_and_hold_no_key_but_the_env_file(gateway_key):
    assert sh(NODE1, "stat -c '%a %U' /etc/blackwell-serving/gateway.env") == "600 root"
    assert sh(NODE1, "stat -c '%a %U' /etc/blackwell-serving/gateway/litellm.yaml") == "600 root"
    assert gateway_key not in sh(NODE1, "cat /etc/blackwell-serving/gateway/litellm.yaml")
    assert gateway_key not in sh(NODE1, f"cat /etc/systemd/system/{GATEWAY}")
    assert gateway_key not in sh(NODE1, f"docker inspect {names.GATEWAY_CONTAINER}")
    assert gateway_key not in sh(NODE1, "ps -eo args")


def test_a_gateway_config_change_restarts_the_gateway_alone(gateway_key):
    """The routes' request timeout changed in the stack file: the preview updates the gateway's
    two steps and nothing else; `up` restarts the gateway; every engine keeps its process."""
    original = LAB_CONFIG.read_text()
    assert original.count("    image: gateway-lab\n") == 1
    engine_pids = {(n.name, u): unit_prop(n, u, "MainPID") for n, units in ENGINES.items() for u in units}
    assert all(pid != "0" for pid in engine_pids.values()), engine_pids
    gateway_pid = unit_prop(NODE1, GATEWAY, "MainPID")
    try:
        LAB_CONFIG.write_text(original.replace("    image: gateway-lab\n",
                                               "    image: gateway-lab\n    request_timeout_s: 601\n"))
        preview = pulumi("preview", "--json")
        assert preview.returncode == 0, preview.stderr[-3000:]
        assert sorted(changes(json.loads(preview.stdout))) == [("update", "gateway-health"),
                                                                ("update", "gateway-install")]
        up = pulumi("up", "--yes", "--skip-preview")
        assert up.returncode == 0, up.stdout[-6000:] + up.stderr[-3000:]
        assert "timeout: 601" in sh(NODE1, "cat /etc/blackwell-serving/gateway/litellm.yaml")
        assert unit_prop(NODE1, GATEWAY, "MainPID") != gateway_pid
        assert {(n.name, u): unit_prop(n, u, "MainPID") for n, units in ENGINES.items() for u in units} == engine_pids
        for model in MODELS:  # and both still answer through it
            with call("/v1/chat/completions", gateway_key, chat(model)) as reply:
                assert json.load(reply)["choices"]
    finally:
        LAB_CONFIG.write_text(original)
    back = pulumi("up", "--yes", "--skip-preview")
    assert back.returncode == 0, back.stdout[-6000:] + back.stderr[-3000:]
    assert {(n.name, u): unit_prop(n, u, "MainPID") for n, units in ENGINES.items() for u in units} == engine_pids
    preview = pulumi("preview", "--json")
    assert changes(json.loads(preview.stdout)) == []


# --------------------------------------------------------------------------------------------
# The real OpenAI client, as the gateway's users run it.


@pytest.fixture(scope="module")
def openai_module():
    try:
        import openai
    except ImportError:
        pytest.fail("the `openai` package is not installed; fix: bash scripts/setup-python.sh (pyproject.toml's "
                    "test extra pins it)")
    return openai


def client(openai_module, key: str):
    return openai_module.OpenAI(base_url=f"http://{NODE1.mgmt_ip}:{PORT}/v1", api_key=key, max_retries=0,
                                timeout=120)


@pytest.mark.parametrize("call_it", ["models", "chat"])
def test_the_openai_client_takes_a_wrong_key_for_an_authentication_error(gateway_key, openai_module, call_it):
    wrong = client(openai_module, "sk-not-the-gateways-key")
    with pytest.raises(openai_module.AuthenticationError) as err:
        if call_it == "models":
            wrong.models.list()
        else:
            wrong.chat.completions.create(model=MODELS[0], max_tokens=4,
                                          messages=[{"role": "user", "content": "Say hello."}])
    assert err.value.status_code == 401
    assert err.value.body["message"] and gateway_key not in str(err.value.body)


def test_the_openai_client_takes_a_missing_key_for_an_authentication_error(gateway_key, openai_module):
    """No Authorization header at all (the client omits it when told to; with no key it would
    refuse to send the request)."""
    anyone = client(openai_module, "unused")
    with pytest.raises(openai_module.AuthenticationError) as err:
        anyone.models.list(extra_headers={"Authorization": openai_module.Omit()})
    assert err.value.status_code == 401 and err.value.body["message"]


def test_the_openai_client_lists_completes_and_streams_with_the_key(gateway_key, openai_module):
    c = client(openai_module, gateway_key)
    assert sorted(m.id for m in c.models.list()) == sorted(MODELS)
    for model in MODELS:
        reply = c.chat.completions.create(model=model, max_tokens=8, temperature=0,
                                          messages=[{"role": "user", "content": "Say hello."}])
        assert reply.choices[0].message.content, reply
    stream = c.chat.completions.create(model=MODELS[1], max_tokens=12, temperature=0, stream=True,
                                       messages=[{"role": "user", "content": "Say hello."}])
    chunks = list(stream)
    assert len(chunks) >= 2
    assert "".join((ch.choices[0].delta.content or "") for ch in chunks if ch.choices).strip()
