"""The lab's topology for the tests, read from tests/lab/lab.env (the one source of truth).

    from tests.lab import topology as lab      # or: sys.path.insert(0, "tests/lab"); import topology
    for node in lab.nodes():                   # the nodes `lab up` started (default count otherwise)
        node.name, node.mgmt_ip, node.fabric_ip, node.host_public_key, node.ssh_argv("true")
    NODE1, NODE2 = lab.nodes(2)                # this run's pair (BWS_LAB_PAIR)

The nodes come in pairs, each a stand-in for a Spark pair with its own foreign services (glm on
its first node, embeddings on its second). A test run works on one pair, BWS_LAB_PAIR: 1 (the
default) is nodes 1 and 2, where the operator's `lab` stack lives; 2 is nodes 3 and 4, where
the tests that need nothing of the `lab` stack run beside those on pair 1 (scripts/test.sh).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

LAB_DIR = Path(__file__).resolve().parent
REPO_ROOT = LAB_DIR.parent.parent


def _read_env(path: Path) -> dict[str, str]:
    env = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            env[key] = value
    return env


ENV = _read_env(LAB_DIR / "lab.env")

NODE_PREFIX = ENV["LAB_NODE_PREFIX"]
NODES_DEFAULT = int(ENV["LAB_NODES_DEFAULT"])
NODES_MAX = int(ENV["LAB_NODES_MAX"])
MGMT_NET, MGMT_SUBNET, MGMT_GATEWAY = ENV["LAB_MGMT_NET"], ENV["LAB_MGMT_SUBNET"], ENV["LAB_MGMT_GATEWAY"]
FABRIC_NET, FABRIC_SUBNET, FABRIC_GATEWAY = (
    ENV["LAB_FABRIC_NET"], ENV["LAB_FABRIC_SUBNET"], ENV["LAB_FABRIC_GATEWAY"])
MGMT_IFACE, FABRIC_IFACE = ENV["LAB_MGMT_IFACE"], ENV["LAB_FABRIC_IFACE"]
REGISTRY = ENV["LAB_REGISTRY"]
SSH_USER = ENV["LAB_SSH_USER"]
SSH_KEY = REPO_ROOT / ENV["LAB_SSH_KEY"]
KNOWN_HOSTS = REPO_ROOT / ENV["LAB_KNOWN_HOSTS"]
SSH_CONFIG = REPO_ROOT / ENV["LAB_SSH_CONFIG"]
HOSTKEYS_DIR = REPO_ROOT / ENV["LAB_HOSTKEYS_DIR"]
STATE_DIR = REPO_ROOT / ENV["LAB_STATE_DIR"]
NODE_CA_BUNDLE = ENV["LAB_NODE_CA_BUNDLE"]
CACHE_DIR = Path(os.environ.get("BLACKWELL_CACHE", "/var/cache/blackwell-serving")) / "lab"
# The lab's PostgreSQL (tests/lab/postgres.sh): on the mgmt gateway; the role's password in libpq's
# password file (PGPASSFILE), never in a URL.
POSTGRES_HOST, POSTGRES_PORT = MGMT_GATEWAY, int(ENV["LAB_POSTGRES_PORT"])
POSTGRES_USER, POSTGRES_DB = ENV["LAB_POSTGRES_USER"], ENV["LAB_POSTGRES_DB"]
POSTGRES_PASSFILE = REPO_ROOT / ENV["LAB_POSTGRES_PASSFILE"]


def postgres_url(database: str = POSTGRES_DB) -> str:
    """A Pulumi backend URL of a database on the lab's PostgreSQL (no password: POSTGRES_PASSFILE;
    no TLS: the management network is the lab's own bridge)."""
    return f"postgres://{POSTGRES_USER}@{POSTGRES_HOST}:{POSTGRES_PORT}/{database}?sslmode=disable"


