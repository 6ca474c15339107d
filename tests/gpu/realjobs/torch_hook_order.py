"""Data-parallel training that all-reduces each gradient the moment autograd has it (a
post-accumulate-grad hook per parameter, async all_reduce, waited for before the optimizer step),
the way overlap-minded training code does. The model has two branches of the same shape (two
128x128 linear layers) whose outputs are summed. Two ranks, torch.multiprocessing.spawn.

--bug order: rank 1 evaluates the branches in the other order (a rank-dependent code path, e.g.
  a different expert or cache schedule), so autograd produces their gradients in the other order
  and the hooks all-reduce left.weight where rank 0 all-reduces right.weight (same sizes): every
  step, both ranks silently get left+right mixes. No error, no hang, wrong training.
--bug none: the same order on both ranks; it finishes with 0 wrong results.

Results are checked against the ranks' gradients all-gathered over a gloo group (no NCCL call).
Prints "#wrong N"; exit status 0 when N == 0.

  python3 torch_hook_order.py --port 29634 [--bug none|order]
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


class TwoBranch(nn.Module):
    def __init__(self, reverse):
        super().__init__()
        self.inp = nn.Linear(32, 128)
        self.left = nn.Linear(128, 128)
        self.right = nn.Linear(128, 128)
        self.head = nn.Linear(128, 10)
        self.reverse = reverse

    def forward(self, x):
        h = F.relu(self.inp(x))
        if self.reverse:  # the bug: rank-dependent evaluation order
            r = self.right(h)
            l = self.left(h)
        else:
            l = self.left(h)
            r = self.right(h)
        return self.head(F.relu(l) + F.relu(r))


def worker(rank, world, args, results):
    torch_env(rank, args.port)  # several ranks on one GPU
    dev = use_gpu(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
    check_pg = dist.new_group(backend="gloo")

    torch.manual_seed(0)
    model = TwoBranch(reverse=args.bug == "order" and rank == 1).to(dev)
    names = [n for n, _ in model.named_parameters()]
    params = list(model.parameters())
    opt = torch.optim.SGD(params, lr=0.05)
    pending = []  # (parameter index, work) in the order the hooks fired
    sent = {}     # parameter index -> this rank's gradient, as handed to all_reduce

    def hook_for(i):
        def hook(p):
            sent[i] = p.grad.detach().cpu()
            pending.append((i, dist.all_reduce(p.grad, async_op=True)))
        return hook

    for i, p in enumerate(params):
        p.register_post_accumulate_grad_hook(hook_for(i))
    teacher = torch.randn(32, 10, generator=torch.Generator().manual_seed(7)).to(dev)
    gen = torch.Generator(device=dev).manual_seed(6000 + rank)
    wrong = 0

    for step in range(args.steps):
        x = torch.randn(args.batch, 32, device=dev, generator=gen)
        y = (x @ teacher).argmax(dim=1)
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        if step == 0:
            log(rank, "gradients all-reduced in the order " + ", ".join(names[i] for i, _ in pending))
        for _, work in pending:
            work.wait()
        for i, p in enumerate(params):
            want = gather_cpu(sent[i].reshape(-1), check_pg, world).sum(dim=0)
            bad, err = mismatch(p.grad.reshape(-1).cpu(), want, world)
            if bad:
                wrong += 1
                if step < 2:
                    log(rank, f"WRONG: step {step} all_reduce of {names[i]}.grad off by {err:.3g}")
            p.grad /= world
        pending.clear()
        opt.step()
        loss_sum = loss.detach().clone()
        dist.all_reduce(loss_sum)
        if rank == 0 and step % 5 == 0:
            log(rank, f"step {step:3d} loss {loss_sum.item() / world:.4f}")

    end_spawned(rank, wrong, results)


def main():
    ap = spawn_parser(__doc__, 29634)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--bug", choices=["none", "order"], default="none")
    args = ap.parse_args()
    spawn_and_report(worker, args)


if __name__ == "__main__":
    main()
