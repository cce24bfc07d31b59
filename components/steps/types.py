"""The type tokens of our components. A token is part of the URN of every resource under it in
an operator's state, so it is a constant here, never derived from the module a class lives in:
moving or renaming a Python class changes nothing in a state. Changing a token (or a resource
name) is a state change: it must come with `aliases=[pulumi.Alias(type_=OLD)]` on the resource,
or every step under it would be deleted and created again. tests/unit/test_state_contract.py
pins the URNs of every shipped stack."""

SERVING_STACK = "blackwell:stack:ServingStack"
NODE = "blackwell:node:Node"
KEPT_SERVICE = "blackwell:services:KeptService"
RETIRED_SERVICE = "blackwell:services:RetiredService"
CONTAINER_IMAGE = "blackwell:image:ContainerImage"
IMAGE_SYNC = "blackwell:image:ImageSync"
LAYER_REGISTRY = "blackwell:image:LayerRegistry"
MODEL_CACHE = "blackwell:model:ModelCache"
ENGINE_PROBE = "blackwell:preflight:EngineProbe"
FABRIC_CHECK = "blackwell:preflight:FabricCheck"
FABRIC_BANDWIDTH = "blackwell:preflight:FabricBandwidth"
RAY_CLUSTER = "blackwell:cluster:RayCluster"
SYSTEMD_UNIT = "blackwell:unit:SystemdUnit"
DEPLOYMENT = "blackwell:deployment:Deployment"
WATCHDOG = "blackwell:deployment:Watchdog"
RANK_WATCH = "blackwell:deployment:RankWatch"
NODE_RESOURCES = "blackwell:preflight:NodeResources"
CONTAINER_GPUS = "blackwell:preflight:ContainerGpus"
VENV_ENGINE = "blackwell:venv:VenvEngine"
GATEWAY = "blackwell:gateway:Gateway"
MONITORING = "blackwell:monitoring:Monitoring"
