"""A two-process PyTorch job that runs the PyTorch profiler (Kineto: its own CUPTI client) in the
middle, for tests/gpu/gputiming_acceptance.sh: recorded with `ncclrr record --gpu-timing`, ncclrr
starts with CUPTI, hands it over when Kineto starts, and times the later calls with CUDA events;
the profiler must still see NCCL's kernels. Prints profiler_nccl_kernels=N. torchrun, 2 procs."""
import os

import torch
import torch.distributed as dist
from torch.profiler import ProfilerActivity, profile


def steps(x, n):
    for _ in range(n):
        dist.all_reduce(x)
        dist.broadcast(x, src=0)
    torch.cuda.synchronize()


def main():
    rank = int(os.environ["RANK"])
    dev = rank % torch.cuda.device_count()
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=torch.device("cuda", dev))
    x = torch.ones(1024, device="cuda")
    steps(x, 5)  # before the profiler: ncclrr's CUPTI
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        steps(x, 5)
    kernels = sum(1 for e in prof.events() if "nccl" in e.name.lower() and e.device_type.name == "CUDA")
    steps(x, 5)  # after it: CUDA event pairs
    print(f"rank {rank}: profiler_nccl_kernels={kernels}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
