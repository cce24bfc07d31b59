"""A stand-in for the Hugging Face Hub, for lab tests only: the Hub is not reachable from here.

It serves one directory as one model repo at one commit, over the parts of the Hub's HTTP API
that `huggingface_hub.snapshot_download` uses with a pinned commit (the tree listing, then a HEAD
and a GET of each file under /resolve/), and records the Authorization header of every request,
so a test can show that the token reached the downloader. The client that talks to it is the
real huggingface_hub, pointed here by HF_ENDPOINT (a model's `source.endpoint`). It binds the
lab's host address only (198.18.0.0/15), never a public one.
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit


class HubStandIn:
    def __init__(self, repo: str, commit: str, directory: Path, host: str, port: int = 0):
        self.repo, self.commit, self.directory = repo, commit, directory
        self.requests: list[tuple[str, str, str]] = []   # (method, path, Authorization)
        self.files = {p.relative_to(directory).as_posix(): p for p in sorted(directory.rglob("*")) if p.is_file()}
        self._server = ThreadingHTTPServer((host, port), self._handler())
        self.url = f"http://{host}:{self._server.server_address[1]}"

    def __enter__(self) -> "HubStandIn":
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _tree(self) -> list[dict]:
        return [{"type": "file", "path": name, "size": path.stat().st_size, "oid": _git_blob_id(path)}
                for name, path in self.files.items()]

    def _handler(self):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet: the test reports what matters
                pass

            def _route(self, with_body: bool) -> None:
                path = unquote(urlsplit(self.path).path)
                hub.requests.append((self.command, path, self.headers.get("Authorization", "")))
                tree = f"/api/models/{hub.repo}/tree/{hub.commit}"
                resolve = f"/{hub.repo}/resolve/{hub.commit}/"
                if path.rstrip("/") == tree:
                    return self._send(json.dumps(hub._tree()).encode(), "application/json", with_body)
                if path.startswith(resolve) and path[len(resolve):] in hub.files:
                    file = hub.files[path[len(resolve):]]
                    return self._send(file.read_bytes(), "application/octet-stream", with_body,
                                      etag=_git_blob_id(file))
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def _send(self, body: bytes, content_type: str, with_body: bool, etag: str | None = None) -> None:
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("X-Repo-Commit", hub.commit)
                if etag:
                    self.send_header("ETag", f'"{etag}"')
                self.end_headers()
                if with_body:
                    self.wfile.write(body)

            def do_GET(self):
                self._route(with_body=True)

            def do_HEAD(self):
                self._route(with_body=False)

        return Handler


def _git_blob_id(path: Path) -> str:
    """The id git gives the file's content (the Hub's `oid` of a non-LFS file)."""
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
