"""`docker run` arguments shared by every container we run under systemd (engines, Ray),
as argv lists: the unit template quotes each one."""

from __future__ import annotations

from components.config.schema import DockerRun, FabricSpec


def file_mount(source: str, target: str) -> list[str]:
    """A host file bound read-only into the container. `--mount`, not `-v`: where the file is
    missing (between an env step's delete and create, a restart in that window), `-v` would make
    a directory at its path that every later write of the file then fails on; `--mount` refuses
    to start the container, and systemd's next try finds the file."""
    return ["--mount", f"type=bind,source={source},target={target},readonly"]


def docker_args(run: DockerRun, fabric: FabricSpec | None, env_names: list[str],
                mounts: list[str], files: list[tuple[str, str]] = ()) -> list[str]:
    """Host network (the fabric must be visible), host IPC (NCCL shared memory), GPUs, a large
    /dev/shm, unlimited memlock and the RDMA devices, then `-e NAME` for each variable the unit
    sets: values come from the unit's environment, never from the command line."""
    args = ["--network", "host"]
    if run.ipc_host:
        args += ["--ipc", "host"]
    if run.gpus:
        args += ["--gpus", "all"]
    if run.init:
        args.append("--init")
    args += ["--shm-size", run.shm_size]
    if run.memlock_unlimited:
        args += ["--ulimit", "memlock=-1:-1"]
    if fabric is not None and fabric.infiniband_device:
        args += ["--device", "/dev/infiniband", "--cap-add", "IPC_LOCK"]
    for mount in [*mounts, *run.mounts]:
        args += ["-v", mount]
    for source, target in files:
        args += file_mount(source, target)
    for name in env_names:
        args += ["-e", name]
    return args
