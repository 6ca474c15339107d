"""Data-parallel training with a throughput monitor on a background thread: every --report-ms
the monitor all-reduces how many samples this rank has processed, for a "samples/s across the
job" log line, while the main thread all-reduces each gradient (one all_reduce per parameter, as
hand-written data parallelism does) and the loss. Two ranks, torch.multiprocessing.spawn.

--bug shared-pg: the monitor all-reduces on the default process group, the one the training loop
  uses. NCCL pairs the k-th call of every rank of a communicator, and the two threads' calls
  interleave by timing, differently on each rank: the monitor's one-element all_reduce pairs with
  the other rank's loss (silently wrong sums) or with a gradient (different sizes: the job hangs
  or corrupts; the driver ends it with a timeout).
--bug none: the monitor has its own process group (dist.new_group, made by the main thread before
  the monitor starts), so its calls pair only with the other monitors'. It finishes with 0 wrong
  results.

Every gradient and loss result is checked against the ranks' contributions all-gathered over a
gloo group (no NCCL call); the monitor's sum must be the sum of the ranks' counts at the same
report index, which each rank derives on its own (a report's count is (index + 1) * 1000 * (rank
+ 1)). Prints "#wrong N"; exit status 0 when N == 0.

  python3 torch_threads.py --port 29640 [--bug none|shared-pg] [--steps 40] [--report-ms 15]
"""
import os
import sys
import threading
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (end_spawned, gather_cpu, log, mismatch, spawn_and_report,  # noqa: E402
                    spawn_parser, torch_env, use_gpu)


class Monitor(threading.Thread):
    """Sums the ranks' processed-sample counts every `period` seconds on `group`."""

    def __init__(self, rank, world, dev, group, period):
        super().__init__(name="throughput-monitor", daemon=True)
        self.rank, self.world, self.dev, self.group, self.period = rank, world, dev, group, period
        self.stop = threading.Event()
        self.reports = 0
        self.wrong = 0

    def run(self):
        torch.cuda.set_device(self.dev)
        while not self.stop.wait(self.period):
            i = self.reports
            seen = torch.tensor([float((i + 1) * 1000 * (self.rank + 1))], device=self.dev)
            dist.all_reduce(seen, group=self.group)
            got = seen.item()
            want = float((i + 1) * 1000 * sum(r + 1 for r in range(self.world)))
            if got != want:
                self.wrong += 1
                log(self.rank, f"WRONG: monitor report {i} summed {got:.6g}, expected {want:.6g}")
            self.reports += 1


def worker(rank, world, args, results):
    torch_env(rank, args.port)  # several ranks on one GPU
    dev = use_gpu(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
    check_pg = dist.new_group(backend="gloo")
    monitor_pg = None if args.bug == "shared-pg" else dist.new_group()

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                          nn.Linear(128, 10)).to(dev)
    for p in model.parameters():
        dist.broadcast(p.data, src=0)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    teacher = torch.randn(64, 10, generator=torch.Generator().manual_seed(7)).to(dev)
    gen = torch.Generator(device=dev).manual_seed(4000 + rank)
    monitor = Monitor(rank, world, dev, monitor_pg, args.report_ms / 1000.0)
    monitor.start()
    wrong = 0

    for step in range(args.steps):
        x = torch.randn(args.batch, 64, device=dev, generator=gen)
        y = (x @ teacher).argmax(dim=1)
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        mine = torch.cat([p.grad.reshape(-1) for p in model.parameters()]
                         + [loss.detach().reshape(1)]).cpu()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        loss_sum = loss.detach().clone()
        dist.all_reduce(loss_sum)

        want = gather_cpu(mine, check_pg, world).sum(dim=0)
        got = torch.cat([p.grad.reshape(-1) * world for p in model.parameters()]
                        + [loss_sum.reshape(1)]).cpu()
        bad, err = mismatch(got, want, world)
        if bad:
            wrong += 1
            log(rank, f"WRONG: step {step} gradients or loss off by {err:.3g}")
        opt.step()
        if rank == 0 and step % 10 == 0:
            log(rank, f"step {step:3d} loss {loss_sum.item() / world:.4f}")
        time.sleep(args.step_ms / 1000.0)  # the rest of a step (data loading, logging)

    monitor.stop.set()
    monitor.join()
    log(rank, f"monitor: {monitor.reports} reports, {monitor.wrong} wrong")
    end_spawned(rank, wrong + monitor.wrong, results)


def main():
    ap = spawn_parser(__doc__, 29640)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--bug", choices=["none", "shared-pg"], default="none")
    ap.add_argument("--report-ms", type=float, default=15)
    ap.add_argument("--step-ms", type=float, default=5)
    args = ap.parse_args()
    spawn_and_report(worker, args)


if __name__ == "__main__":
    main()
