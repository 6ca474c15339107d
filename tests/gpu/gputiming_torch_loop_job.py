"""Small allreduces in a PyTorch loop, synchronized every iteration (the latency-bound case
where per-call overhead shows most), for tests/gpu/gputiming_torch_bench.sh: the overhead of
`ncclrr record --gpu-timing` in a job whose CUDA context exists before the first NCCL call.
Prints "rank R: us_per_iter=X" (median of 5 blocks). torchrun, 2 processes.
LOOP_PIN_CORES=N pins rank r (and the threads NCCL starts) to cores [r*N, (r+1)*N)."""
import os
import statistics
import time

import torch
import torch.distributed as dist


def main():
    rank = int(os.environ["RANK"])
    pin = int(os.environ.get("LOOP_PIN_CORES", "0"))
    if pin > 0:
        os.sched_setaffinity(0, range(rank * pin, (rank + 1) * pin))
    dev = rank % torch.cuda.device_count()
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=torch.device("cuda", dev))
    iters = max(5, int(os.environ.get("LOOP_ITERS", "2000")))
    x = torch.ones(2, device="cuda")
    for _ in range(200):  # warm-up
        dist.all_reduce(x)
    torch.cuda.synchronize()
    blocks = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(iters // 5):
            dist.all_reduce(x)
            torch.cuda.synchronize()
        blocks.append((time.perf_counter() - t0) / (iters // 5) * 1e6)
    print(f"rank {rank}: us_per_iter={statistics.median(blocks):.2f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
