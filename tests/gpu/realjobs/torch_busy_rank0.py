"""A data-parallel training loop written the way many research codebases are, four ranks by
default (torch.multiprocessing.spawn):
  * gradients averaged by hand with async all_reduces, one per parameter, waited for at the end
    of the backward in reverse order (overlap "for speed");
  * rank 0 alone keeps the bookkeeping on the GPU every few steps: gradient norms, a copy of
    some gradients kept for a while (a history of the last few), temporaries of varying size.
    No collective, but rank 0's caching allocator then hands out other addresses than the other
    ranks' for the next steps' gradients;
  * dynamic shapes: each rank has its own number of valid tokens per step; the counts are
    all-gathered, then the values padded to the largest count;
  * a data-order seed broadcast from a rotating rank (step % world);
  * a statistic all-reduced within pairs of ranks (dist.new_group([0, 1]), [2, 3]);
  * every few steps, metrics gathered with all_gather_object (pickled: two all_gathers).
Every one of these is legal: without --bug, `ncclrr check` must report nothing.

--bug swap-same: at --bug-steps rank --bug-rank (2) issues the all_reduces of two same-shape gradients
  (blocks.1.weight and blocks.2.weight, 128x128) in the other order. NCCL pairs the k-th call
  of every rank, so every rank silently gets a blocks.1 + blocks.2 mix: no error, no hang.

Results are checked against what the ranks contributed, all-gathered over a gloo group (no NCCL
call). Prints "#wrong N"; exit status 0 when N == 0.

  python3 torch_busy_rank0.py --port 29700 [--world 4] [--bug none|swap-same] [--bug-steps 6,13]
"""
import collections
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (gather_cpu, log, mismatch, spawn_and_report, spawn_parser,  # noqa: E402
                    torch_env, use_gpu)


class Net(nn.Module):
    def __init__(self, d_in, hidden, depth, n_out):
        super().__init__()
        self.inp = nn.Linear(d_in, hidden)
        self.blocks = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(depth))
        self.out = nn.Linear(hidden, n_out)

    def forward(self, x):
        x = F.gelu(self.inp(x))
        for b in self.blocks:
            x = x + F.gelu(b(x))
        return self.out(x)


def average_gradients(params, order, world):
    """Launch every all_reduce at once, then wait for them newest first."""
    works = []
    for i in order:
        works.append((i, dist.all_reduce(params[i].grad, async_op=True)))
    for i, w in reversed(works):
        w.wait()
        params[i].grad /= world


def bookkeeping(step, params, history, stats):
    """Rank 0's diagnostics: norms, a few gradients kept for a while, scratch of varying size."""
    norms = torch.stack([p.grad.norm() for p in params])
    history.append([p.grad.detach().clone() for p in params[1:4]])
    scratch = torch.randn(4096 + 1024 * (step % 5), device=params[0].device)
    stats.append((norms.max() + scratch.abs().mean() * 0).item())


def worker(rank, world, args, results):
    torch_env(rank, args.port)  # several ranks on one GPU
    dev = use_gpu(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
    check_pg = dist.new_group(backend="gloo")  # the checker's own channel, invisible to NCCL
    pairs = [dist.new_group([r, r + 1]) for r in range(0, world - 1, 2)]
    my_pair = pairs[rank // 2] if rank // 2 < len(pairs) else None

    torch.manual_seed(args.seed)  # every rank builds the same model
    model = Net(64, args.hidden, args.depth, 10).to(dev)
    names = [n for n, _ in model.named_parameters()]
    params = list(model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    gen = torch.Generator(device=dev).manual_seed(100 + rank)
    history = collections.deque(maxlen=3)
    stats = []
    bug_steps = [int(s) for s in args.bug_steps.split(",") if s]
    i_a, i_b = names.index("blocks.1.weight"), names.index("blocks.2.weight")
    wrong = 0

    for step in range(args.steps):
        # The data order of this step comes from one rank, a different one each step.
        seed = torch.randint(0, 1 << 30, (1,), device=dev, generator=gen)
        dist.broadcast(seed, src=step % world)

        x = torch.randn(args.batch, 64, device=dev, generator=gen)
        y = torch.randint(0, 10, (args.batch,), device=dev, generator=gen)
        opt.zero_grad()  # set_to_none: backward allocates fresh gradients
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        mine = torch.cat([p.grad.reshape(-1) for p in params]).cpu()

        if rank == 0 and step % args.book_every == 0:
            bookkeeping(step, params, history, stats)

        order = list(range(len(params)))
        if args.bug == "swap-same" and rank == args.bug_rank and step in bug_steps:
            order[i_a], order[i_b] = order[i_b], order[i_a]
            log(rank, f"step {step}: blocks.2.weight all-reduced before blocks.1.weight (bug)")
        average_gradients(params, order, world)

        # Each rank's valid tokens: counts first, then the values padded to the largest.
        n_valid = int(torch.randint(8, 64, (1,), generator=torch.Generator().manual_seed(
            1000 * step + rank)).item())
        counts = torch.empty(world, dtype=torch.int64, device=dev)
        dist.all_gather_into_tensor(counts, torch.tensor([n_valid], device=dev))
        width = int(counts.max().item())
        tokens = torch.zeros(width, device=dev)
        tokens[:n_valid] = loss.detach()
        gathered = torch.empty(world * width, device=dev)
        dist.all_gather_into_tensor(gathered, tokens)

        if my_pair is not None:
            pair_stat = loss.detach().reshape(1).clone()
            dist.all_reduce(pair_stat, group=my_pair)

        if step % args.metrics_every == 0:
            metrics = [None] * world
            dist.all_gather_object(metrics, {"rank": rank, "step": step, "loss": loss.item(),
                                             "tokens": n_valid, "note": "x" * (rank * 7)})
            if [m["rank"] for m in metrics] != list(range(world)):
                wrong += 1
                log(rank, f"WRONG: step {step} all_gather_object gave {metrics}")

        # Check the averaged gradients against what the ranks contributed.
        want = gather_cpu(mine, check_pg, world).sum(dim=0) / world
        got = torch.cat([p.grad.reshape(-1) for p in params]).cpu()
        off = 0
        for i, p in enumerate(params):
            n = p.numel()
            bad, err = mismatch(got[off:off + n], want[off:off + n], world)
            if bad:
                wrong += 1
                log(rank, f"WRONG: step {step} {names[i]}.grad off by {err:.3g}")
            off += n
        all_counts = gather_cpu(torch.tensor([n_valid]), check_pg, world).reshape(-1)
        if not torch.equal(counts.cpu(), all_counts):
            wrong += 1
            log(rank, f"WRONG: step {step} counts {counts.tolist()}, ranks had {all_counts}")

        opt.step()
        if rank == 0 and step % 5 == 0:
            log(rank, f"step {step:3d} loss {loss.item():.4f} tokens {counts.tolist()}")

    torch.cuda.synchronize()
    log(rank, f"done: {wrong} wrong results")
    results.put((rank, wrong))
    dist.destroy_process_group()


def main():
    ap = spawn_parser(__doc__, 29700)
    ap.set_defaults(world=4)
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--book-every", type=int, default=3)
    ap.add_argument("--metrics-every", type=int, default=4)
    ap.add_argument("--bug", choices=["none", "swap-same"], default="none")
    ap.add_argument("--bug-steps", default="6,13")
    ap.add_argument("--bug-rank", type=int, default=2)
    spawn_and_report(worker, ap.parse_args())


if __name__ == "__main__":
    main()
