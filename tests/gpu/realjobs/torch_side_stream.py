"""Data-parallel training that all-reduces its gradients as one flat bucket (torch.cat of every
gradient, one all_reduce, then divide), the loss every step, and uses a side CUDA stream for
work it believes independent: the bucket's gradient norm for the log line. Two ranks,
torch.multiprocessing.spawn.

--bug race: at --bug-steps rank 1 also scales the bucket in place on the side stream (as a
  "pre-divide" for the optimizer), after a short GPU delay, without making the all_reduce wait
  for it. NCCL's stream waits only for the current stream, so the scaling lands while NCCL reads
  the bucket: the sum mixes scaled and unscaled values, and the same code serialised gives
  another result. `ncclrr record --sketch` samples the send buffer before and after the call on
  NCCL's stream and sees it change under the call.
--bug branch: at the first of --bug-steps rank 1 all-reduces a debug scalar (its gradient norm)
  before the bucket, in a branch only it takes: NCCL pairs it with rank 0's bucket (different
  sizes), and the job hangs; the driver ends it with a timeout.
--bug crash: at the first of --bug-steps rank 1 raises (as an out-of-memory error in its
  backward would) before the bucket's all_reduce: rank 0 waits in that all_reduce until the
  launcher, seeing rank 1 fail, ends it.
--bug killed: at the first of --bug-steps rank 1 is killed outright (SIGKILL, as the kernel's
  out-of-memory killer ends a process: no exception, no exit handlers) before the bucket's
  all_reduce: its trace is cut where it was last flushed.
--bug none: the same loop without either; it finishes with 0 wrong results.

Results are checked against the ranks' contributions (the bucket as it was when the all_reduce
was issued) all-gathered over a gloo group (no NCCL call). Prints "#wrong N"; exit status 0 when
N == 0.

  python3 torch_side_stream.py --port 29633 [--bug none|race|branch] [--bug-steps 3,6,9,12,15]
"""
import datetime
import os
import signal
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (end_spawned, gather_cpu, log, mismatch, spawn_and_report,  # noqa: E402
                    spawn_parser, torch_env, use_gpu)


def worker(rank, world, args, results):
    torch_env(rank, args.port)  # several ranks on one GPU
    dev = use_gpu(rank)
    # --pg-timeout: PyTorch's watchdog aborts a collective that has not finished in time (the
    # default is 10 minutes) and ends the process, as hung production jobs end.
    timeout = {"timeout": datetime.timedelta(seconds=args.pg_timeout)} if args.pg_timeout else {}
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev, **timeout)
    check_pg = dist.new_group(backend="gloo")
    bug_steps = [int(s) for s in args.bug_steps.split(",") if s]

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10)).to(dev)
    params = list(model.parameters())
    opt = torch.optim.SGD(params, lr=0.05)
    side = torch.cuda.Stream(device=dev)
    teacher = torch.randn(64, 10, generator=torch.Generator().manual_seed(7)).to(dev)
    gen = torch.Generator(device=dev).manual_seed(4000 + rank)
    wrong = 0

    for step in range(args.steps):
        x = torch.randn(args.batch, 64, device=dev, generator=gen)
        y = (x @ teacher).argmax(dim=1)
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        bucket = torch.cat([p.grad.reshape(-1) for p in params])
        mine = bucket.cpu()  # what this rank contributes (synchronises the current stream)
        norm = torch.zeros(1, device=dev)
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # the log line's norm, off the critical path
            norm += bucket.norm()
            if args.bug == "race" and rank == 1 and step in bug_steps:
                torch.cuda._sleep(args.delay_cycles)
                bucket.mul_(0.5)  # the bug: writes the bucket the all_reduce is reading
        if args.bug == "branch" and rank == 1 and step == bug_steps[0]:
            log(rank, f"step {step}: all-reduces a debug scalar first (bug)")
            debug = norm.clone()
            torch.cuda.current_stream().wait_stream(side)
            dist.all_reduce(debug)
        if args.bug == "crash" and rank == 1 and step == bug_steps[0]:
            raise RuntimeError(f"step {step}: CUDA out of memory (raised by the job, bug)")
        if args.bug == "killed" and rank == 1 and step == bug_steps[0]:
            log(rank, f"step {step}: killed (SIGKILL, bug)")
            os.kill(os.getpid(), signal.SIGKILL)
        dist.all_reduce(bucket)
        torch.cuda.current_stream().wait_stream(side)
        bucket /= world
        loss_sum = loss.detach().clone()
        dist.all_reduce(loss_sum)

        want = gather_cpu(mine, check_pg, world).sum(dim=0) / world
        bad, err = mismatch(bucket.cpu(), want, world)
        if bad:
            wrong += 1
            log(rank, f"WRONG: step {step} gradient bucket all_reduce off by {err:.3g}")
        off = 0
        for p in params:
            p.grad.copy_(bucket[off:off + p.numel()].view_as(p))
            off += p.numel()
        opt.step()
        if rank == 0 and step % 5 == 0:
            log(rank, f"step {step:3d} loss {loss_sum.item() / world:.4f} grad norm {norm.item():.3f}")

    end_spawned(rank, wrong, results)


def main():
    ap = spawn_parser(__doc__, 29633)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--bug", choices=["none", "race", "branch", "crash", "killed"],
                    default="none")
    ap.add_argument("--bug-steps", default="3,6,9,12,15")
    ap.add_argument("--delay-cycles", type=int, default=200000)
    ap.add_argument("--pg-timeout", type=float, default=0, help="seconds; 0: PyTorch's default")
    args = ap.parse_args()
    spawn_and_report(worker, args)


if __name__ == "__main__":
    main()
