"""The benchmark after the health gate, run on the deployment's head against its real endpoint
(loopback): single-stream decode tok/s and time to first token over a fixed prompt set, then
the aggregate tok/s with CONCURRENCY requests in flight. Python's standard library only: it runs
with the node's python3, the venv's, or the engine image's.

Argv: BASE_URL MODEL PROMPTS PROMPT_SET_JSON MAX_TOKENS CONCURRENCY TIMEOUT_S MIN_DECODE_TOK_S|- [KEY_FILE KEY_VAR]
PROMPTS: how many requests the single-stream phase sends, taken in turn from PROMPT_SET_JSON (a
JSON list; empty: the built-in PROMPTS below). The API key, when the
deployment has one, is read from its root-only env file (KEY_VAR=value), never from argv.

Every request streams (server-sent events) with the end of text ignored, so each one decodes
MAX_TOKENS tokens. Per request: time to first token = first content chunk - send; decode tok/s =
(tokens - 1) / (last chunk - first chunk), tokens from the usage the engine reports (else the
content chunks counted). A stream whose chunks reached us in bursts (this process was not
scheduled while the engine sent them, on a loaded machine) has no decode time to read: then
every request's whole time counts instead (prefill included: a lower bound, said in the log),
never a burst's near-zero span. Single-stream figures sum the decode tokens and times of the prompts
run one after another (TTFT: the median); aggregate = every completion token of the concurrent
phase / its wall time. Prints key=value lines on stdout; progress on stderr. Below the floor:
the figures on stderr and exit 3."""

from __future__ import annotations

import json
import statistics
import sys
import threading
import time
import urllib.error
import urllib.request

# The fixed prompt set: short, varied, answerable at any length (the end of text is ignored).
PROMPTS = [
    "Explain how a transformer language model generates text, one token at a time.",
    "Write a short story about a lighthouse keeper who finds a message in a bottle.",
    "List the planets of the solar system and describe each one in a sentence.",
    "Describe how to make a cup of tea, step by step, for someone who has never made one.",
    "Summarise the causes and consequences of the industrial revolution.",
    "Write a Python function that checks whether a string is a palindrome, and explain it.",
    "Compare trains and aeroplanes for a 500 km journey: time, cost, comfort and emissions.",
    "Describe the water cycle to a ten-year-old.",
]


def prompt_set(count: int, given: str) -> list[str]:
    """`count` prompts, in turn from the given set (a JSON list) or the built-in one."""
    pool = [str(p) for p in json.loads(given)] or PROMPTS
    return [pool[i % len(pool)] for i in range(count)]


def read_key(path: str, var: str) -> str:
    with open(path) as f:
        for line in f:
            if line.startswith(var + "="):
                return line[len(var) + 1:].rstrip("\n")
    raise SystemExit(f"{var} is not in {path}")


# Chunks read less than this apart arrived together (one read of the socket's buffer).
BURST_S = 0.0002


class Result:
    __slots__ = ("sent", "first", "last", "tokens", "chunks", "arrivals")

    def __init__(self, sent: float):
        self.sent, self.first, self.last, self.tokens, self.chunks = sent, None, None, 0, 0
        self.arrivals = 0   # chunks that came apart from the one before them

    @property
    def paced(self) -> bool:
        """Its chunks came one by one (at least half of them apart): their span is the decode time."""
        return self.arrivals * 2 >= self.chunks

    @property
    def ttft_s(self) -> float:
        return self.first - self.sent

    @property
    def decode_s(self) -> float:
        return self.last - self.first


def stream_one(base: str, model: str, prompt: str, max_tokens: int, key: str | None, timeout_s: float) -> Result:
    """One streamed chat completion; the times of its first and last content chunks."""
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": prompt}],
                       "max_tokens": max_tokens, "temperature": 0, "stream": True, "ignore_eos": True,
                       "stream_options": {"include_usage": True}}).encode()
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    req = urllib.request.Request(base + "/v1/chat/completions", data=body, headers=headers, method="POST")
    res = Result(time.monotonic())
    usage = None
    with urllib.request.urlopen(req, timeout=timeout_s) as resp:
        for raw in resp:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                break
            event = json.loads(data)
            if event.get("usage"):
                usage = event["usage"]
            for choice in event.get("choices") or []:
                delta = choice.get("delta") or {}
                if delta.get("content") or delta.get("reasoning_content"):
                    now = time.monotonic()
                    if res.last is None or now - res.last > BURST_S:
                        res.arrivals += 1
                    res.first = now if res.first is None else res.first
                    res.last = now
                    res.chunks += 1
    res.tokens = int(usage.get("completion_tokens") or 0) if usage else 0
    res.tokens = res.tokens or res.chunks
    if res.first is None:
        raise RuntimeError("the stream carried no content")
    return res


