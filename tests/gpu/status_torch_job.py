"""A PyTorch training loop for tests/gpu/status_acceptance.sh (torchrun --nproc-per-node N; more
ranks than GPUs share them, each process with its own NCCL_HOSTID).

Each step: a small MLP's forward and backward, one all_reduce per gradient (fresh autograd
tensors), an all_reduce of the loss read with .item().

  skip-sleep --at K         rank 1 skips step K's gradient all_reduces and sleeps in Python (the
                            others wait in .item(): outside NCCL, their collectives enqueued)
  skip-sleep --at K --fresh-group
                            at step K every rank makes a new group; rank 0 all-reduces on it (its
                            first collective, so NCCL connects in the calling thread: blocked in
                            NCCL), rank 1 sleeps in Python instead
  straggler --delay S       rank 1 sleeps S seconds before every step: slow, never hung
  gpu-stall --at K --stall S
                            at step K rank 1 launches a kernel that spins S seconds on its compute
                            stream before its gradient all_reduces: every rank issues every
                            collective and returns (PyTorch enqueues), but rank 1's NCCL stream
                            waits behind the kernel; the others' NCCL kernels run and wait for it
"""
import argparse
import os
import socket
import time

import torch
import torch.distributed as dist


def setup():
    rank = int(os.environ["RANK"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    if int(os.environ.get("LOCAL_WORLD_SIZE", 1)) > torch.cuda.device_count():
        os.environ.setdefault("NCCL_HOSTID", f"{socket.gethostname()}-rank{rank}")
        os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
    dev = torch.device("cuda", local % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=dev)
    return rank, dist.get_world_size()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["skip-sleep", "straggler", "gpu-stall"])
    p.add_argument("--at", type=int, default=5)
    p.add_argument("--fresh-group", action="store_true")
    p.add_argument("--delay", type=float, default=0.2)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--sleep", type=float, default=600)
    p.add_argument("--stall", type=float, default=120)
    args = p.parse_args()
    rank, world = setup()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(args.steps):
        if args.mode == "straggler" and rank == 1:
            time.sleep(args.delay)
        x = torch.randn(32, 64, device="cuda")
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        if args.mode == "skip-sleep" and step == args.at:
            if args.fresh_group:
                g = dist.new_group(list(range(world)))
                if rank == 0:
                    dist.all_reduce(torch.ones(16, device="cuda"), group=g)
                    torch.cuda.synchronize()
            if rank == 1:
                print(f"rank 1: skipping step {step}'s collectives, sleeping", flush=True)
                time.sleep(args.sleep)
        if args.mode == "gpu-stall" and step == args.at and rank == 1:
            print(f"rank 1: a {args.stall:.0f} s kernel before step {step}'s collectives", flush=True)
            torch.cuda._sleep(int(args.stall * 2e9))  # spins ~S s at the H200's ~2 GHz
        for prm in model.parameters():
            dist.all_reduce(prm.grad)
            prm.grad /= world
        opt.step()
        avg = loss.detach().clone()
        dist.all_reduce(avg)
        value = avg.item() / world  # logged every step, as training loops do
        if rank == 0 and step % 10 == 0:
            print(f"step {step}: loss {value:.4f}", flush=True)
    print(f"rank {rank}: done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
