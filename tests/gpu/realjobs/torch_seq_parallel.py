"""Tensor parallelism with sequence parallelism, written by hand the way Megatron-style code does
(torchrun, 2 ranks = one tensor-parallel group): between blocks the activations are split along
the sequence; each block all-gathers the sequence before its column-parallel up-projection and
reduce-scatters it after its row-parallel down-projection (autograd functions: the backward
pass does the opposite collective). Replicated parameters (input projection, LayerNorms, head)
see only their rank's part of the sequence, so their gradients are all-reduced after backward.
Batches have a different sequence length every step, padded to a multiple of 8 per rank.
With --tp 2 on 4 ranks, two such groups ({0, 1}, {2, 3}) are data-parallel replicas of each other:
every gradient is then averaged across them ({0, 2}, {1, 3}), one all_reduce per parameter.

--bug pad-mixed: the last rank's node pads sequences to a multiple of 16 (another data config):
  at steps whose length pads differently, its sequence part is longer than the rest of its
  group's, so the all-gathers and reduce-scatters of those steps differ in count across the
  group: garbage, or a hang (with replicas, the other group then waits for it in the
  data-parallel all-reduces).
--bug none: the same padding everywhere; 0 wrong results.

Every step the loss is compared with the loss of the same batch through the whole, unsharded
model, built from the ranks' weight shards all-gathered over a gloo group (no NCCL call). Rank 0
prints "#wrong N"; exit status 0 when N == 0.

  torchrun --nproc-per-node 2 torch_seq_parallel.py [--bug none|pad-mixed]
  torchrun --nproc-per-node 4 torch_seq_parallel.py --tp 2 [--bug none|pad-mixed]
"""
import argparse
import math
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import end_job, log, torchrun_setup  # noqa: E402


class GatherSequence(torch.autograd.Function):
    """All-gather the sequence parts forward; reduce-scatter the gradient backward."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        tp = dist.get_world_size(group)
        out = x.new_empty((x.shape[0] * tp,) + tuple(x.shape[1:]))
        dist.all_gather_into_tensor(out, x.contiguous(), group=group)
        return out

    @staticmethod
    def backward(ctx, g):
        tp = dist.get_world_size(ctx.group)
        out = g.new_empty((g.shape[0] // tp,) + tuple(g.shape[1:]))
        dist.reduce_scatter_tensor(out, g.contiguous(), group=ctx.group)
        return out, None


class ScatterSequence(torch.autograd.Function):
    """Reduce-scatter partial sums into sequence parts forward; all-gather backward."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return GatherSequence.backward(ctx, x)[0]

    @staticmethod
    def backward(ctx, g):
        return GatherSequence.forward(ctx, g, ctx.group), None


class ParallelBlock(nn.Module):
    def __init__(self, d, tp, group):
        super().__init__()
        self.group = group
        self.norm = nn.LayerNorm(d)
        self.up = nn.Linear(d, 4 * d // tp)               # column-parallel: a slice of outputs
        self.down = nn.Linear(4 * d // tp, d, bias=False)  # row-parallel: a slice of inputs

    def forward(self, x):
        h = GatherSequence.apply(self.norm(x), self.group)
        return x + ScatterSequence.apply(self.down(F.gelu(self.up(h))), self.group)


class Model(nn.Module):
    def __init__(self, tp, group, d=64, depth=2):
        super().__init__()
        self.inp = nn.Linear(32, d)
        self.blocks = nn.ModuleList(ParallelBlock(d, tp, group) for _ in range(depth))
        self.head = nn.Linear(d, 10)

    def forward(self, x):
        h = self.inp(x)
        for b in self.blocks:
            h = b(h)
        return self.head(h)


def reference_loss(model, x, y, check_pg, tp):
    """The loss of the unsharded model: each block's slices all-gathered over gloo and joined."""
    def whole(t, dim):
        parts = [torch.empty_like(t.detach().cpu()) for _ in range(tp)]
        dist.all_gather(parts, t.detach().cpu().contiguous(), group=check_pg)
        return torch.cat(parts, dim=dim).to(x.device)

    with torch.no_grad():
        h = model.inp(x)
        for b in model.blocks:
            up_w, up_b, down_w = whole(b.up.weight, 0), whole(b.up.bias, 0), whole(b.down.weight, 1)
            h = h + F.linear(F.gelu(F.linear(b.norm(h), up_w, up_b)), down_w)
        return F.cross_entropy(model.head(h), y).item()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--tp", type=int, default=0, help="ranks per tensor-parallel group (all)")
    ap.add_argument("--bug", choices=["none", "pad-mixed"], default="none")
    args = ap.parse_args()
    rank, world, dev, check_pg = torchrun_setup()
    tp = args.tp or world
    dp, replica = world // tp, rank // tp
    tp_group, tp_check, dp_group = None, check_pg, None  # one group: the world's communicator
    if dp > 1:  # every rank creates every group, in one order
        for i in range(dp):
            members = list(range(i * tp, (i + 1) * tp))
            g, gc = dist.new_group(members), dist.new_group(members, backend="gloo")
            if i == replica:
                tp_group, tp_check = g, gc
        for j in range(tp):
            g = dist.new_group(list(range(j, world, tp)))
            if j == rank % tp:
                dp_group = g
    tp_rank = rank % tp

    torch.manual_seed(1 + tp_rank)  # each rank of a group its own weight slices...
    model = Model(tp, tp_group).to(dev)
    torch.manual_seed(0)  # ...and the same replicated parameters
    replicated = [p for n, p in model.named_parameters() if not n.endswith(("up.weight", "up.bias",
                                                                             "down.weight"))]
    with torch.no_grad():
        for p in replicated:
            p.copy_(torch.randn_like(p) * 0.1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    pad = 16 if args.bug == "pad-mixed" and rank == world - 1 else 8
    teacher = torch.randn(32, 10, generator=torch.Generator().manual_seed(7)).to(dev)
    wrong = 0
    for step in range(args.steps):
        # Every rank of a group reads its replica's batch: a sequence of a length of its own.
        g = torch.Generator().manual_seed(500 + step + 1000 * replica)
        length = int(torch.randint(40, 121, (1,), generator=g))
        x = torch.randn(length, 32, generator=g).to(dev)
        y = (x @ teacher).argmax(dim=1)
        padded = math.ceil(length / (tp * pad)) * tp * pad
        part = padded // tp
        xp = F.pad(x, (0, 0, 0, padded - length))
        yp = F.pad(y, (0, padded - length), value=-100)
        mine = slice(tp_rank * part, (tp_rank + 1) * part)

        want = reference_loss(model, x, y, tp_check, tp)
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(xp[mine]), yp[mine], ignore_index=-100,
                               reduction="sum") / length
        loss.backward()
        for p in replicated:  # they saw only this rank's part of the sequence
            dist.all_reduce(p.grad, group=tp_group)
        if dp_group is not None:  # then data parallelism across the replicas
            for p in model.parameters():
                dist.all_reduce(p.grad, op=dist.ReduceOp.AVG, group=dp_group)
        total = loss.detach().clone()
        dist.all_reduce(total, group=tp_group)
        opt.step()
        got = total.item()
        if abs(got - want) > 1e-4 * abs(want) + 1e-5:
            wrong += 1
            if wrong <= 3:
                log(rank, f"WRONG: step {step} (length {length}) loss {got:.6f}, the unsharded "
                          f"model gives {want:.6f}")
        if rank == 0 and step % 5 == 0:
            log(rank, f"step {step:3d} length {length:3d} loss {got:.4f}")
    end_job(rank, wrong, check_pg)


if __name__ == "__main__":
    main()
