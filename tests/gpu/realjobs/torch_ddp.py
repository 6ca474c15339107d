"""Clean DistributedDataParallel training of a small MLP classifier (torchrun-launched), with the
usual extras: the loss averaged across ranks for the log line every step (all_reduce AVG) and a
validation pass every --val-every steps whose loss/correct/count are summed across ranks
(all_reduce), and its predictions all-gathered for a metric. DDP itself broadcasts the initial
state, checks parameter shapes across ranks (all_gather) and all-reduces gradient buckets during
backward. Without --bug, `ncclrr check` must report no finding.

--bug skip-step: at --bug-step rank 1 sees a non-finite loss and skips the step (`continue`
  before DDP's forward and backward), as loss-spike guards written for one rank do: its later
  steps' buckets are paired with rank 0's earlier ones (same sizes: silently wrong), and rank 0's
  last step has no partner (a hang at the end).
--bug uneven-gather: rank 1's validation shard holds 250 samples, rank 0's 256, and the
  predictions are all-gathered with all_gather_into_tensor (equal sizes required): the counts
  differ at the first validation.
--bug unused-param: the model has an auxiliary head whose loss is added when the batch has
  auxiliary targets; at --bug-step rank 1's batch has none, so its forward leaves the head out.
  DDP (find_unused_parameters=False, the default) waits for the head's gradients forever: rank
  1 launches no gradient bucket that step, its next collective (the loss all_reduce) meets rank
  0's first bucket, and its next forward raises "Expected to have finished reduction". With
  --find-unused (the fix) DDP finds the unused head itself every step: clean.

Independent reference: each rank also keeps an unwrapped copy of the model (same initial
weights) and computes its local gradient on the same batch with plain autograd; the copies are
all-gathered over a separate gloo group (no NCCL call), averaged on the CPU and compared with
what DDP left in .grad; the replica is then stepped with that average, so the two models must
stay together. The logged loss and the validation sums are checked the same way.

  torchrun --nproc-per-node 2 --master-port 29615 torch_ddp.py [--steps 30]

Rank 0 prints a final line "#wrong N" (all ranks' wrong results); exit status 0 when N == 0.
"""
import argparse
import copy
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (finish, gather_cpu, log, off_by, torch_env, torchrun_ranks,  # noqa: E402
                    total_wrong, use_gpu)


