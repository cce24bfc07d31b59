"""Run inside the engine image on every node of a deployment (rank 0 on the head), before anything
is stopped: how fast does an all-reduce cross the fabric? One warm-up, then timed all-reduces of
a float32 buffer, over NCCL on GPUs or gloo on CPU — what the engine's tensor parallelism uses.
torch.distributed meets the other ranks through MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK.
Argv: BACKEND SIZE_MB ITERATIONS TIMEOUT_S. Rank 0 prints a human line on stderr and
`bus-gbps=<float>` on stdout (the stack output); before each stage, `stage=<what>` on stdout,
so that a run stopped by its time bound says where it hung."""

import sys


def bus_gbps(nbytes: int, seconds: float, world: int) -> float:
    """Bus bandwidth of one all-reduce of `nbytes` that took `seconds` across `world` ranks, in
    gigabits per second (10^9 bit/s, the unit link speeds are sold in, so a 200G link reads
    against 200). As nccl-tests define it: each rank sends and receives 2(n-1)/n of the buffer,
    so bus bandwidth = algorithm bandwidth (bytes/seconds) × 2(n-1)/n, comparable across n."""
    if world < 2 or seconds <= 0 or nbytes <= 0:
        raise ValueError(f"no bus bandwidth for {nbytes} bytes in {seconds} s over {world} ranks")
    return 2 * (world - 1) / world * nbytes * 8 / seconds / 1e9


def stage(rank: int, what: str) -> None:
    if rank == 0:
        print(f"stage={what}", flush=True)


def main(argv: list) -> None:
    import datetime
    import os
    import time

    import torch
    import torch.distributed as dist

    backend, size_mb, iterations, timeout_s = argv[0], int(argv[1]), int(argv[2]), int(argv[3])
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    stage(rank, f"rendezvous of {world} ranks at {os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')}")
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=timeout_s))
    # One rank per node: the link between the nodes is measured, not the GPUs inside one.
    device = torch.device("cuda", 0) if backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)

    def synced() -> float:
        if device.type == "cuda":  # NCCL returns before the GPU is done: wait for it
            torch.cuda.synchronize(device)
        return time.perf_counter()

    nbytes = size_mb * 1024 * 1024
    buffer = torch.ones(nbytes // 4, dtype=torch.float32, device=device)
    # NCCL creates its communicator (interface, RDMA devices, rings) in the first collective.
    stage(rank, f"{backend} set-up and warm-up all-reduce")
    dist.all_reduce(buffer)  # warm-up: connections and rings are set up here, not timed
    if buffer[0].item() != world:
        raise SystemExit(f"rank {rank}: the warm-up all-reduce summed to {buffer[0].item()}, not {world}")
    buffer.zero_()  # sums of zeros stay finite however many iterations
    stage(rank, "timed all-reduces")
    start = synced()
    for _ in range(iterations):
        dist.all_reduce(buffer)
    seconds = torch.tensor([(synced() - start) / iterations], dtype=torch.float64, device=device)
    # The collective is as slow as its slowest rank.
    dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
    if rank == 0:
        gbps = bus_gbps(nbytes, seconds.item(), world)
        print(f"all-reduce of {size_mb} MiB over {world} ranks ({backend}): {seconds.item() * 1e3:.1f} ms each, "
              f"bus bandwidth {gbps:.2f} Gbit/s ({gbps / 8:.2f} GB/s)", file=sys.stderr, flush=True)
        print(f"bus-gbps={gbps:.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1:])
