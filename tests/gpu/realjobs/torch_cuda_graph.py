"""Data-parallel training with the step captured in a CUDA graph (as `torch.compile(mode=
"reduce-overhead")` or hand-written graph capture does to cut launch costs): static input
buffers, a warm-up on a side stream, then forward, backward and the all_reduce of the flat
gradient bucket captured once into a torch.cuda.CUDAGraph and replayed every step; the
optimizer step eager; the loss all-reduced eagerly every 5 steps for the log. Two ranks,
torch.multiprocessing.spawn.

--bug extra-replay: at --bug-step rank 1 replays the graph a second time (it "retries the step"
  on a condition only it sees, a loss spike): its graph's all_reduce runs once more than rank 0's,
  so from there its bucket is paired with rank 0's next step, and its next eager loss all_reduce
  with rank 0's bucket: the job hangs or sums garbage.
--bug keep-graph: the graph is still alive when the job leaves its process group
  (destroy_process_group): ncclCommFinalize waits for the graph's captured NCCL work, and the
  job hangs at exit on every rank (the other variants delete the graph first).
--bug none: one replay per step; must finish with 0 wrong results.

Each replay's all_reduce is checked against the ranks' buckets (copied inside the graph before
the all_reduce) all-gathered over a gloo group (no NCCL call). Prints "#wrong N"; exit status 0
when N == 0.

  python3 torch_cuda_graph.py --port 29660 [--bug none|extra-replay] [--bug-step 6]
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (end_spawned, gather_cpu, log, mismatch, spawn_and_report,  # noqa: E402
                    spawn_parser, torch_env, use_gpu)


def worker(rank, world, args, results):
    torch_env(rank, args.port)
    dev = use_gpu(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
    check_pg = dist.new_group(backend="gloo")

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                          nn.Linear(128, 10)).to(dev)
    params = list(model.parameters())
    opt = torch.optim.SGD(params, lr=0.05)
    teacher = torch.randn(32, 10, generator=torch.Generator().manual_seed(7)).to(dev)
    gen = torch.Generator(device=dev).manual_seed(7000 + rank)
    static_x = torch.zeros(args.batch, 32, device=dev)
    static_y = torch.zeros(args.batch, dtype=torch.long, device=dev)
    numel = sum(p.numel() for p in params)
    sent = torch.zeros(numel, device=dev)  # this rank's bucket, as the all_reduce got it

    def step_body():
        opt.zero_grad(set_to_none=False)  # in the graph too: each replay starts from zero
        loss = F.cross_entropy(model(static_x), static_y)
        loss.backward()
        bucket = torch.cat([p.grad.reshape(-1) for p in params])
        sent.copy_(bucket)
        dist.all_reduce(bucket)
        bucket /= world
        off = 0
        for p in params:
            p.grad.copy_(bucket[off:off + p.numel()].view_as(p))
            off += p.numel()
        return loss.detach(), bucket

    # Warm-up on a side stream (eager NCCL calls: the communicator connects here), then capture.
    side = torch.cuda.Stream(device=dev)
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step_body()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_loss, static_bucket = step_body()
    log(rank, "step captured in a CUDA graph")

    wrong = 0
    for step in range(args.steps):
        x = torch.randn(args.batch, 32, device=dev, generator=gen)
        static_x.copy_(x)
        static_y.copy_((x @ teacher).argmax(dim=1))
        replays = 2 if args.bug == "extra-replay" and rank == 1 and step == args.bug_step else 1
        if replays == 2:
            log(rank, f"step {step}: loss spike seen here only, step retried (bug)")
        for _ in range(replays):
            graph.replay()
            want = gather_cpu(sent.cpu(), check_pg, world).mean(dim=0)
            bad, err = mismatch(static_bucket.cpu(), want, world)
            if bad:
                wrong += 1
                log(rank, f"WRONG: step {step} gradient bucket all_reduce off by {err:.3g}")
        opt.step()
        if step % 5 == 0:
            loss_sum = static_loss.clone()
            dist.all_reduce(loss_sum)
            if rank == 0:
                log(rank, f"step {step:3d} loss {loss_sum.item() / world:.4f}")

    if args.bug != "keep-graph":
        del graph  # its captured NCCL work holds the communicator until it is destroyed
    end_spawned(rank, wrong, results)


def main():
    ap = spawn_parser(__doc__, 29660)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--bug", choices=["none", "extra-replay", "keep-graph"], default="none")
    ap.add_argument("--bug-step", type=int, default=6)
    args = ap.parse_args()
    spawn_and_report(worker, args)


if __name__ == "__main__":
    main()
