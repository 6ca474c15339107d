"""PyTorch jobs for tests/gpu/replayer_acceptance.sh (run with torchrun --nproc-per-node N; more
ranks than GPUs share them, each process with its own NCCL_HOSTID).

  loop --mb M --iters K   one M-MiB float32 allreduce K times (after 5 warm-up calls); prints
                          the bus bandwidth nccl-tests would report: "busbw_gbps X"
  swap                    two same-size gradient allreduces per step; rank 1 issues them in the
                          opposite order on odd steps (TensorFlow issue 41539's bug); prints
                          "#wrong N" like ncclrr-example
"""
import argparse
import os
import socket

import torch
import torch.distributed as dist


def setup():
    rank = int(os.environ["RANK"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    if int(os.environ.get("LOCAL_WORLD_SIZE", 1)) > torch.cuda.device_count():
        # More ranks than GPUs: each process its own NCCL host, so ranks may share a GPU (NCCL
        # then connects them through its network transport; results are real, speed is not).
        os.environ.setdefault("NCCL_HOSTID", f"{socket.gethostname()}-rank{rank}")
        os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
    torch.cuda.set_device(local % torch.cuda.device_count())
    dist.init_process_group("nccl", device_id=torch.device("cuda", local % torch.cuda.device_count()))
    return rank, dist.get_world_size()


def loop(args, rank, world):
    n = args.mb * (1 << 20) // 4
    x = torch.ones(n, device="cuda")
    for _ in range(5):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(args.iters):
        dist.all_reduce(x)
    end.record()
    torch.cuda.synchronize()
    seconds = start.elapsed_time(end) / 1e3 / args.iters
    factor = 2 * (world - 1) / world if world > 1 else 1.0
    busbw = n * 4 / seconds * factor / 1e9
    if rank == 0:
        print(f"allreduce {args.mb} MiB x {args.iters} on {world} rank(s): busbw_gbps {busbw:.2f}",
              flush=True)


def swap(args, rank, world):
    a = torch.empty(1024, device="cuda")
    b = torch.empty(1024, device="cuda")
    wrong = 0
    for step in range(args.steps):
        a.fill_(rank + 1 + 10 * step)
        b.fill_(100 * (rank + 1) + step)
        want_a = sum(r + 1 + 10 * step for r in range(world))
        want_b = sum(100 * (r + 1) + step for r in range(world))
        order = [a, b] if not (rank == 1 and step % 2 == 1) else [b, a]
        for t in order:
            dist.all_reduce(t)
        torch.cuda.synchronize()
        wrong += int((a != want_a).sum().item() + (b != want_b).sum().item())
    print(f"rank {rank}: #wrong {wrong}", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["loop", "swap"])
    p.add_argument("--mb", type=int, default=64)
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--steps", type=int, default=4)
    args = p.parse_args()
    rank, world = setup()
    (loop if args.mode == "loop" else swap)(args, rank, world)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
