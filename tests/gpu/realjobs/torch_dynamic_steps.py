"""Training whose steps issue a varying number of collectives, agreed across the ranks the way
careful code agrees them (torch.multiprocessing.spawn, 2 ranks by default):
  * gradient accumulation over a data-dependent number of micro-batches: each rank proposes a
    count from its own batch, the counts are all-reduced with MAX, every rank runs that many;
  * a token exchange in rounds of all_to_all_single: each rank's overflow decides how many rounds
    it needs, the rounds are agreed with an all_reduce(MAX) first;
  * gradients averaged once per step, one all_reduce per parameter;
  * early stopping: every few steps the ranks all-reduce a "stop" flag (MAX) and leave together.
Steps therefore differ in length, and every rank's are alike: without --bug, `ncclrr check` must
report nothing.

--bug local-rounds: from --bug-step on, rank 1 runs as many exchange rounds as its own overflow
  needs, not the agreed count: where it needs fewer, its next calls (the gradients) meet the
  other ranks' extra all_to_alls; the job hangs or corrupts (the driver ends it).
--bug local-stop: every rank decides early stopping from its own validation loss, without the
  flag's all_reduce; rank 1's stops improving sooner: it leaves the loop after --bug-step, the
  other ranks wait in their next step's first collective (the driver ends the job).

Results are checked against what the ranks contributed, all-gathered over a gloo group (no NCCL
call). Prints "#wrong N"; exit status 0 when N == 0.

  python3 torch_dynamic_steps.py --port 29720 [--world 2] [--bug none|local-rounds|local-stop]
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


def agreed_max(value, dev):
    """The largest of the ranks' values (every rank calls this)."""
    t = torch.tensor([value], dtype=torch.int64, device=dev)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return int(t.item())


def exchange_tokens(tokens, rounds, world):
    """Send `tokens` round by round: each round every rank sends one chunk to every rank."""
    out = []
    for r in range(rounds):
        chunk = tokens[r % tokens.shape[0]].repeat(world)
        recv = torch.empty_like(chunk)
        dist.all_to_all_single(recv, chunk)
        out.append(recv)
    return out


def worker(rank, world, args, results):
    torch_env(rank, args.port)  # several ranks on one GPU
    dev = use_gpu(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
    check_pg = dist.new_group(backend="gloo")  # the checker's own channel, invisible to NCCL

    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(32, 96), nn.ReLU(), nn.Linear(96, 96), nn.ReLU(),
                          nn.Linear(96, 4)).to(dev)
    params = list(model.parameters())
    opt = torch.optim.SGD(params, lr=0.05)
    local = torch.Generator().manual_seed(500 + rank)  # this rank's own data decisions
    gen = torch.Generator(device=dev).manual_seed(700 + rank)
    wrong = 0

    for step in range(args.steps):
        # Micro-batches: each rank proposes its own count, all run the largest.
        wanted = int(torch.randint(1, 4, (1,), generator=local).item())
        n_micro = agreed_max(wanted, dev)
        opt.zero_grad()
        for _ in range(n_micro):
            x = torch.randn(16, 32, device=dev, generator=gen)
            y = torch.randint(0, 4, (16,), device=dev, generator=gen)
            (F.cross_entropy(model(x), y) / n_micro).backward()

        # Token exchange: the rounds this rank's overflow needs, agreed (or not, the bug).
        need = int(torch.randint(1, 5, (1,), generator=local).item())
        rounds = agreed_max(need, dev)
        if args.bug == "local-rounds" and rank == 1 and step >= args.bug_step and need != rounds:
            log(rank, f"step {step}: {need} exchange rounds, the others {rounds} (bug)")
            rounds = need
        tokens = torch.full((4, 8), float(rank + 1), device=dev) * (step + 1)
        got = exchange_tokens(tokens, rounds, world)
        for r, recv in enumerate(got):
            want = torch.cat([torch.full((8,), float(p + 1) * (step + 1), device=dev)
                              for p in range(world)])
            if not torch.equal(recv, want):
                wrong += 1
                log(rank, f"WRONG: step {step} exchange round {r} received {recv[:3].tolist()}..")
                break

        mine = torch.cat([p.grad.reshape(-1) for p in params]).cpu()
        for p in params:
            dist.all_reduce(p.grad)
            p.grad /= world
        want = gather_cpu(mine, check_pg, world).sum(dim=0) / world
        got_g = torch.cat([p.grad.reshape(-1) for p in params]).cpu()
        bad, err = mismatch(got_g, want, world)
        if bad:
            wrong += 1
            log(rank, f"WRONG: step {step} averaged gradients off by {err:.3g}")
        opt.step()

        # Early stopping, decided together every few steps (or alone, the bug).
        if step % args.stop_every == args.stop_every - 1:
            # (A stand-in for "the validation loss stopped improving": rank 1's sooner.)
            stop_here = step >= (args.bug_step if rank == 1 else args.stop_after)
            if args.bug == "local-stop":
                if stop_here:
                    log(rank, f"step {step}: stopping early, decided alone (bug)")
                    break
                continue
            if agreed_max(int(stop_here), dev):
                log(rank, f"step {step}: stopping early, agreed")
                break

    torch.cuda.synchronize()
    log(rank, f"done: {wrong} wrong results")
    results.put((rank, wrong))
    dist.destroy_process_group()


def main():
    ap = spawn_parser(__doc__, 29720)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--stop-every", type=int, default=4)
    ap.add_argument("--stop-after", type=int, default=22)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--bug", choices=["none", "local-rounds", "local-stop"], default="none")
    ap.add_argument("--bug-step", type=int, default=9)
    spawn_and_report(worker, ap.parse_args())


if __name__ == "__main__":
    main()
