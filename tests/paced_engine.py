"""A stand-in engine on 127.0.0.1 that streams server-sent events as vLLM and SGLang do, at a
fixed pace: the benchmark program's tests check what it asks and reports against it, and
bench/benchmark_program_bench.py how close its figures come to the pace."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator

TTFT_S = 0.05      # the server waits this long before the first token
GAP_S = 0.01       # and this long between tokens: 100 tok/s single-stream


class FakeEngine(BaseHTTPRequestHandler):
    key = "test-key"
    requests: list[dict] = []
    usage = True

    def log_message(self, *args):  # quiet
        pass

    def do_POST(self):
        if self.headers.get("Authorization") != f"Bearer {self.key}":
            self.send_response(401)
            self.end_headers()
            self.wfile.write(b'{"error": "bad key"}')
            return
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(body)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        n = body["max_tokens"]
        time.sleep(TTFT_S)
        for i in range(n):
            if i:
                time.sleep(GAP_S)
            chunk = {"choices": [{"index": 0, "delta": {"content": f"w{i} "}}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
        if self.usage:
            self.wfile.write(f"data: {json.dumps({'choices': [], 'usage': {'completion_tokens': n}})}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


@contextlib.contextmanager
def paced_engine() -> Iterator[str]:
    """The stand-in's base URL while it serves (its request log and usage flag reset)."""
    FakeEngine.requests = []
    FakeEngine.usage = True
    srv = ThreadingHTTPServer(("127.0.0.1", 0), FakeEngine)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()
