"""python -m components.discover [NAME=]HOST... --stack NAME [--out FILE]

Writes a stack file from what the machines show: their host keys (trusted by fingerprint, never
silently), arch, GPUs, memory, the fabric (netdev, RDMA twins, RoCE v2 GID index, addresses,
MTU) and the engines already running there (proposed for retire, or keep). Given an existing
stack file, it shows the unified diff of those parts and writes only with consent (--yes).
"""

from __future__ import annotations

import argparse
import ipaddress
import re
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from components import names
from components.config import ConfigError, load_stack_file
from components.config.load import values_from_stack_file
from components.config.stackfile import parse_yaml
from components.discover import hostkeys
from components.discover.fabric import choose
from components.discover.facts import DiscoveryError
from components.discover.merge import compose, merge_values, unified_diff
from components.discover.nodes import Discovered, assemble, node_name
from components.discover.probe import Target, probe
from components.discover.write import new_stack_file


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m components.discover", description=__doc__.split("\n\n")[0])
    p.add_argument("hosts", nargs="+", metavar="[NAME=]HOST", help="machines to discover (NAME: its name in the "
                                                                   "stack; default: its host name)")
    p.add_argument("--stack", help="the stack's name (the file: stacks/Pulumi.<stack>.yaml)")
    p.add_argument("--out", type=Path, help="the stack file to write (default: stacks/Pulumi.<stack>.yaml)")
    p.add_argument("--user", default="root", help="the login user on the machines (default: root)")
    p.add_argument("--identity", help="private key file to log in with (default: the SSH agent); its path, not "
                                      "its content, goes to the stack")
    p.add_argument("--port", type=int, default=22, help="the machines' SSH port")
    p.add_argument("--accept-host-key", action="append", default=[], metavar="SHA256:FP",
                   help="trust the host key with this fingerprint (repeatable; for scripts)")
    p.add_argument("--fabric-subnet", type=ipaddress.IPv4Network, help="the fabric's subnet, when several fit")
    p.add_argument("--engine-pattern", action="append", default=[], type=re.compile, metavar="REGEX",
                   help="also count a running unit or container whose command line matches as an engine")
    p.add_argument("--yes", action="store_true", help="write an existing stack file's changes without asking")
    args = p.parse_args(argv)
    if not args.stack and not args.out:
        p.error("give --stack NAME (and optionally --out FILE)")
    args.stack = args.stack or args.out.name.removeprefix("Pulumi.").removesuffix(".yaml")
    args.out = args.out or Path("stacks") / f"Pulumi.{args.stack}.yaml"
    return args


def ask(question: str) -> bool:
    """One y/N question on the terminal; no terminal, no consent."""
    if not sys.stdin.isatty():
        return False
    print(question, end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def trusted_keys(targets: list[Target], accepted: set[str]) -> dict[str, str]:
    """host → the host key the operator trusts; every host is asked before any error stops it."""
    trusted, problems = {}, []
    with ThreadPoolExecutor(max_workers=8) as pool:
        scanned = list(pool.map(lambda t: hostkeys.scan(t.host, t.port), targets))
    for t, keys in zip(targets, scanned):
        for key in keys:
            print(f"{t.host}: {key.split()[0]} {hostkeys.fingerprint(key)}", file=sys.stderr)
        try:
            trusted[t.host] = hostkeys.trusted_key(t.host, keys, accepted, ask if sys.stdin.isatty() else None)
        except DiscoveryError as exc:
            problems.append(str(exc))
    if problems:
        raise DiscoveryError("\n".join(problems))
    return trusted


def discover(args: argparse.Namespace) -> Discovered:
    targets = [Target.parse(h, args.port) for h in args.hosts]
    keys = trusted_keys(targets, {hostkeys.normalized(fp) for fp in args.accept_host_key})
    private_key = Path(args.identity).expanduser().read_text() if args.identity else None
    with ThreadPoolExecutor(max_workers=8) as pool:     # one SSH session per machine, at once
        machines = list(pool.map(lambda t: probe(t, args.user, keys[t.host], private_key), targets))
    fabric = choose(machines, args.fabric_subnet)
    names: list[str] = []
    for t, m in zip(targets, machines):
        names.append(node_name(t.name, m, set(names)))
    return assemble([(n, m, keys[t.host]) for n, m, t in zip(names, machines, targets)], args.user, args.port,
                    args.identity, fabric, args.engine_pattern)


def checked(text: str, out: Path) -> None:
    """The text loads with the config loader, as the engine will read it; else the loader's message."""
    with tempfile.TemporaryDirectory(prefix=names.temp_prefix("discover")) as tmp:
        path = Path(tmp) / out.name
        path.write_text(text)
        try:
            load_stack_file(path)
        except ConfigError as exc:
            raise DiscoveryError(str(exc).replace(str(path), str(out))) from None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        parts = discover(args)
        for item in [*parts.nodes, *([parts.fabric] if parts.fabric else [])]:
            print("\n".join(f"# {line}" for line in item.comments), file=sys.stderr)
        if args.out.exists():
            old = args.out.read_text()
            text = compose(old, merge_values(values_from_stack_file(args.out), parts))
        else:
            old, text = None, new_stack_file(args.stack, [t.partition("=")[2] or t for t in args.hosts], parts)
        checked(text, args.out)
    except (DiscoveryError, ConfigError, OSError) as exc:
        print(f"discover: {exc}", file=sys.stderr)
        return 1
    if old is None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
        print(f"wrote {args.out}; next: `pulumi stack init {args.stack}` if new, then `pulumi preview --stack {args.stack}`")
        return 0
    diff = unified_diff(old, text, str(args.out))
    if not diff or parse_yaml(old) == parse_yaml(text):    # the same values: comments are not worth a rewrite
        print(f"{args.out}: already says what the machines show; nothing to write")
        return 0
    print(diff, end="")
    if not (args.yes or ask(f"write these changes to {args.out}? [y/N] ")):
        print(f"{args.out}: not written; fix: answer y on a terminal, or pass --yes", file=sys.stderr)
        return 3
    args.out.write_text(text)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
