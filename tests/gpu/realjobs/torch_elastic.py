"""DistributedDataParallel training under torchrun's fault tolerance (`--max-restarts`): the
job saves a checkpoint every --ckpt-every steps and, when torchrun starts it again after a
failure, resumes from the last one. The ranks of the new attempt are new processes with new
communicators, recorded into the same trace directory as the failed attempt.

--bug crash: in the first attempt (TORCHELASTIC_RESTART_COUNT 0) rank 1 raises at --bug-step
  before its backward pass, as a process hit by a hardware fault does ("uncorrectable ECC error").
  Rank 0 waits in its gradient all_reduce until torchrun stops it; torchrun then restarts both
  ranks, which resume from the checkpoint and finish: the job succeeds.
--bug none: no failure, no restart.

Independent reference: each rank's local gradients are all-gathered over a gloo group (no NCCL
call), averaged on the CPU and compared with what DDP left in .grad; the loss average likewise.

  torchrun --nproc-per-node 2 --max-restarts 1 --master-port 29660 torch_elastic.py --ckpt DIR

Rank 0 prints a final line "#wrong N" (the last attempt's wrong results); exit 0 when N == 0.
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
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--ckpt", required=True, help="checkpoint directory (shared by the attempts)")
    ap.add_argument("--ckpt-every", type=int, default=4)
    ap.add_argument("--bug", choices=["none", "crash"], default="none")
    ap.add_argument("--bug-step", type=int, default=6)
    args = ap.parse_args()

    rank, world, local_rank = torchrun_ranks()
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    torch_env(rank)
    dev = use_gpu(local_rank)
    dist.init_process_group("nccl", device_id=dev)
    check_pg = dist.new_group(backend="gloo")

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 8)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    start = 0
    path = os.path.join(args.ckpt, "last.pt")
    if os.path.exists(path):
        state = torch.load(path, map_location=dev)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["step"]
        log(rank, f"attempt {attempt}: resuming from the checkpoint of step {start}")
    ddp = DDP(model, device_ids=[dev.index])

    teacher = torch.randn(64, 8, generator=torch.Generator().manual_seed(7)).to(dev)
    wrong = 0
    for step in range(start, args.steps):
        gen = torch.Generator(device=dev).manual_seed(1000 * step + rank)  # resumable data
        x = torch.randn(args.batch, 64, device=dev, generator=gen)
        y = (x @ teacher).argmax(dim=1)
        if args.bug == "crash" and attempt == 0 and rank == 1 and step == args.bug_step:
            log(rank, f"step {step}: simulated hardware fault (bug)")
            raise RuntimeError("CUDA error: uncorrectable ECC error encountered")
        # This rank's own gradient, for the reference: no_sync keeps DDP from averaging it.
        opt.zero_grad()
        with ddp.no_sync():
            local_loss = F.cross_entropy(ddp(x), y)
            local_loss.backward()
        mine = torch.cat([p.grad.reshape(-1) for p in model.parameters()]
                         + [local_loss.detach().reshape(1)])
        opt.zero_grad()
        loss = F.cross_entropy(ddp(x), y)
        loss.backward()  # DDP all-reduces the gradient buckets here
        loss_avg = loss.detach().clone()
        dist.all_reduce(loss_avg, op=dist.ReduceOp.AVG)

        want = gather_cpu(mine.cpu(), check_pg, world).mean(dim=0)
        got = torch.cat([p.grad.reshape(-1) for p in model.parameters()]
                        + [loss_avg.reshape(1)]).cpu()
        err, bad = off_by(got, want)
        if bad:
            wrong += 1
            log(rank, f"WRONG: step {step} gradients or loss off by {err:.3g} from the mean")
        opt.step()
        if rank == 0:
            log(rank, f"attempt {attempt} step {step:3d} loss {loss_avg.item():.4f}")
        if (step + 1) % args.ckpt_every == 0:
            if rank == 0:
                os.makedirs(args.ckpt, exist_ok=True)
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(),
                            "step": step + 1}, path + ".tmp")
                os.replace(path + ".tmp", path)
            dist.barrier()

    end_job(rank, wrong, check_pg, f" (attempt {attempt})")


if __name__ == "__main__":
    main()
