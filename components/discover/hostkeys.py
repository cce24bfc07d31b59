"""A machine's SSH host key, trusted only when the operator says so: its SHA256 fingerprint is
shown and either matches an `--accept-host-key` or is confirmed once on a terminal. The key
trusted is the one pinned for the probe and written to the stack (nodes[].ssh.host_key)."""

from __future__ import annotations

import base64
import hashlib
import subprocess
from collections.abc import Callable

from components.discover.facts import DiscoveryError

# The key types the stacks pin, the preferred first (the schema: ed25519, ECDSA, RSA).
KEY_TYPES = ("ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521", "ssh-rsa")


def fingerprint(key: str) -> str:
    """OpenSSH's SHA256 fingerprint of a public key ('TYPE BASE64'): SHA256:<base64, no padding>."""
    blob = base64.b64decode(key.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def normalized(fp: str) -> str:
    fp = fp.strip()
    return fp if fp.startswith("SHA256:") else f"SHA256:{fp}"


def parse_keyscan(text: str) -> list[str]:
    """'TYPE BASE64' keys from ssh-keyscan's output, the preferred type first."""
    keys = [" ".join(line.split()[1:3]) for line in text.splitlines()
            if line and not line.startswith("#") and len(line.split()) >= 3 and line.split()[1] in KEY_TYPES]
    return sorted(dict.fromkeys(keys), key=lambda k: KEY_TYPES.index(k.split()[0]))


def scan(host: str, port: int, timeout_s: int = 10) -> list[str]:
    done = subprocess.run(["ssh-keyscan", "-T", str(timeout_s), "-p", str(port), "-t", "ed25519,ecdsa,rsa", host],
                          capture_output=True, text=True, timeout=timeout_s * 4 + 10)
    keys = parse_keyscan(done.stdout)
    if not keys:
        raise DiscoveryError(f"{host}: no SSH host key answered on port {port} "
                             f"({done.stderr.strip()[-300:] or 'no answer'}); fix: check that the machine is up and "
                             f"sshd listens there (--port for another port)")
    return keys


def trusted_key(host: str, keys: list[str], accepted: set[str], ask: Callable[[str], bool] | None) -> str:
    """The key of `keys` the operator trusts: one whose fingerprint is accepted, else the
    preferred one if `ask` (a terminal) confirms it; otherwise an error naming the flag to pass."""
    for key in keys:
        if fingerprint(key) in accepted:
            return key
    key = keys[0]
    shown = f"{host}: host key {key.split()[0]} {fingerprint(key)}"
    if ask is not None and ask(f"{shown}\n  trust it (compare with `ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub` "
                               f"on the machine's console)? [y/N] "):
        return key
    raise DiscoveryError(f"{shown} is not trusted; fix: compare it with `ssh-keygen -lf "
                         f"/etc/ssh/ssh_host_ed25519_key.pub` on the machine's console, then pass "
                         f"--accept-host-key {fingerprint(key)} (or answer y on a terminal)")
