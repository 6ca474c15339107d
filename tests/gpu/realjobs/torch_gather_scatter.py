"""A parameter-server-flavoured loop built from rooted collectives, which PyTorch's NCCL backend
issues as grouped point-to-point calls (scatter, gather) or as rooted NCCL collectives (reduce):
each step rank 0 scatters the ranks' batches, every rank computes its gradients, averages them
with all_reduce, the losses are gathered to rank 0 for its log, and the step's token count is
reduced to rank 0. torch.multiprocessing.spawn, 2 ranks by default.

Without --bug, `ncclrr check` must report nothing.

--bug object-len: the run's settings go out from rank 0 with broadcast_object_list at the start;
  rank 1 builds its (overwritten) list from its own config, which has one entry more: the
  lengths differ, so the object sizes' broadcast pairs different counts.
--bug gather-dst: from --bug-step on, rank 1 reads the logging rank from its own configuration,
  which says 1: its gather names itself the destination while the others name rank 0. Both
  roots wait for sends nobody issues: the job hangs (the driver ends it).

Results are checked against what the ranks contributed over a gloo group (no NCCL call).
Prints "#wrong N"; exit status 0 when N == 0.

  python3 torch_gather_scatter.py --port 29740 [--world 2] [--bug none|gather-dst|object-len]
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (gather_cpu, log, mismatch, spawn_and_report, spawn_parser,  # noqa: E402
                    torch_env, use_gpu)


def worker(rank, world, args, results):
    torch_env(rank, args.port)  # several ranks on one GPU
    dev = use_gpu(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
    check_pg = dist.new_group(backend="gloo")  # the checker's own channel, invisible to NCCL

    # The run's settings, from rank 0 (the others' lists are placeholders of the same length,
    # unless the bug gives rank 1 one entry more).
    settings = ["lr=0.1", "batch=32", "steps=%d" % args.steps]
    if args.bug == "object-len" and rank == 1:
        settings.append("warmup=0")
        log(rank, f"settings list of {len(settings)} entries, rank 0's has 3 (bug)")
    dist.broadcast_object_list(settings, src=0)
    if settings[:3] != ["lr=0.1", "batch=32", "steps=%d" % args.steps]:
        log(rank, f"WRONG: settings after the broadcast: {settings}")

    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(24, 64), nn.Tanh(), nn.Linear(64, 3)).to(dev)
    params = list(model.parameters())
    opt = torch.optim.SGD(params, lr=0.1)
    data = torch.Generator(device=dev).manual_seed(11)  # only rank 0's is used for batches
    wrong = 0

    for step in range(args.steps):
        # Rank 0 draws every rank's batch and scatters them.
        batch = torch.empty(32, 25, device=dev)
        parts = None
        if rank == 0:
            parts = [torch.randn(32, 25, device=dev, generator=data) for _ in range(world)]
        dist.scatter(batch, parts, src=0)
        x, y = batch[:, :24], (batch[:, 24] > 0).long() + (batch[:, 0] > 1).long()

        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        mine = torch.cat([p.grad.reshape(-1) for p in params]).cpu()
        for p in params:
            dist.all_reduce(p.grad)
            p.grad /= world
        want = gather_cpu(mine, check_pg, world).sum(dim=0) / world
        bad, err = mismatch(torch.cat([p.grad.reshape(-1) for p in params]).cpu(), want, world)
        if bad:
            wrong += 1
            log(rank, f"WRONG: step {step} averaged gradients off by {err:.3g}")
        opt.step()

        # The log line: every rank's loss gathered to the logging rank, the token count reduced.
        log_rank = 0
        if args.bug == "gather-dst" and rank == 1 and step >= args.bug_step:
            log_rank = 1
            log(rank, f"step {step}: gathering the losses to rank 1 (bug)")
        losses = [torch.empty(1, device=dev) for _ in range(world)] if rank == log_rank else None
        dist.gather(loss.detach().reshape(1), losses, dst=log_rank)
        tokens = torch.tensor([x.shape[0]], device=dev)
        dist.reduce(tokens, dst=0)
        if rank == 0:
            all_losses = gather_cpu(loss.detach().reshape(1).cpu(), check_pg, world).reshape(-1)
            if not torch.allclose(torch.cat(losses).cpu(), all_losses):
                wrong += 1
                log(rank, f"WRONG: step {step} gathered losses {torch.cat(losses).tolist()}")
            if int(tokens.item()) != 32 * world:
                wrong += 1
                log(rank, f"WRONG: step {step} reduced token count {int(tokens.item())}")
            if step % 5 == 0:
                log(rank, f"step {step:3d} loss {torch.cat(losses).mean().item():.4f}")
        else:
            gather_cpu(loss.detach().reshape(1).cpu(), check_pg, world)

    torch.cuda.synchronize()
    log(rank, f"done: {wrong} wrong results")
    results.put((rank, wrong))
    dist.destroy_process_group()


def main():
    ap = spawn_parser(__doc__, 29740)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--bug", choices=["none", "gather-dst", "object-len"], default="none")
    ap.add_argument("--bug-step", type=int, default=6)
    spawn_and_report(worker, ap.parse_args())


if __name__ == "__main__":
    main()
