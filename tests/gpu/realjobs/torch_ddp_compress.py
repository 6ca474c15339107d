"""DDP with gradient compression chosen by configuration (torchrun, 2 ranks): a small
transformer-style block stack, DDP with the bf16 compression communication hook when the run's
configuration asks for it (`GRAD_COMPRESSION=bf16` in the environment, as a launcher passes it
per node), AdamW, the loss averaged every step and a validation sum every 5 steps.

--bug mixed: rank 1 alone runs with GRAD_COMPRESSION=bf16 (its node's environment differs):
  its buckets are all-reduced as bf16 where rank 0 all-reduces the same buckets as fp32 (same
  element counts, half the bytes). NCCL pairs them whatever their types: the sums are garbage or
  the job hangs.
--bug none: no compression on either rank; --bug both: bf16 on both (clean, and the sums are
  only as exact as bf16).
--bug powersgd: both ranks use DDP's PowerSGD hook (GRAD_COMPRESSION=powersgd), which all-reduces
  whole buckets for its first POWERSGD_START_ITER (4) iterations and then low-rank factors: the
  calls change size mid-run on every rank alike (clean; the gradients are approximations, so
  only the loss is checked).
--bug powersgd-mixed: the same, but rank 1's node sets POWERSGD_START_ITER=8: from iteration 4
  rank 0 all-reduces factors where rank 1 still all-reduces whole buckets.

Every step the averaged gradients are checked against the ranks' own gradients all-gathered
over a gloo group (no NCCL call), to bf16's tolerance when compressing. Rank 0 prints
"#wrong N"; exit status 0 when N == 0.

  torchrun --nproc-per-node 2 torch_ddp_compress.py [--bug none|mixed|both]
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (end_job, gather_cpu, log, off_by, torch_env, torchrun_ranks,  # noqa: E402
                    use_gpu)


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        return x + self.ff(self.norm(x))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--bug", choices=["none", "mixed", "both", "powersgd", "powersgd-mixed"],
                    default="none")
    args = ap.parse_args()
    rank, world, local_rank = torchrun_ranks()
    torch_env(rank)
    if args.bug == "both" or (args.bug == "mixed" and rank == 1):
        os.environ["GRAD_COMPRESSION"] = "bf16"  # what this rank's node passes
    if args.bug.startswith("powersgd"):
        os.environ["GRAD_COMPRESSION"] = "powersgd"
        os.environ["POWERSGD_START_ITER"] = "8" if args.bug.endswith("mixed") and rank == 1 \
            else "4"
    dev = use_gpu(local_rank)
    dist.init_process_group("nccl", device_id=dev)
    check_pg = dist.new_group(backend="gloo")

    torch.manual_seed(0)
    d = 64
    net = nn.Sequential(nn.Linear(16, d), Block(d), Block(d), nn.Linear(d, 8)).to(dev)
    model = DDP(net, device_ids=[dev.index], bucket_cap_mb=0.05)
    compress = os.environ.get("GRAD_COMPRESSION", "none")
    if compress == "bf16":
        model.register_comm_hook(dist.group.WORLD, default_hooks.bf16_compress_hook)
    elif compress == "powersgd":
        state = powerSGD_hook.PowerSGDState(
            process_group=None, matrix_approximation_rank=1,
            start_powerSGD_iter=int(os.environ.get("POWERSGD_START_ITER", "4")),
            min_compression_rate=0.5)
        model.register_comm_hook(state, powerSGD_hook.powerSGD_hook)
    log(rank, f"gradient compression: {compress}")
    rtol = 2e-2 if compress == "bf16" else 1e-4
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    teacher = torch.randn(16, 8, generator=torch.Generator().manual_seed(7)).to(dev)
    gen = torch.Generator(device=dev).manual_seed(900 + rank)
    params = list(model.parameters())
    wrong = 0

    for step in range(args.steps):
        x = torch.randn(args.batch, 16, device=dev, generator=gen)
        y = (x @ teacher).argmax(dim=1)
        opt.zero_grad()
        # This rank's own gradients, from the same step without DDP's hooks (no NCCL call).
        loss_local = F.cross_entropy(net(x), y)
        mine = torch.autograd.grad(loss_local, list(net.parameters()))
        mine = torch.cat([g.reshape(-1) for g in mine]).cpu()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        got = torch.cat([p.grad.reshape(-1) for p in params]).cpu()
        want = gather_cpu(mine, check_pg, world).mean(dim=0)
        err, bad = off_by(got, want, rtol=rtol)
        if bad and compress != "powersgd":  # PowerSGD's gradients are low-rank approximations
            wrong += 1
            log(rank, f"WRONG: step {step} averaged gradients off by {err:.3g}")
        opt.step()
        loss_avg = loss.detach().clone()
        dist.all_reduce(loss_avg, op=dist.ReduceOp.AVG)
        if step % 5 == 0:
            with torch.no_grad():
                xv = torch.randn(64, 16, device=dev, generator=gen)
                hits = (model(xv).argmax(1) == (xv @ teacher).argmax(1)).sum().float()
                stats = torch.stack([hits, torch.tensor(64.0, device=dev)])
                dist.all_reduce(stats)
            if rank == 0:
                log(rank, f"step {step:3d} loss {loss_avg.item():.4f} "
                          f"val acc {(stats[0] / stats[1]).item():.3f}")
    end_job(rank, wrong, check_pg)


if __name__ == "__main__":
    main()
