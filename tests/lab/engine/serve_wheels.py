"""Serve a directory over HTTP on one address for the length of a `docker build` (prepare.sh
step_image): the engine image's pip reads its wheels from here (--find-links), so that 3 GB of
wheels are neither sent as build context nor copied into a layer. Prints the port it bound
(chosen by the system), then serves until killed; requests are not logged.

Usage: serve_wheels.py DIRECTORY ADDRESS
"""

from __future__ import annotations

import functools
import sys
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def main() -> None:
    directory, address = sys.argv[1], sys.argv[2]
    server = ThreadingHTTPServer((address, 0), functools.partial(QuietHandler, directory=directory))
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