def single_stream(results: list[Result]) -> tuple[float, float, bool]:
    """(decode tok/s, median TTFT in ms, whether the decode time is the streams' own) of requests
    run one at a time; when any stream came in bursts, every request's whole time instead."""
    paced = all(r.paced for r in results)
    if paced:
        tokens = sum(max(r.tokens - 1, 0) for r in results)
        seconds = sum(r.decode_s for r in results)
    else:
        tokens = sum(r.tokens for r in results)
        seconds = sum(r.last - r.sent for r in results)
    decode = tokens / seconds if seconds > 0 else 0.0
    return decode, statistics.median(r.ttft_s for r in results) * 1000, paced


def aggregate(results: list[Result], wall_s: float) -> float:
    return sum(r.tokens for r in results) / wall_s if wall_s > 0 else 0.0


def concurrent(base: str, model: str, prompts: list[str], max_tokens: int, key: str | None, concurrency: int,
               timeout_s: float) -> tuple[list[Result], float]:
    """max(len(prompts), concurrency) requests through `concurrency` workers, started together."""
    jobs = [prompts[i % len(prompts)] for i in range(max(len(prompts), concurrency))]
    results: list[Result] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(concurrency)

    def worker() -> None:
        start.wait()
        while True:
            with lock:
                if not jobs or errors:
                    return
                prompt = jobs.pop()
            try:
                r = stream_one(base, model, prompt, max_tokens, key, timeout_s)
            except BaseException as exc:  # reported once every worker has stopped
                with lock:
                    errors.append(exc)
                return
            with lock:
                results.append(r)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(concurrency)]
    began = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout_s)
    wall = time.monotonic() - began
    if errors:
        raise errors[0]
    if any(t.is_alive() for t in threads):
        raise TimeoutError(f"the concurrent requests did not end in {timeout_s:.0f} s")
    return results, wall


def log(message: str) -> None:
    print(f"[blackwell benchmark] {message}", file=sys.stderr, flush=True)


def main(argv: list[str]) -> int:
    base, model, count, given, max_tokens, concurrency, timeout_s, floor = argv[:8]
    floor = None if floor == "-" else float(floor)
    key = read_key(argv[8], argv[9]) if len(argv) > 9 else None
    max_tokens, concurrency, timeout_s = int(max_tokens), int(concurrency), float(timeout_s)
    prompts = prompt_set(int(count), given)
    deadline = time.monotonic() + timeout_s
    try:
        stream_one(base, model, "Say hello.", 4, key, timeout_s)  # warm-up, not counted
        log(f"single stream: {len(prompts)} prompts, {max_tokens} tokens each")
        singles = [stream_one(base, model, p, max_tokens, key, max(1.0, deadline - time.monotonic()))
                   for p in prompts]
        decode, ttft_ms, paced = single_stream(singles)
        if not paced:
            log("single stream: the chunks reached us in bursts (a loaded machine); decode tok/s is taken "
                "over each request's whole time, prefill included: a lower bound")
        log(f"single stream: {decode:.1f} tok/s decode, {ttft_ms:.0f} ms to the first token; "
            f"now {concurrency} in flight")
        results, wall = concurrent(base, model, prompts, max_tokens, key, concurrency,
                                   max(1.0, deadline - time.monotonic()))
    except urllib.error.HTTPError as exc:
        log(f"the endpoint answered {exc.code}: {exc.read()[:300].decode('utf-8', 'replace')}")
        return 1
    except (OSError, ValueError, RuntimeError) as exc:
        log(f"the benchmark failed: {exc.__class__.__name__}: {exc}")
        return 1
    total = aggregate(results, wall)
    figures = {"decode-tok-s": f"{decode:.2f}", "ttft-ms": f"{ttft_ms:.1f}", "aggregate-tok-s": f"{total:.2f}",
               "concurrency": str(concurrency), "prompts": str(len(prompts)), "max-tokens": str(max_tokens),
               "requests": str(len(singles) + len(results))}
    for k, v in figures.items():
        print(f"{k}={v}")
    summary = (f"decode {decode:.1f} tok/s single-stream, first token in {ttft_ms:.0f} ms, "
               f"{total:.1f} tok/s aggregate at concurrency {concurrency}")
    if floor is not None and decode < floor:
        log(f"{summary}: below the floor of {floor:g} tok/s (benchmark.min_decode_tok_s)")
        return 3
    log(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
