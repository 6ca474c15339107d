"""Data-parallel training with hand-written gradient averaging and its own process groups, with
two setup bugs seen in real training scripts. Launched with torchrun (2 ranks):

  torchrun --nproc-per-node 2 torch_setup_bugs.py [--bug none|bcast-src|group-order]
  (or 4 processes)

The job builds a "grad" group (gradient all-reduces and a found-inf check) and a "metrics"
group (loss and accuracy for the log line) over all ranks, syncs the initial weights from rank
0 with a broadcast per parameter, then trains.

--bug bcast-src: the initial weights are broadcast with src=rank ("my rank") instead of 0: every
  rank claims to be the root. NCCL pairs the broadcasts anyway; what each rank ends up with is
  whatever NCCL makes of it (a hang or unsynced weights).
--bug group-order: the groups are made by iterating a set of names, {"grad", "metrics"}, whose
  order is Python's string hashing, random per process unless PYTHONHASHSEED is set. PyTorch
  pairs process groups by the order they are created, so on a rank that walks the set the other
  way its "grad" group is the other ranks' "metrics" group. For a repeatable run each process
  re-executes itself with a PYTHONHASHSEED that walks the set in the order that process's rank
  gets (the last rank metrics first, the others grad first).
--bug none: the groups made from a sorted list, the broadcast from rank 0; finishes with 0 wrong.

Results are checked against the ranks' contributions all-gathered over a gloo group. Prints a
final line "#wrong N" (when it finishes); exit status 0 when N == 0, else 1.
"""
import argparse
import os
import subprocess
import sys

GROUP_NAMES = ("grad", "metrics")


def seed_walking(order):
    """A PYTHONHASHSEED under which this Python walks set(GROUP_NAMES) in `order`."""
    probe = "print(','.join({" + ",".join(repr(n) for n in GROUP_NAMES) + "}))"
    for seed in range(64):
        got = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                             env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout.strip()
        if got == ",".join(order):
            return str(seed)
    raise SystemExit(f"no PYTHONHASHSEED below 64 walks the set as {order}")


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--bug", choices=["none", "bcast-src", "group-order"], default="none")
    return ap.parse_args()


ARGS = parse()
if ARGS.bug == "group-order" and "NCCLRR_JOB_HASHSEED_SET" not in os.environ:
    # The last rank walks the set the other way (with 2 ranks: rank 1).
    last = int(os.environ.get("RANK", "0")) == int(os.environ.get("WORLD_SIZE", "1")) - 1
    order = tuple(reversed(GROUP_NAMES)) if last else GROUP_NAMES
    os.environ["PYTHONHASHSEED"] = seed_walking(order)
    os.environ["NCCLRR_JOB_HASHSEED_SET"] = "1"
    os.execv(sys.executable, [sys.executable] + sys.argv)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (end_job, gather_cpu, log, off_by, torch_env, torchrun_ranks,  # noqa: E402
                    use_gpu)


def make_groups(rank, world):
    everyone = list(range(world))
    names = set(GROUP_NAMES) if ARGS.bug == "group-order" else sorted(GROUP_NAMES)
    groups = {}
    for name in names:  # PyTorch pairs groups by creation order
        groups[name] = dist.new_group(ranks=everyone)
    log(rank, f"process groups made in the order {list(groups)}")
    return groups


def main():
    rank, world, local_rank = torchrun_ranks()
    torch_env(rank)  # several ranks on one GPU
    dev = use_gpu(local_rank)
    dist.init_process_group("nccl", device_id=dev)
    groups = make_groups(rank, world)
    check_pg = dist.new_group(backend="gloo")

    torch.manual_seed(1234 + rank)  # each rank's own initial weights: the broadcast syncs them
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10)).to(dev)
    params = list(model.parameters())
    src = rank if ARGS.bug == "bcast-src" else 0
    for p in params:
        dist.broadcast(p.data, src=src)
    wrong = 0
    first = torch.cat([p.detach().reshape(-1) for p in params]).cpu()
    every = gather_cpu(first, check_pg, world)
    if not all(torch.equal(every[0], every[r]) for r in range(world)):
        wrong += 1
        log(rank, "WRONG: the initial weights differ across ranks after the broadcast")

    opt = torch.optim.SGD(params, lr=0.05, momentum=0.9)
    teacher = torch.randn(64, 10, generator=torch.Generator().manual_seed(7)).to(dev)
    gen = torch.Generator(device=dev).manual_seed(4000 + rank)
    for step in range(ARGS.steps):
        x = torch.randn(ARGS.batch, 64, device=dev, generator=gen)
        y = (x @ teacher).argmax(dim=1)
        opt.zero_grad()
        out = model(x)
        loss = F.cross_entropy(out, y)
        loss.backward()
        mine = torch.cat([p.grad.reshape(-1) for p in params]).cpu()
        found_inf = torch.zeros(1, device=dev)
        for p in params:
            found_inf = torch.maximum(found_inf, (~torch.isfinite(p.grad)).any().float())
            dist.all_reduce(p.grad, group=groups["grad"])
            p.grad /= world
        dist.all_reduce(found_inf, op=dist.ReduceOp.MAX, group=groups["grad"])
        stats = torch.stack([loss.detach(), (out.argmax(dim=1) == y).sum().float()])
        local = stats.cpu()
        dist.all_reduce(stats, group=groups["metrics"])

        want = gather_cpu(mine, check_pg, world).mean(dim=0)
        off = 0
        for i, p in enumerate(params):
            n = p.numel()
            err, bad = off_by(p.grad.reshape(-1).cpu(), want[off:off + n])
            if bad:
                wrong += 1
                log(rank, f"WRONG: step {step} all_reduce of parameter {i}'s gradient off by "
                          f"{err:.3g}")
            off += n
        want_stats = gather_cpu(local, check_pg, world).sum(dim=0)
        err, bad = off_by(stats.cpu(), want_stats)
        if bad:
            wrong += 1
            log(rank, f"WRONG: step {step} metrics all_reduce gave {stats.tolist()}, expected "
                      f"{want_stats.tolist()}")
        if found_inf.item() == 0:
            opt.step()
        if rank == 0 and step % 5 == 0:
            s = stats.tolist()
            log(rank, f"step {step:3d} loss {s[0] / world:.4f} acc {s[1] / (ARGS.batch * world):.3f}")

    end_job(rank, wrong, check_pg, " here")


if __name__ == "__main__":
    main()
