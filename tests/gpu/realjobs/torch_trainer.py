"""A DDP trainer shaped like the ones people write by hand (torchrun-launched): a training loop
that logs the loss averaged across ranks, an evaluate() that walks this rank's shard of the
validation set in batches and all-reduces the running sums after every batch (for a progress
line), and a save_checkpoint() every --ckpt-every steps that rank 0 writes while the others wait
at a barrier.

--bug uneven-eval: the validation set (129 samples) is sharded by `samples[rank::world]`, so rank
  0's shard holds one batch more than rank 1's: rank 0's last per-batch all_reduce meets rank 1's
  next collective (the first gradient bucket of the next step).
--bug rank0-barrier: the barrier sits inside `if rank == 0:` with the save, so only rank 0 calls
  it: its barrier meets the other rank's next collective.
--bug dcp-rank0: the checkpoint is written with torch.distributed.checkpoint (dcp.save), which
  every rank must call (it plans the save collectively), but the code kept the `if rank == 0:` of
  its torch.save days: rank 0's planning collectives meet the other rank's next step.
--bug none: an even validation set and the barrier outside the branch; 0 wrong results. With
  --ckpt dcp every rank calls dcp.save (no barrier needed). With --loader-workers W the training
  batches come from a DataLoader over a DistributedSampler with W worker processes (forked from
  the rank after its communicator exists, as DataLoader does on Linux).

Independent reference: the ranks' local gradients (under no_sync) and metric sums are
all-gathered over a gloo group (no NCCL call) and compared with what DDP and the all_reduces gave.

  torchrun --nproc-per-node 2 --master-port 29670 torch_trainer.py [--bug none]

Rank 0 prints a final line "#wrong N" (all ranks' wrong results); exit status 0 when N == 0.
"""
import argparse
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (end_job, gather_cpu, log, off_by, torch_env, torchrun_ranks,  # noqa: E402
                    use_gpu)


def evaluate(ddp, val_x, val_y, batch, check_pg, world, rank):
    """Per-batch all_reduce of (loss sum, correct, count); returns how many sums were wrong."""
    ddp.eval()
    wrong = 0
    totals = torch.zeros(3, device=val_x.device)
    with torch.no_grad():
        for i in range(0, val_x.shape[0], batch):
            out = ddp(val_x[i:i + batch])
            y = val_y[i:i + batch]
            sums = torch.stack([F.cross_entropy(out, y, reduction="sum"),
                                (out.argmax(dim=1) == y).sum().float(),
                                torch.tensor(float(y.numel()), device=out.device)])
            local = sums.cpu()
            dist.all_reduce(sums)  # running sums across ranks, for the progress line
            totals += sums
            want = gather_cpu(local, check_pg, world).sum(dim=0)
            err, bad = off_by(sums.cpu(), want, rtol=1e-5 * world)
            if bad:
                wrong += 1
                log(rank, f"WRONG: eval batch {i // batch} sums {sums.tolist()}, "
                          f"expected {want.tolist()}")
    ddp.train()
    return wrong, totals


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--eval-every", type=int, default=4)
    ap.add_argument("--ckpt-every", type=int, default=6)
    ap.add_argument("--bug", choices=["none", "uneven-eval", "rank0-barrier", "dcp-rank0"],
                    default="none")
    ap.add_argument("--ckpt", choices=["torch", "dcp"], default="torch")
    ap.add_argument("--loader-workers", type=int, default=0)
    args = ap.parse_args()

    rank, world, local_rank = torchrun_ranks()
    torch_env(rank)
    dev = use_gpu(local_rank)
    dist.init_process_group("nccl", device_id=dev)
    check_pg = dist.new_group(backend="gloo")
    ckpt_dir = tempfile.mkdtemp(prefix="trainer-ckpt-") if rank == 0 else None
    # dcp.save writes one directory from every rank: the same path on all of them.
    dcp_dir = os.path.join(tempfile.gettempdir(), f"trainer-dcp-{os.environ['MASTER_PORT']}")
    if args.bug == "dcp-rank0":
        args.ckpt = "dcp"

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                          nn.Linear(128, 10)).to(dev)
    ddp = DDP(model, device_ids=[dev.index])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    teacher = torch.randn(32, 10, generator=torch.Generator().manual_seed(7)).to(dev)
    n_val = 129 if args.bug == "uneven-eval" else 128
    every_x = torch.randn(n_val, 32, generator=torch.Generator().manual_seed(11)).to(dev)
    val_x = every_x[rank::world]  # this rank's shard
    val_y = (val_x @ teacher).argmax(dim=1)
    gen = torch.Generator(device=dev).manual_seed(500 + rank)
    loader = None
    if args.loader_workers:
        train_x = torch.randn(args.steps * args.batch * world, 32,
                              generator=torch.Generator().manual_seed(13))
        data = torch.utils.data.TensorDataset(train_x)
        sampler = torch.utils.data.distributed.DistributedSampler(data, shuffle=True, seed=3)
        loader = iter(torch.utils.data.DataLoader(data, batch_size=args.batch, sampler=sampler,
                                                  num_workers=args.loader_workers))
    wrong = 0

    for step in range(args.steps):
        if loader is not None:
            x = next(loader)[0].to(dev, non_blocking=True)
        else:
            x = torch.randn(args.batch, 32, device=dev, generator=gen)
        y = (x @ teacher).argmax(dim=1)
        opt.zero_grad()
        with ddp.no_sync():  # this rank's own gradient, for the reference
            F.cross_entropy(ddp(x), y).backward()
        mine = torch.cat([p.grad.reshape(-1) for p in model.parameters()]).cpu()
        opt.zero_grad()
        loss = F.cross_entropy(ddp(x), y)
        loss.backward()  # DDP all-reduces the gradient buckets
        avg = loss.detach().clone()
        dist.all_reduce(avg, op=dist.ReduceOp.AVG)
        want = gather_cpu(mine, check_pg, world).mean(dim=0)
        err, bad = off_by(torch.cat([p.grad.reshape(-1) for p in model.parameters()]).cpu(), want)
        if bad:
            wrong += 1
            log(rank, f"WRONG: step {step} DDP gradients off by {err:.3g} from the mean")
        opt.step()
        if rank == 0:
            log(rank, f"step {step:3d} loss {avg.item():.4f}")

        if (step + 1) % args.eval_every == 0:
            bad_sums, totals = evaluate(ddp, val_x, val_y, args.batch, check_pg, world, rank)
            wrong += bad_sums
            if rank == 0:
                t = totals.tolist()
                log(rank, f"step {step:3d} val loss {t[0] / t[2]:.4f} acc {t[1] / t[2]:.3f}")
        if (step + 1) % args.ckpt_every == 0 and args.ckpt == "dcp":
            if args.bug != "dcp-rank0" or rank == 0:  # the bug: a rank-0 branch around it
                dcp.save({"model": model.state_dict()},
                         checkpoint_id=os.path.join(dcp_dir, f"step{step + 1}"))
        elif (step + 1) % args.ckpt_every == 0:
            if rank == 0:
                torch.save(model.state_dict(), os.path.join(ckpt_dir, f"step{step + 1}.pt"))
                if args.bug == "rank0-barrier":
                    dist.barrier()  # the bug: only rank 0 gets here
            if args.bug != "rank0-barrier":
                dist.barrier()

    end_job(rank, wrong, check_pg)


if __name__ == "__main__":
    main()
