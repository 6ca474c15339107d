"""Data-parallel MLP training with hand-written gradient averaging (no DDP), as in tutorials and
older codebases: after loss.backward(), every gradient is all-reduced and divided by the world
size, one collective per parameter, on tensors autograd has just allocated.

Per step (all on the default process group, NCCL):
  * one all_reduce per gradient, in model.parameters() order (8 of them);
  * one all_reduce of the scalar loss, for the log line;
  * every --gather-every steps, an all_gather_into_tensor of each rank's batch accuracy;
and once: a broadcast of every parameter from rank 0 at the start, a barrier at the end.

--bug swap-same: on rank 1, at each of --swap-steps, two gradients of the same shape (fc2.weight and
  fc3.weight, 128x128) are all-reduced in the opposite order. NCCL pairs the k-th call of every
  rank, so both ranks silently get fc2+fc3 and fc3+fc2 mixes: no error, no hang.
--bug swap-diff: the same with fc2.weight (128x128) and fc2.bias (128), once, at the first of
  --swap-steps: different counts are paired, which hangs (or corrupts) on real NCCL.

Wrong results are counted against an independent reference: before its all-reduces each rank
copies what it contributes (gradients, loss, accuracy) to the CPU; the copies are all-gathered
over a separate gloo group (no NCCL call, so the check cannot be misordered with the job's own
calls) and the reduced values compared with their sums. Launched with torch.multiprocessing.spawn:

  python3 torch_grad_loop.py --port 29611 [--bug none|swap-same|swap-diff] [--swap-steps 5,12,20]

Prints per-rank details, then a final line "#wrong N"; exit status 0 when N == 0, else 1.
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


class MLP(nn.Module):
    def __init__(self, d_in, hidden, n_classes):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, hidden)
        self.fc4 = nn.Linear(hidden, n_classes)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = F.relu(self.fc3(x))
        return self.fc4(x)


def worker(rank, world, args, results):
    torch_env(rank, args.port)  # several ranks on one GPU
    dev = use_gpu(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
    check_pg = dist.new_group(backend="gloo")  # the checker's own channel, invisible to NCCL

    d_in, n_classes = 64, 10
    torch.manual_seed(args.seed + rank)  # different on purpose: the broadcast below syncs them
    model = MLP(d_in, args.hidden, n_classes).to(dev)
    names = [n for n, _ in model.named_parameters()]
    params = list(model.parameters())
    seq = 0  # this job's count of its collectives on the default group (NCCL's pairing index)
    wrong = 0

    # Start from rank 0's weights.
    for p in params:
        dist.broadcast(p.data, src=0)
        seq += 1
    flat = torch.cat([p.detach().reshape(-1) for p in params]).cpu()
    everyone = gather_cpu(flat, check_pg, world)
    if not torch.equal(everyone[rank], everyone[0]):
        wrong += 1
        log(rank, "WRONG: parameters differ from rank 0's after the initial broadcast")

    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    teacher = torch.randn(d_in, n_classes, generator=torch.Generator().manual_seed(7)).to(dev)
    gen = torch.Generator(device=dev).manual_seed(1000 + rank)

    i_a, i_b = (names.index(n) for n in args.swap_pair.split(","))
    swap_steps = [int(s) for s in args.swap_steps.split(",") if s != ""]
    if args.bug == "swap-diff":
        swap_steps = swap_steps[:1]
    if args.bug != "none" and rank == 1:
        log(rank, f"bug {args.bug}: will all-reduce {names[i_b]} before {names[i_a]} "
                  f"at steps {swap_steps}")

    for step in range(args.steps):
        x = torch.randn(args.batch, d_in, device=dev, generator=gen)
        y = (x @ teacher).argmax(dim=1)
        opt.zero_grad()  # set_to_none: backward allocates fresh gradient tensors
        out = model(x)
        loss = F.cross_entropy(out, y)
        loss.backward()
        acc = (out.argmax(dim=1) == y).float().mean()

        # The reference: what this rank contributes, copied before any collective touches it.
        mine = torch.cat([p.grad.reshape(-1) for p in params]
                         + [loss.detach().reshape(1), acc.reshape(1)]).cpu()

        order = list(range(len(params)))
        if args.bug != "none" and rank == 1 and step in swap_steps:
            pa, pb = order.index(i_a), order.index(i_b)
            order[pa], order[pb] = order[pb], order[pa]
            log(rank, f"step {step}: {names[order[pa]]} at seq {seq + pa}, "
                      f"{names[order[pb]]} at seq {seq + pb} (swapped)")
        for i in order:
            p = params[i]
            dist.all_reduce(p.grad)
            p.grad /= world
            seq += 1

        loss_sum = loss.detach().clone()
        dist.all_reduce(loss_sum)
        seq += 1
        accs = None
        if step % args.gather_every == 0:
            accs = torch.empty(world, device=dev)
            dist.all_gather_into_tensor(accs, acc.reshape(1))
            seq += 1

        # Check every result against the sum of what the ranks passed.
        contrib = gather_cpu(mine, check_pg, world)
        want = contrib.sum(dim=0)
        off = 0
        for i, p in enumerate(params):
            n = p.numel()
            bad, err = mismatch(p.grad.reshape(-1).cpu(), want[off:off + n] / world, world)
            if bad:
                wrong += 1
                log(rank, f"WRONG: step {step} all_reduce of {names[i]}.grad is off by {err:.3g} "
                          f"from the sum of the ranks' gradients")
            off += n
        bad, err = mismatch(loss_sum.reshape(1).cpu(), want[off:off + 1], world)
        if bad:
            wrong += 1
            log(rank, f"WRONG: step {step} loss all_reduce off by {err:.3g}")
        if accs is not None and not torch.equal(accs.cpu(), contrib[:, off + 1]):
            wrong += 1
            log(rank, f"WRONG: step {step} accuracy all_gather gave {accs.tolist()}, "
                      f"ranks had {contrib[:, off + 1].tolist()}")

        opt.step()
        if rank == 0 and (step % 5 == 0 or step == args.steps - 1):
            log(rank, f"step {step:3d} loss {loss_sum.item() / world:.4f}"
                      + (f" acc {accs.mean().item():.3f}" if accs is not None else ""))

    dist.barrier()
    seq += 1
    torch.cuda.synchronize()
    flat = torch.cat([p.detach().reshape(-1) for p in params]).cpu()
    everyone = gather_cpu(flat, check_pg, world)
    in_sync = all(torch.equal(everyone[r], everyone[0]) for r in range(world))
    log(rank, f"done: {seq} collectives on the default group, {wrong} wrong results, "
              f"parameters {'identical on every rank' if in_sync else 'DIVERGED across ranks'}")
    results.put((rank, wrong))
    dist.destroy_process_group()


def main():
    ap = spawn_parser(__doc__, 29611)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--gather-every", type=int, default=5)
    ap.add_argument("--bug", choices=["none", "swap-same", "swap-diff"], default="none")
    ap.add_argument("--swap-steps", default="5,12,20")
    ap.add_argument("--swap-pair", default=None,
                    help="two parameter names (default fc2.weight,fc3.weight for swap-same, "
                         "fc2.weight,fc2.bias for swap-diff)")
    args = ap.parse_args()
    if args.swap_pair is None:
        args.swap_pair = "fc2.weight,fc2.bias" if args.bug == "swap-diff" else "fc2.weight,fc3.weight"
    spawn_and_report(worker, args)


if __name__ == "__main__":
    main()
