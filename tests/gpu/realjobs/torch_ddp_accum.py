"""DistributedDataParallel with gradient accumulation over 4 ranks (torchrun-launched), with the
traffic real loops have around it: the run's settings sent from rank 0 with
`broadcast_object_list`, a BatchNorm model (DDP broadcasts its buffers before every forward),
`no_sync()` on all but the last micro-batch of a step, the loss averaged for the log line, every
--stats-every steps each rank's sample count gathered with `all_gather_object`, and a `barrier`
at the end of the epoch.

Each rank reads its own shard of the data set, `samples[rank::world]`, in batches of --batch; a
step takes --accum batches.

--bug uneven: the data set does not divide evenly: rank 0's shard holds one more step than the
  others' (the classic "uneven inputs" hang: nothing joins the ranks that ran out). Rank 0 starts
  a step the others never take: its buffer broadcast and gradient bucket all-reduces meet the
  others' end-of-epoch `all_gather_object` and `barrier`, and the job hangs; the driver ends it
  with a timeout.
--bug eval-rank0: at --eval-step rank 0 alone runs a quick validation batch through the
  DDP-wrapped model (in eval mode, under no_grad) for its log line. DDP broadcasts the BatchNorm
  buffers before a forward only when training with gradients on, so with PyTorch 2.11 this
  issues no collective: the job is clean (a rank-0-only forward in training mode would hang).
--bug accum-mixed: rank 1's node sets twice the accumulation steps (GRAD_ACCUM in its
  environment, read by the job): it runs 4 micro-batches per step where the others run 2, so its
  third micro-batch's buffer broadcast meets the others' first gradient bucket all-reduce.
--bug none: the data set divides evenly; the job finishes with 0 wrong results.

Independent reference: the loss average of every step is compared with the ranks' losses
all-gathered over a gloo group (no NCCL call). Rank 0 prints "#wrong N"; exit status 0 when
N == 0.

  torchrun --nproc-per-node 4 --master-port 29632 torch_ddp_accum.py [--bug uneven]
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (end_job, gather_cpu, log, off_by, torch_env, torchrun_ranks,  # noqa: E402
                    use_gpu)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=10, help="steps per rank on even data")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--accum", type=int, default=2)
    ap.add_argument("--stats-every", type=int, default=4)
    ap.add_argument("--bug", choices=["uneven", "eval-rank0", "accum-mixed", "none"],
                    default="none")
    ap.add_argument("--eval-step", type=int, default=3)
    args = ap.parse_args()

    rank, world, local_rank = torchrun_ranks()
    torch_env(rank)  # several ranks on one GPU
    dev = use_gpu(local_rank)
    dist.init_process_group("nccl", device_id=dev)
    check_pg = dist.new_group(backend="gloo")
    if args.bug == "accum-mixed" and rank == 1:
        os.environ["GRAD_ACCUM"] = str(2 * args.accum)  # rank 1's node's setting (the bug)
    accum = int(os.environ.get("GRAD_ACCUM", args.accum))

    settings = [{"lr": 0.05, "seed": 11, "classes": 10} if rank == 0 else None]
    dist.broadcast_object_list(settings, src=0)
    cfg = settings[0]

    per_step = args.batch * args.accum
    n = per_step * args.steps * world
    if args.bug == "uneven":  # rank 0's shard gets one more full step, the others' a part of one
        n += (per_step - 1) * world + 1
    g = torch.Generator().manual_seed(cfg["seed"])
    data_x = torch.randn(n, 48, generator=g)
    data_y = (data_x @ torch.randn(48, cfg["classes"], generator=g)).argmax(dim=1)
    shard = torch.arange(n)[rank::world]
    steps = len(shard) // (args.batch * accum)
    log(rank, f"{len(shard)} samples: {steps} steps of {accum} x {args.batch}")

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(48, 96), nn.BatchNorm1d(96), nn.ReLU(),
                          nn.Linear(96, 96), nn.BatchNorm1d(96), nn.ReLU(),
                          nn.Linear(96, cfg["classes"])).to(dev)
    ddp = DDP(model, device_ids=[dev.index], bucket_cap_mb=0.02)  # a few buckets per step
    opt = torch.optim.SGD(ddp.parameters(), lr=cfg["lr"], momentum=0.9)
    wrong = 0
    seen = 0

    for step in range(steps):
        opt.zero_grad()
        losses = []
        for k in range(accum):
            idx = shard[(step * accum + k) * args.batch:(step * accum + k + 1) * args.batch]
            x, y = data_x[idx].to(dev), data_y[idx].to(dev)
            last = k == accum - 1
            if last:
                loss = F.cross_entropy(ddp(x), y) / accum
                loss.backward()  # gradient buckets all-reduced here
            else:
                with ddp.no_sync():
                    loss = F.cross_entropy(ddp(x), y) / accum
                    loss.backward()
            losses.append(loss.detach())
            seen += len(idx)
        opt.step()

        step_loss = torch.stack(losses).sum()
        mine = step_loss.reshape(1).cpu()
        avg = step_loss.clone()
        dist.all_reduce(avg, op=dist.ReduceOp.AVG)
        err, bad = off_by(avg.reshape(1).cpu(), gather_cpu(mine, check_pg, world).mean(dim=0))
        if bad:
            wrong += 1
            log(rank, f"WRONG: step {step} loss average off by {err:.3g}")
        if args.bug == "eval-rank0" and rank == 0 and step == args.eval_step:
            ddp.eval()
            with torch.no_grad():  # the bug: DDP's forward syncs buffers, here on rank 0 only
                val = ddp(data_x[:64].to(dev)).argmax(dim=1)
            ddp.train()
            log(rank, f"step {step}: validation accuracy "
                      f"{(val.cpu() == data_y[:64]).float().mean().item():.3f}")
        if step % args.stats_every == 0:
            counts = [None] * world
            dist.all_gather_object(counts, {"rank": rank, "seen": seen})
            if rank == 0:
                log(rank, f"step {step:3d} loss {avg.item():.4f} samples seen "
                          f"{sum(c['seen'] for c in counts)}")

    counts = [None] * world
    dist.all_gather_object(counts, {"rank": rank, "seen": seen, "steps": steps})
    dist.barrier()
    end_job(rank, wrong, check_pg, f" here; steps per rank {[c['steps'] for c in counts]}")


if __name__ == "__main__":
    main()
