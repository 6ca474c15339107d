"""Expert-parallel mixture-of-experts training, one expert per rank (torchrun, 4 ranks): a
shared input layer, a top-1 gate, tokens dispatched to their expert's rank and combined back
with all_to_all_single of uneven split sizes (an autograd Function that runs the reverse
exchange in its backward, as MoE libraries write it), the token counts exchanged first with an
all_to_all_single of one count per rank; the shared layers' gradients all-reduced as one flat
bucket, the experts' kept local; the loss averaged every step, the load balance gathered every
4 steps for the log.

--bug splits: at --bug-steps rank 2 takes its receive split sizes to be its send split sizes
  (as code that assumes symmetric routing does, "we send as much as we receive") instead of the
  counts it just received: its receives no longer match what the others send it. NCCL pairs
  each send with the peer's receive whatever their sizes: the exchange hangs or leaves garbage.
--bug none: the same loop; it finishes with 0 wrong results.

Every token exchange is checked against the same exchange over a gloo group (all_to_all_single
with the true counts; no NCCL call). Rank 0 prints "#wrong N" (every rank's count summed over
gloo); exit status 0 when N == 0.

  torchrun --nproc-per-node 4 torch_moe.py [--bug none|splits] [--bug-steps 3,7]
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import end_job, log, off_by, torch_env, torchrun_ranks, use_gpu  # noqa: E402

D = 64


class AllToAll(torch.autograd.Function):
    """Tokens to their expert's rank; the backward sends the gradients back the same way."""

    @staticmethod
    def forward(ctx, x, send_splits, recv_splits):
        ctx.splits = (send_splits, recv_splits)
        out = x.new_empty((sum(recv_splits), x.shape[1]))
        dist.all_to_all_single(out, x.contiguous(), recv_splits, send_splits)
        return out

    @staticmethod
    def backward(ctx, grad):
        send_splits, recv_splits = ctx.splits
        out = grad.new_empty((sum(send_splits), grad.shape[1]))
        dist.all_to_all_single(out, grad.contiguous(), send_splits, recv_splits)
        return out, None, None


class MoE(nn.Module):
    def __init__(self, world, rank):
        super().__init__()
        self.world, self.rank = world, rank
        self.inp = nn.Linear(32, D)
        self.gate = nn.Linear(D, world)
        torch.manual_seed(1000 + rank)  # each rank's own expert
        self.expert = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))
        torch.manual_seed(0)
        self.out = nn.Linear(D, 10)

    def shared(self):
        return [p for n, p in self.named_parameters() if not n.startswith("expert.")]

    def forward(self, x, route_bug, check):
        h = torch.relu(self.inp(x))
        scores = F.softmax(self.gate(h), dim=-1)
        weight, target = scores.max(dim=-1)
        order = torch.argsort(target, stable=True)
        send_counts = torch.bincount(target, minlength=self.world)
        recv_counts = torch.empty_like(send_counts)
        dist.all_to_all_single(recv_counts, send_counts)  # one count to and from every rank
        send_splits = send_counts.tolist()
        recv_splits = recv_counts.tolist()
        if route_bug:
            recv_splits = list(send_splits)  # the bug: "we receive as much as we send"
        tokens = h[order]
        arrived = AllToAll.apply(tokens, send_splits, recv_splits)
        check(tokens, send_splits, arrived)
        done = self.expert(arrived)
        back = AllToAll.apply(done, recv_splits, send_splits)
        combined = torch.empty_like(back)
        combined[order] = back
        return self.out(h + weight.unsqueeze(1) * combined)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--bug", choices=["none", "splits"], default="none")
    ap.add_argument("--bug-steps", default="3,7")
    args = ap.parse_args()
    rank, world, local_rank = torchrun_ranks()
    torch_env(rank)
    dev = use_gpu(local_rank)
    dist.init_process_group("nccl", device_id=dev)
    check_pg = dist.new_group(backend="gloo")
    bug_steps = {int(s) for s in args.bug_steps.split(",") if s}

    torch.manual_seed(0)
    model = MoE(world, rank).to(dev)
    shared = model.shared()
    for p in shared:
        dist.broadcast(p.data, src=0)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    teacher = torch.randn(32, 10, generator=torch.Generator().manual_seed(7)).to(dev)
    gen = torch.Generator(device=dev).manual_seed(500 + rank)
    wrong = 0
    step = 0  # the loop's, for check's messages

    def check(tokens, send_splits, arrived):
        # What reached this rank's expert must be what the others sent it: the same exchange
        # over gloo with the counts the senders used.
        nonlocal wrong
        cnt = torch.tensor(send_splits, dtype=torch.int64)
        got_cnt = torch.empty_like(cnt)
        dist.all_to_all_single(got_cnt, cnt, group=check_pg)
        want = torch.empty((int(got_cnt.sum()), D))
        dist.all_to_all_single(want, tokens.detach().cpu(), got_cnt.tolist(), send_splits,
                               group=check_pg)
        got = arrived.detach().cpu()
        if got.shape != want.shape:
            wrong += 1
            log(rank, f"WRONG: step {step} the expert got {got.shape[0]} tokens, "
                      f"{want.shape[0]} were sent to it")
            return
        err, bad = off_by(got, want)
        if bad:
            wrong += 1
            log(rank, f"WRONG: step {step} tokens reaching the expert off by {err:.3g}")

    for step in range(args.steps):
        x = torch.randn(args.batch, 32, device=dev, generator=gen)
        y = (x @ teacher).argmax(dim=1)
        opt.zero_grad()
        bug = args.bug == "splits" and rank == 2 and step in bug_steps
        if bug:
            log(rank, f"step {step}: receive splits taken from the send splits (bug)")
        loss = F.cross_entropy(model(x, bug, check), y)
        loss.backward()

        bucket = torch.cat([p.grad.reshape(-1) for p in shared])
        dist.all_reduce(bucket)
        bucket /= world
        off = 0
        for p in shared:
            p.grad.copy_(bucket[off:off + p.numel()].view_as(p))
            off += p.numel()
        opt.step()
        loss_avg = loss.detach().clone()
        dist.all_reduce(loss_avg, op=dist.ReduceOp.AVG)
        if step % 4 == 0:
            load = model.expert[0].weight.grad.abs().sum().reshape(1)
            loads = torch.empty(world, device=dev)
            dist.all_gather_into_tensor(loads, load)
            if rank == 0:
                log(rank, f"step {step:3d} loss {loss_avg.item():.4f} "
                          f"expert gradient sizes {[round(v, 2) for v in loads.tolist()]}")
    end_job(rank, wrong, check_pg)


if __name__ == "__main__":
    main()
