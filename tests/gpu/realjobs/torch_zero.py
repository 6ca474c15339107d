"""DDP with a sharded optimizer (torchrun, 2 ranks): a residual MLP whose blocks come from a
registry (`nn.ModuleDict` built from the configured block names), DDP with small gradient buckets
(one block per bucket), and `ZeroRedundancyOptimizer` (AdamW): each rank steps the parameters
it owns and broadcasts them to the others after every step. The loss is averaged every step.

--bug set-order: rank 1 registers the blocks in another order (the names came from a Python set,
  whose iteration order follows the process's string hash seed). Every block has the same
  shapes, so DDP's parameter check passes, and DDP's bucket all-reduces and ZeRO's broadcasts
  pair the ranks' parameters by position: rank 1's "mid" block takes rank 0's "enc" weights
  and gradients. No error, no hang: the replicas silently compute different functions.
--bug bucket-view-mixed: rank 1's node runs ZeRO with parameters_as_bucket_view=True (one flat
  broadcast per owner) where rank 0 broadcasts parameter by parameter: the broadcasts differ in
  count from the first step, so their sums are garbage or the job hangs.
--bug none: the same order and settings everywhere; 0 wrong results.

Every step each rank's parameters are compared by name with rank 0's, all-gathered over a gloo
group (no NCCL call): a parameter that differs is a wrong result. Rank 0 prints "#wrong N"; exit
status 0 when N == 0.

  torchrun --nproc-per-node 2 torch_zero.py [--bug none|set-order|bucket-view-mixed]
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import end_job, gather_cpu, log, torchrun_setup  # noqa: E402

BLOCKS = ("enc", "mid", "dec")  # the order the forward pass applies them


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return x + F.gelu(self.proj(self.norm(x)))


class Net(nn.Module):
    def __init__(self, registration_order, d=128):
        super().__init__()
        self.inp = nn.Linear(32, d)
        self.blocks = nn.ModuleDict({name: Block(d) for name in registration_order})
        self.head = nn.Linear(d, 10)

    def forward(self, x):
        h = self.inp(x)
        for name in BLOCKS:
            h = self.blocks[name](h)
        return self.head(h)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--bug", choices=["none", "set-order", "bucket-view-mixed"], default="none")
    args = ap.parse_args()
    rank, world, dev, check_pg = torchrun_setup()

    order = list(BLOCKS)
    if args.bug == "set-order" and rank == 1:
        order = ["dec", "enc", "mid"]
    torch.manual_seed(0)
    model = DDP(Net(order).to(dev), device_ids=[dev], bucket_cap_mb=0.08)
    bucket_view = args.bug == "bucket-view-mixed" and rank == 1
    opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW, lr=1e-3,
                                  parameters_as_bucket_view=bucket_view)
    names = sorted(n for n, _ in model.named_parameters())
    log(rank, "blocks registered in the order " + ", ".join(order))
    teacher = torch.randn(32, 10, generator=torch.Generator().manual_seed(7)).to(dev)
    gen = torch.Generator(device=dev).manual_seed(1000 + rank)
    wrong = 0
    for step in range(args.steps):
        x = torch.randn(args.batch, 32, device=dev, generator=gen)
        y = (x @ teacher).argmax(dim=1)
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        mean_loss = loss.detach().clone()
        dist.all_reduce(mean_loss, op=dist.ReduceOp.AVG)

        params = dict(model.named_parameters())
        for name in names:
            got = params[name].detach().reshape(-1).cpu()
            every = gather_cpu(got, check_pg, world)
            err = (every - every[0]).abs().max().item()
            if err > 1e-6:
                wrong += 1
                if step < 2:
                    log(rank, f"WRONG: step {step} {name} differs from rank 0's by {err:.3g}")
        if rank == 0 and step % 5 == 0:
            log(rank, f"step {step:3d} loss {mean_loss.item():.4f}")
    end_job(rank, wrong, check_pg)


if __name__ == "__main__":
    main()