# The foreign services of every pair: GLM_NODE and EMBEDDINGS_NODE are places within a pair (1, 2).
GLM_NODE, GLM_UNIT, GLM_PORT = int(ENV["LAB_GLM_NODE"]), ENV["LAB_GLM_UNIT"], int(ENV["LAB_GLM_PORT"])
EMBEDDINGS_NODE, EMBEDDINGS_UNIT, EMBEDDINGS_PORT = (
    int(ENV["LAB_EMBEDDINGS_NODE"]), ENV["LAB_EMBEDDINGS_UNIT"], int(ENV["LAB_EMBEDDINGS_PORT"]))


@dataclass(frozen=True)
class Node:
    index: int  # 1-based

    @property
    def name(self) -> str:
        return f"{NODE_PREFIX}{self.index}"

    @property
    def mgmt_ip(self) -> str:
        return f"{ENV['LAB_MGMT_IP_PREFIX']}{self.index}"

    @property
    def fabric_ip(self) -> str:
        return f"{ENV['LAB_FABRIC_IP_PREFIX']}{self.index}"

    @property
    def host_key_path(self) -> Path:
        return HOSTKEYS_DIR / self.name / "ssh_host_ed25519_key.pub"

    @property
    def host_public_key(self) -> str:
        """'ssh-ed25519 AAAA...' (the committed lab-only host key, without its comment)."""
        return " ".join(self.host_key_path.read_text().split()[:2])

    def ssh_argv(self, *command: str) -> list[str]:
        """argv for running a command on the node as root over mgmt, host key pinned."""
        return ["ssh", "-i", str(SSH_KEY), "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
                "-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={KNOWN_HOSTS}",
                "-o", "ConnectTimeout=5", f"{SSH_USER}@{self.mgmt_ip}", *command]


def pulumi_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The engine's environment for the `lab` stack: its fixed, public passphrase (lab.env)
    instead of the clone's passphrase file."""
    source = os.environ if base is None else base
    env = {k: v for k, v in source.items() if k != "PULUMI_CONFIG_PASSPHRASE_FILE"}
    return {**env, "PULUMI_CONFIG_PASSPHRASE": ENV["LAB_PULUMI_PASSPHRASE"]}


def node_count() -> int:
    """How many nodes the last `lab up` started (the default when it has not run)."""
    try:
        return int((STATE_DIR / "node-count").read_text())
    except (OSError, ValueError):
        return NODES_DEFAULT


PAIR_SIZE = int(ENV["LAB_PAIR_SIZE"])


def pair() -> int:
    """This run's pair of nodes (BWS_LAB_PAIR, 1 when unset)."""
    raw = os.environ.get("BWS_LAB_PAIR", "1")
    pairs = NODES_MAX // PAIR_SIZE
    if not raw.isdigit() or not 1 <= int(raw) <= pairs:
        raise ValueError(f"BWS_LAB_PAIR={raw!r}; fix: 1..{pairs} (tests/lab/lab.env: LAB_NODES_MAX={NODES_MAX})")
    return int(raw)


def every_node() -> list[Node]:
    """Every node the lab can run (LAB_NODES_MAX), started or not."""
    return [Node(i) for i in range(1, NODES_MAX + 1)]


def node_at(mgmt_ip: str) -> Node:
    """The lab node at a management address (a stack's `host`)."""
    [node] = [n for n in every_node() if n.mgmt_ip == mgmt_ip]
    return node


def nodes(count: int | None = None) -> list[Node]:
    """`count` nodes from the first of this run's pair (nodes(2): the pair); without a count,
    every node `lab up` started, from node 1."""
    if count is None:
        return [Node(i) for i in range(1, node_count() + 1)]
    first = (pair() - 1) * PAIR_SIZE + 1
    return [Node(i) for i in range(first, first + count)]


if __name__ == "__main__":
    for n in nodes():
        print(n.name, n.mgmt_ip, n.fabric_ip, n.host_public_key)
