"""One clear block per failed step, and nothing else around it.

- The block itself is the step's script's (templates/scripts/_failure.sh.j2): when a step's script
  ends with a non-zero status it prints, on stdout, `FAILED: <the step's sentence>` and under it
  the node, the exit status and what it means, its last words, the last lines of its log and the
  fix where it is known. pulumi-command ends its error message with the step's output, so `pulumi up` shows it
  there, once.
- The program leaves quietly when the engine stops it (quiet_when_the_engine_stops): after a
  step failed, the engine shuts down its resource monitor, the program's pending registrations
  fail ("Resource monitor has terminated"), and the language host interrupts the program with
  SIGINT; Python's default handler would print a KeyboardInterrupt traceback under the stack.
- The outer tools condense pulumi's output around it: `python -m components.todo --up` shows the
  status under the item and the block once in its summary (blocks, condense, status_line);
  scripts/run-lab.sh pipes `pulumi up` through `python -m components.steps.failure --filter`, which
  leaves out the quoted command lines of the failed steps' errors.
"""

from __future__ import annotations

import os
import re
import signal
import sys

MARKER = "FAILED: "
# The language host's "the program failed and said why" status (no message of its own).
BAIL_EXIT_CODE = 32


def quiet_when_the_engine_stops() -> None:
    """The program ends at once and without a word when the engine has stopped it: by then the
    engine has said why, and what the program still awaited can only fail. Two ways it learns:
    - SIGINT: the language host sends it when the engine cancels the program (a step failed, the
      run was cancelled). Python's default raises KeyboardInterrupt wherever the program is and
      prints its traceback. (The CLI starts its plugins in a process group of their own, so a
      Ctrl-C at the terminal reaches the CLI, which decides.)
    - an RPC to the resource monitor answered UNAVAILABLE: the monitor has shut down. The SDK
      turns that into RunError("Resource monitor has terminated, shutting down"), which its
      runner logs as an error of the stack when it arrives before the SIGINT. The SDK offers no
      setting for this; its one converter of gRPC errors (pulumi.runtime.settings) is wrapped
      for that status alone. The program's callbacks (the rollback's hooks) are shut down by the
      SDK once an RPC has failed, so leaving then loses nothing."""
    import grpc
    from pulumi.runtime import settings

    def leave(*_) -> None:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(BAIL_EXIT_CODE)

    signal.signal(signal.SIGINT, leave)
    convert = settings.grpc_error_to_exception
    if getattr(convert, "quiet", False):
        return

    def grpc_error_to_exception(exn: grpc.RpcError) -> Exception:
        if exn.code() == grpc.StatusCode.UNAVAILABLE:
            leave()
        return convert(exn)

    grpc_error_to_exception.quiet = True  # type: ignore[attr-defined]
    settings.grpc_error_to_exception = grpc_error_to_exception


_INDENT = re.compile(r"^(\s*)")


def blocks(text: str) -> list[str]:
    """The failure blocks in a run's output (pulumi's, or an engine error message), each once, in
    order: a `FAILED: ` line and the lines under it that are indented deeper than it."""
    lines = text.splitlines()
    found: list[str] = []
    i = 0
    while i < len(lines):
        head = lines[i]
        at = head.find(MARKER)
        if at < 0 or head[:at].strip():
            i += 1
            continue
        base = len(head) - len(head.lstrip())
        body = [head.strip()]
        i += 1
        while i < len(lines) and lines[i].strip() and len(_INDENT.match(lines[i]).group(1)) > base:
            body.append(lines[i][base:].rstrip())
            i += 1
        block = "\n".join(body)
        if block not in found:
            found.append(block)
    return found


# pulumi-command's error: "<status>: running "<the command line, Go-quoted>":" then the step's output.
_RUNNING = re.compile(r': running "(?:[^"\\]|\\.)*":?\s*$')
OTHER_LINES = 10


def condense(message: str) -> list[str]:
    """An engine error message, short: a step's error is its failure blocks when its script
    printed any, else its first line without the quoted command line and the last lines of the
    step's output; any other message (a rollback's report, a config error) stays whole."""
    if not step_error(message):
        return [ln.rstrip() for ln in message.strip().splitlines() if ln.strip()]
    found = blocks(message)
    if found:
        return "\n\n".join(found).splitlines()
    lines = [ln.strip() for ln in message.strip().splitlines() if ln.strip()]
    return [_RUNNING.sub("", lines[0]).strip(), *lines[1:][-OTHER_LINES:]]


def step_error(message: str) -> bool:
    """Whether an engine error is a step's: pulumi-command's "<status>: running "<line>":"."""
    first = message.strip().split("\n", 1)[0]
    return bool(_RUNNING.search(first))


def status_line(message: str) -> str | None:
    """The status of the first block in message ("exit 127 (a command was not found: rsync)")."""
    for block in blocks(message):
        for line in block.splitlines()[1:]:
            if line.strip().startswith("status:"):
                return line.strip()[len("status:"):].strip()
    return None


def without_command_line(line: str) -> str:
    """A line of pulumi's output without the quoted command line of a failed step's error."""
    return _RUNNING.sub("", line.rstrip("\n"))


def main(argv: list[str] | None = None) -> int:
    """`python -m components.steps.failure`: print the failure blocks of a run's output read on stdin
    (nothing when there are none). With --filter: pass the output on as it comes, each failed
    step's error without its quoted command line (scripts/run-lab.sh pipes `pulumi up` through
    it)."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--filter"]:
        for line in sys.stdin:
            print(without_command_line(line), flush=True)
        return 0
    found = blocks(sys.stdin.read())
    if found:
        print("\n\n".join(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