class Classifier(nn.Module):
    def __init__(self, d_in=128, hidden=256, n_classes=16, aux=False):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(d_in, hidden), nn.LayerNorm(hidden), nn.GELU(),
            nn.Linear(hidden, hidden), nn.LayerNorm(hidden), nn.GELU(),
            nn.Linear(hidden, n_classes))
        self.aux = nn.Linear(d_in, 4) if aux else None  # an auxiliary head on the input

    def forward(self, x, use_aux=True):
        out = self.net(x)
        if self.aux is None:
            return out
        # The auxiliary loss rides on the logits, as a second head's output would.
        extra = self.aux(x).pow(2).mean() if use_aux else out.new_zeros(())
        return out, extra


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--val-every", type=int, default=5)
    ap.add_argument("--bug", choices=["none", "skip-step", "uneven-gather", "unused-param"],
                    default="none")
    ap.add_argument("--bug-step", type=int, default=7)
    ap.add_argument("--find-unused", action="store_true",
                    help="DDP(find_unused_parameters=True): the fix for --bug unused-param (DDP "
                         "then all-reduces which parameters each rank used, every step)")
    args = ap.parse_args()

    rank, world, local_rank = torchrun_ranks()
    torch_env(rank)  # several ranks on one GPU
    dev = use_gpu(local_rank)
    dist.init_process_group("nccl", device_id=dev)
    check_pg = dist.new_group(backend="gloo")

    torch.manual_seed(0)
    aux = args.bug == "unused-param"
    model = Classifier(aux=aux).to(dev)
    replica = copy.deepcopy(model)  # the reference, never wrapped
    ddp = DDP(model, device_ids=[dev.index], find_unused_parameters=args.find_unused)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    ref_opt = torch.optim.SGD(replica.parameters(), lr=0.05, momentum=0.9)
    names = [n for n, _ in model.named_parameters()]

    def loss_of(m, x, y, use_aux):
        if not aux:
            return F.cross_entropy(m(x), y)
        out, extra = m(x, use_aux)
        return F.cross_entropy(out, y) + 0.1 * extra

    teacher = torch.randn(128, 16, generator=torch.Generator().manual_seed(7)).to(dev)
    gen = torch.Generator(device=dev).manual_seed(3000 + rank)
    n_val = 250 if args.bug == "uneven-gather" and rank == 1 else 256
    val_x = torch.randn(n_val, 128, device=dev, generator=gen)
    val_y = (val_x @ teacher).argmax(dim=1)
    wrong = 0

    for step in range(args.steps):
        ddp.train()
        x = torch.randn(args.batch, 128, device=dev, generator=gen)
        y = (x @ teacher).argmax(dim=1)

        # Reference: this rank's own gradient, from the replica.
        ref_opt.zero_grad()
        use_aux = not (args.bug == "unused-param" and rank == 1 and step == args.bug_step)
        if not use_aux:
            log(rank, f"step {step}: no auxiliary targets in this batch, aux head left out (bug)")
        ref_loss = loss_of(replica, x, y, use_aux)
        if args.bug == "skip-step" and rank == 1 and step == args.bug_step:
            log(rank, f"step {step}: loss not finite here, step skipped (bug)")
            continue
        ref_loss.backward()
        mine = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1)
                          for p in replica.parameters()]
                         + [ref_loss.detach().reshape(1)]).cpu()

        opt.zero_grad()
        loss = loss_of(ddp, x, y, use_aux)
        loss.backward()  # DDP all-reduces the gradient buckets here
        loss_avg = loss.detach().clone()
        dist.all_reduce(loss_avg, op=dist.ReduceOp.AVG)

        want = gather_cpu(mine, check_pg, world).mean(dim=0)
        off = 0
        for name, p, rp in zip(names, model.parameters(), replica.parameters()):
            n = p.numel()
            g = p.grad if p.grad is not None else torch.zeros_like(p)
            err, bad = off_by(g.reshape(-1).cpu(), want[off:off + n])
            if bad:
                wrong += 1
                log(rank, f"WRONG: step {step} DDP gradient of {name} off by {err:.3g} "
                          f"from the mean of the ranks' gradients")
            rp.grad = want[off:off + n].view_as(rp).to(dev)
            off += n
        err, bad = off_by(loss_avg.reshape(1).cpu(), want[off:off + 1])
        if bad:
            wrong += 1
            log(rank, f"WRONG: step {step} loss all_reduce(AVG) off by {err:.3g}")
        opt.step()
        ref_opt.step()

        if step % args.val_every == 0 or step == args.steps - 1:
            ddp.eval()
            with torch.no_grad():
                out = ddp(val_x)
                out = out[0] if aux else out
                stats = torch.stack([F.cross_entropy(out, val_y, reduction="sum"),
                                     (out.argmax(dim=1) == val_y).sum().float(),
                                     torch.tensor(float(val_x.shape[0]), device=dev)])
            local = stats.cpu()
            dist.all_reduce(stats)
            preds = out.argmax(dim=1).float()
            every = torch.empty(world * preds.numel(), device=dev)
            dist.all_gather_into_tensor(every, preds)
            want_preds = gather_cpu(preds.cpu(), check_pg, world).reshape(-1)
            if every.numel() != want_preds.numel() or not torch.equal(every.cpu(), want_preds):
                wrong += 1
                log(rank, f"WRONG: step {step} predictions all_gather differs from the ranks'")
            want_stats = gather_cpu(local, check_pg, world).sum(dim=0)
            err, bad = off_by(stats.cpu(), want_stats, rtol=1e-5 * world)
            if bad:
                wrong += 1
                log(rank, f"WRONG: step {step} validation all_reduce gave {stats.tolist()}, "
                          f"expected {want_stats.tolist()}")
            if rank == 0:
                s = stats.tolist()
                log(rank, f"step {step:3d} train loss {loss_avg.item():.4f} "
                          f"val loss {s[0] / s[2]:.4f} val acc {s[1] / s[2]:.3f}")

    torch.cuda.synchronize()
    drift = max((p.detach() - rp.detach()).abs().max().item()
                for p, rp in zip(model.parameters(), replica.parameters()))
    if drift > 1e-3:
        wrong += 1
        log(rank, f"WRONG: DDP parameters drifted {drift:.3g} from the reference replica")
    total = total_wrong(wrong, check_pg)
    log(rank, f"done: {wrong} wrong results here, parameter drift from the replica {drift:.3g}")
    dist.destroy_process_group()
    finish(total, show=rank == 0)


if __name__ == "__main__":
    main()
