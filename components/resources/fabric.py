"""The fabric (RoCE/IB) network: the environment that NCCL, GLOO, UCX, Ray and the engines need
to use it. A wrong interface, a link-local or a Wi-Fi address is the classic multi-node hang,
so every variable is derived here from the one fabric config, never written by hand. A node
may name its own netdev, HCAs or GID index (nodes[].fabric, e.g. after re-cabling): the
stack's fabric with those keys replaced is that node's fabric (node_fabric)."""

from __future__ import annotations

from components.config.schema import FabricSpec, NodeSpec


def node_fabric(fabric: FabricSpec, node: NodeSpec) -> FabricSpec:
    """The fabric as `node` sees it: the stack's, with the keys the node overrides."""
    if node.fabric is None:
        return fabric
    return fabric.model_copy(update=node.fabric.model_dump(exclude_none=True))


def fabric_environment(fabric: FabricSpec | None, node: NodeSpec) -> dict[str, str]:
    if fabric is None:
        return {}
    fabric = node_fabric(fabric, node)
    env = {
        "NCCL_SOCKET_IFNAME": fabric.netdev,
        "GLOO_SOCKET_IFNAME": fabric.netdev,
        "TP_SOCKET_IFNAME": fabric.netdev,
        "UCX_NET_DEVICES": fabric.netdev,
        "NCCL_IB_GID_INDEX": str(fabric.gid_index),
    }
    if fabric.hcas:
        env["NCCL_IB_HCA"] = ",".join(fabric.hcas)
    if fabric.disable_ib:
        env["NCCL_IB_DISABLE"] = "1"
    if node.fabric_address is not None:
        ip = str(node.fabric_address)
        env["VLLM_HOST_IP"] = ip
        env["SGLANG_HOST_IP"] = ip
        env["RAY_NODE_IP_ADDRESS"] = ip
    return env
