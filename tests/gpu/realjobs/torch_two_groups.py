"""Data-parallel training with two process groups over the same ranks: one for gradient traffic
("grad" group: the gradient all-reduces and the found-inf check that decides whether to skip
the step) and one for metrics ("metrics" group: loss and accuracy for the log line), a common
way to keep logging off the gradient communicator. Both results are read on the host right away
(.item()), as real loops do to skip bad steps and print.

Per step: backward; on the grad group one all_reduce per gradient, then an all_reduce(MAX) of a
found-inf flag, read with .item(); on the metrics group an all_reduce of [loss, correct, count],
read with .item().

--bug opposite (the default): from --bug-step on, rank 1 logs its metrics before syncing its
  gradients (metrics group first, then grad group). Rank 0 waits in the grad group's found-inf
  read for rank 1's gradient calls; rank 1 waits in the metrics read for rank 0's metrics call:
  a deadlock at the first collective of that step, on two communicators. The earlier steps run
  in the right order, so both communicators exist by then. The driver ends it with a timeout.
--bug wrong-group: from --bug-step on, rank 1 (the rank that also writes the metrics file) logs
  through a second helper that forgets `group=`: its metrics all_reduce goes to the default
  (world) process group while rank 0's goes to the metrics group. Each communicator waits for a
  call the other rank issued elsewhere: a hang at that step.
--bug metrics-order: the metrics are all-reduced one by one through a helper, reduce_sum(t),
  called for the loss and then the accuracy; from --bug-step on rank 1 (whose log line puts the
  accuracy first) calls it for the accuracy first. Same shapes: NCCL sums rank 0's loss with
  rank 1's accuracy, silently. With --bug-step 0 only the helper's callers tell the calls apart
  (the buffers sit in the same places at every step).
--bug none: the same job without the reordering; it finishes with 0 wrong results.

Results are checked against the ranks' contributions all-gathered over a separate gloo group.
Launched with torch.multiprocessing.spawn:

  python3 torch_two_groups.py --port 29617 [--bug opposite|wrong-group|metrics-order|none] [--bug-step 3]

Prints a final line "#wrong N" (when it finishes); exit status 0 when N == 0, else 1.
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
    everyone = list(range(world))
    grad_group = dist.new_group(ranks=everyone)
    metrics_group = dist.new_group(ranks=everyone)
    check_pg = dist.new_group(backend="gloo")

    torch.manual_seed(0)  # the same initial weights on every rank
    model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                          nn.Linear(128, 8)).to(dev)
    params = list(model.parameters())
    opt = torch.optim.SGD(params, lr=0.05, momentum=0.9)
    teacher = torch.randn(32, 8, generator=torch.Generator().manual_seed(7)).to(dev)
    gen = torch.Generator(device=dev).manual_seed(2000 + rank)
    wrong = 0

    for step in range(args.steps):
        x = torch.randn(args.batch, 32, device=dev, generator=gen)
        y = (x @ teacher).argmax(dim=1)
        opt.zero_grad()
        out = model(x)
        loss = F.cross_entropy(out, y)
        loss.backward()
        correct = (out.argmax(dim=1) == y).sum().float()
        mine = torch.cat([p.grad.reshape(-1) for p in params]
                         + [loss.detach().reshape(1), correct.reshape(1)]).cpu()

        def sync_gradients():
            found_inf = torch.zeros(1, device=dev)
            for p in params:
                found_inf = torch.maximum(found_inf, (~torch.isfinite(p.grad)).any().float())
                dist.all_reduce(p.grad, group=grad_group)
                p.grad /= world
            dist.all_reduce(found_inf, op=dist.ReduceOp.MAX, group=grad_group)
            return found_inf.item() > 0  # waits for the grad group

        def log_metrics():
            stats = torch.stack([loss.detach(), correct, torch.tensor(float(args.batch), device=dev)])
            dist.all_reduce(stats, group=metrics_group)
            return stats.tolist()  # waits for the metrics group

        def log_metrics_to_file():  # rank 1's path: the same call, without group= (the bug)
            stats = torch.stack([loss.detach(), correct, torch.tensor(float(args.batch), device=dev)])
            dist.all_reduce(stats)
            return stats.tolist()

        def reduce_sum(t):  # the helper every metric goes through
            dist.all_reduce(t, group=metrics_group)
            return t.item()

        if args.bug == "metrics-order":
            skip = sync_gradients()
            loss_sum = loss.detach().clone()
            acc_sum = correct.clone()
            if rank == 1 and step >= args.bug_step:  # the bug: the accuracy first on rank 1
                acc = reduce_sum(acc_sum)
                lsum = reduce_sum(loss_sum)
            else:
                lsum = reduce_sum(loss_sum)
                acc = reduce_sum(acc_sum)
            stats = [lsum, acc, float(args.batch * world)]
        elif args.bug == "wrong-group" and rank == 1 and step >= args.bug_step:
            skip = sync_gradients()
            stats = log_metrics_to_file()
        elif args.bug == "opposite" and rank == 1 and step >= args.bug_step:
            if step == args.bug_step:
                log(rank, f"step {step}: metrics group first, then grad group (bug)")
            stats = log_metrics()
            skip = sync_gradients()
        else:
            skip = sync_gradients()
            stats = log_metrics()

        contrib = gather_cpu(mine, check_pg, world)
        want = contrib.sum(dim=0)
        off = 0
        for i, p in enumerate(params):
            n = p.numel()
            bad, err = mismatch(p.grad.reshape(-1).cpu(), want[off:off + n] / world, world)
            if bad:
                wrong += 1
                log(rank, f"WRONG: step {step} all_reduce of parameter {i}'s gradient off by {err:.3g}")
            off += n
        got = torch.tensor(stats[:2])
        bad, err = mismatch(got, want[off:off + 2], world)
        if bad or stats[2] != float(args.batch * world):
            wrong += 1
            log(rank, f"WRONG: step {step} metrics all_reduce gave {stats}, "
                      f"expected {want[off:off + 2].tolist() + [float(args.batch * world)]}")

        if not skip:
            opt.step()
        if rank == 0 and step % 5 == 0:
            log(rank, f"step {step:3d} loss {stats[0] / world:.4f} acc {stats[1] / stats[2]:.3f}")

    torch.cuda.synchronize()
    log(rank, f"done: {wrong} wrong results")
    results.put((rank, wrong))
    dist.destroy_process_group()


def main():
    ap = spawn_parser(__doc__, 29617)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--bug", choices=["opposite", "wrong-group", "metrics-order", "none"],
                    default="opposite")
    ap.add_argument("--bug-step", type=int, default=3)
    args = ap.parse_args()
    spawn_and_report(worker, args)


if __name__ == "__main__":
    main()
