"""Pipeline- and tensor-parallel training of a small residual MLP on 4 ranks (torchrun-launched),
written the way Megatron-style code is: 2 pipeline stages x 2 tensor-parallel ranks.

- Tensor-parallel groups {0, 1} and {2, 3} (`dist.new_group`, created by every rank). Each block is
  LayerNorm -> column-parallel Linear (H -> 2H/tp) -> GELU -> row-parallel Linear (2H/tp -> H)
  -> residual. The row-parallel output is all-reduced in the forward pass, the column-parallel
  input gradient in the backward pass (autograd functions, as Megatron's mappings do).
- Pipeline: rank r of stage 0 sends its activations to rank r + 2 of stage 1 with
  `dist.batch_isend_irecv`, and receives the activation gradients back the same way; 4
  micro-batches per step, all forwards then all backwards (GPipe).
- After backward, the LayerNorm gradients (replicated parameters, one H-vector per weight and
  bias) are all-reduced over the tensor-parallel group and averaged, in parameter order; then the
  stage-1 loss is broadcast from rank 2 to everyone for the log line.

--bug swap-same: at --swap-steps (default 4,9), rank 3 all-reduces its LayerNorm gradients in
  another order (block 1's weight before block 0's: both H floats), as code that walks a set or a
  dict built in another order does. NCCL pairs them with rank 2's calls by position: both ranks get
  the other tensor's sum, silently.
--bug micro: from --bug-step (default 3) the stage-1 ranks run 3 micro-batches per step instead
  of 4 (their node's config sets fewer gradient-accumulation steps), while stage 0 still sends 4
  activations: stage 0's fourth send and its fourth gradient receive have no partner, a hang.
--bug none: no reordering; the job finishes with 0 wrong results.

Independent reference: every LayerNorm gradient all-reduce is compared with the ranks'
contributions all-gathered over a gloo group (no NCCL call). Rank 0 prints "#wrong N" (all
ranks' wrong results); exit status 0 when N == 0.

  torchrun --nproc-per-node 4 --master-port 29631 torch_pipeline_tp.py [--bug swap-same]
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (end_job, gather_cpu, log, mismatch, torch_env, torchrun_ranks,  # noqa: E402
                    use_gpu)

TP = 2
STAGES = 2
H = 64
MICRO = 4


class ReduceFromTP(torch.autograd.Function):
    """Forward: all-reduce the partial outputs of a row-parallel layer. Backward: identity."""

    @staticmethod
    def forward(ctx, x, group):
        x = x.clone()
        dist.all_reduce(x, group=group)
        return x

    @staticmethod
    def backward(ctx, g):
        return g, None


class CopyToTP(torch.autograd.Function):
    """Forward: identity. Backward: all-reduce the input gradient of a column-parallel layer."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x

    @staticmethod
    def backward(ctx, g):
        g = g.clone()
        dist.all_reduce(g, group=ctx.group)
        return g, None


