"""The fabric (RoCE/IB) network: the environment that NCCL, GLOO, UCX, Ray and the engines need
to use it. A wrong interface, a link-local or a Wi-Fi address is the classic multi-node hang,
so every variable is derived here from the one fabric config, never written by hand."""

from __future__ import annotations

from .config.schema import FabricSpec, NodeSpec


def fabric_environment(fabric: FabricSpec | None, node: NodeSpec) -> dict[str, str]:
    if fabric is None:
        return {}
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