class Block(nn.Module):
    def __init__(self, tp_group):
        super().__init__()
        self.tp_group = tp_group
        self.ln = nn.LayerNorm(H)
        self.up = nn.Linear(H, 2 * H // TP)              # column-parallel shard
        self.down = nn.Linear(2 * H // TP, H, bias=False)  # row-parallel shard

    def forward(self, x):
        h = CopyToTP.apply(self.ln(x), self.tp_group)
        h = self.down(F.gelu(self.up(h)))
        return x + ReduceFromTP.apply(h, self.tp_group)


class Stage(nn.Module):
    def __init__(self, tp_group, last):
        super().__init__()
        self.blocks = nn.ModuleList([Block(tp_group), Block(tp_group)])
        self.head = nn.Linear(H, 8) if last else None

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.head(x) if self.head is not None else x


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--micro-batch", type=int, default=8)
    ap.add_argument("--bug", choices=["swap-same", "micro", "none"], default="none")
    ap.add_argument("--swap-steps", default="4,9")
    ap.add_argument("--bug-step", type=int, default=3)
    args = ap.parse_args()
    swap_steps = {int(s) for s in args.swap_steps.split(",") if s}

    rank, world, local_rank = torchrun_ranks()
    assert world == TP * STAGES, f"needs {TP * STAGES} ranks"
    torch_env(rank)  # several ranks on one GPU
    dev = use_gpu(local_rank)
    dist.init_process_group("nccl", device_id=dev)
    stage, tp_rank = rank // TP, rank % TP
    tp_groups = [dist.new_group(ranks=[s * TP + t for t in range(TP)]) for s in range(STAGES)]
    tp_group = tp_groups[stage]
    check_pg = dist.new_group(backend="gloo")
    tp_check = [dist.new_group(ranks=[s * TP + t for t in range(TP)], backend="gloo")
                for s in range(STAGES)][stage]
    peer = rank + TP if stage == 0 else rank - TP  # the same tensor-parallel rank, other stage

    torch.manual_seed(100 * stage + tp_rank)  # column/row shards differ per tensor-parallel rank
    model = Stage(tp_group, last=stage == STAGES - 1).to(dev)
    torch.manual_seed(100 * stage)  # replicated LayerNorms and head: the same on both tp ranks
    for b in model.blocks:
        nn.init.normal_(b.ln.weight, 1.0, 0.02)
        nn.init.normal_(b.ln.bias, 0.0, 0.02)
    if model.head is not None:
        nn.init.normal_(model.head.weight, 0.0, 0.1)
    ln_params = [p for b in model.blocks for p in (b.ln.weight, b.ln.bias)]
    opt = torch.optim.SGD(model.parameters(), lr=0.02)
    teacher = torch.randn(H, 8, generator=torch.Generator().manual_seed(7)).to(dev)
    # Both tensor-parallel ranks of a pipeline see the same micro-batches.
    gen = torch.Generator(device=dev).manual_seed(5000 + tp_rank)
    wrong = 0

    for step in range(args.steps):
        opt.zero_grad()
        inputs, outputs, losses = [], [], []
        micro = MICRO
        if args.bug == "micro" and stage == 1 and step >= args.bug_step:
            micro = MICRO - 1  # this node's config: fewer gradient-accumulation steps
            if step == args.bug_step:
                log(rank, f"step {step}: {micro} micro-batches per step here (bug)")
        for m in range(micro):
            x = torch.randn(args.micro_batch, H, device=dev, generator=gen)
            y = (x @ teacher).argmax(dim=1)
            if stage == 0:
                out = model(x)
                dist.batch_isend_irecv([dist.P2POp(dist.isend, out.detach().contiguous(), peer)])[0].wait()
                outputs.append(out)
            else:
                act = torch.empty(args.micro_batch, H, device=dev)
                dist.batch_isend_irecv([dist.P2POp(dist.irecv, act, peer)])[0].wait()
                act.requires_grad_(True)
                inputs.append(act)
                losses.append(F.cross_entropy(model(act), y) / micro)
        for m in range(micro):
            if stage == STAGES - 1:
                losses[m].backward()
                dist.batch_isend_irecv([dist.P2POp(dist.isend, inputs[m].grad.contiguous(), peer)])[0].wait()
            else:
                g = torch.empty(args.micro_batch, H, device=dev)
                dist.batch_isend_irecv([dist.P2POp(dist.irecv, g, peer)])[0].wait()
                outputs[m].backward(g)

        # Replicated LayerNorm parameters: average their gradients over the tensor-parallel group.
        mine = torch.cat([p.grad.reshape(-1) for p in ln_params]).cpu()
        order = list(range(len(ln_params)))
        if args.bug == "swap-same" and rank == 3 and step in swap_steps:
            order[0], order[2] = order[2], order[0]  # block 1's LN weight before block 0's
            log(rank, f"step {step}: LayerNorm gradients all-reduced in another order (bug)")
        for i in order:
            dist.all_reduce(ln_params[i].grad, group=tp_group)
            ln_params[i].grad /= TP
        want = gather_cpu(mine, tp_check, TP).sum(dim=0) / TP
        off = 0
        for i, p in enumerate(ln_params):
            bad, err = mismatch(p.grad.reshape(-1).cpu(), want[off:off + H], TP)
            if bad:
                wrong += 1
                log(rank, f"WRONG: step {step} LayerNorm gradient {i} off by {err:.3g}")
            off += H
        opt.step()

        loss = torch.stack(losses).sum().detach() if losses else torch.zeros((), device=dev)
        dist.broadcast(loss, src=STAGES * TP - TP)  # stage 1's first rank logs for everyone
        if rank == 0 and step % 4 == 0:
            log(rank, f"step {step:3d} loss {loss.item():.4f}")

    end_job(rank, wrong, check_pg)


if __name__ == "__main__":
    main()
