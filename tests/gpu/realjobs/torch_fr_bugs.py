"""A PyTorch training loop with PyTorch's Flight Recorder on, for the dumps `ncclrr import-fr`
reads: the bug classes `ncclrr check` knows, made the way training code makes them.

Per step, on the default process group (NCCL): forward/backward of a small MLP, one all_reduce
per gradient (fresh autograd tensors), an all_reduce of the loss, every 4 steps an
all_gather_into_tensor of the accuracy; a broadcast of the parameters at the start.

--bug (on rank 1, at --bug-step):
  none        clean
  swap-same   fc2.weight and fc3.weight (same shape) all-reduced in the opposite order: wrong sums
  swap-diff   fc2.bias before fc2.weight (different sizes): hangs
  count       the loss all-reduced as a 3-element tensor (2 extra elements): hangs or corrupts
  dtype       the loss all-reduced in float64 instead of float32: hangs or corrupts
  op          the loss all-reduced with MAX instead of SUM: wrong sums, no hang
  missing     the loss all_reduce skipped: hangs
  root        the parameter broadcast of step --bug-step's refresh from root 1 instead of 0
  two-groups  a second group used before the default one on rank 1 only: deadlock

The Flight Recorder is configured by the caller's environment (TORCH_NCCL_TRACE_BUFFER_SIZE,
TORCH_NCCL_DUMP_ON_TIMEOUT, TORCH_FR_DUMP_TEMP_FILE). A job that ends writes its own dumps:
pickle to $FR_DIR/nccl_trace_rank_R and JSON to $FR_JSON_DIR/nccl_trace_rank_R (a folder of its
own: fr_trace reads every file under the dump folder as pickle). A hung job is
ended by the watchdog after --timeout-s, which dumps on its own when asked to.

  python3 torch_fr_bugs.py --port 29711 --bug swap-same
"""
import datetime
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import log, spawn_parser, torch_env, use_gpu  # noqa: E402


def dump_flight_recorder(rank):
    """Write this rank's Flight Recorder buffer, pickle and JSON, under $FR_DIR."""
    out = os.environ.get("FR_DIR")
    if not out:
        return
    c10d = torch._C._distributed_c10d
    json_dir = os.environ.get("FR_JSON_DIR", os.path.join(out, "json"))
    os.makedirs(json_dir, exist_ok=True)
    with open(os.path.join(out, f"nccl_trace_rank_{rank}"), "wb") as f:
        f.write(c10d._dump_nccl_trace())
    dump_json = getattr(c10d, "_dump_nccl_trace_json", None)
    if dump_json is not None:
        with open(os.path.join(json_dir, f"nccl_trace_rank_{rank}"), "wb") as f:
            data = dump_json()
            f.write(data.encode() if isinstance(data, str) else data)


def worker(rank, world, args, results):
    torch_env(rank, args.port)
    dev = use_gpu(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev,
                            timeout=datetime.timedelta(seconds=args.timeout_s))
    other = dist.new_group(backend="nccl") if args.bug == "two-groups" else None
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                          nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10)).to(dev)
    fc2, fc3 = model[2], model[4]
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for p in model.parameters():
        dist.broadcast(p.data, src=0)
    torch.manual_seed(100 + rank)
    bug = lambda step: rank == 1 and step == args.bug_step and args.bug  # noqa: E731
    for step in range(args.steps):
        x = torch.randn(16, 32, device=dev)
        y = torch.randint(0, 10, (16,), device=dev)
        opt.zero_grad()
        out = model(x)
        loss = F.cross_entropy(out, y)
        loss.backward()

        if bug(step) == "two-groups":
            dist.all_reduce(torch.ones(4, device=dev), group=other)
        grads = [p.grad for p in model.parameters()]
        at = lambda t: next(k for k, g in enumerate(grads) if g is t)  # noqa: E731
        if bug(step) == "swap-same":
            i, j = at(fc2.weight.grad), at(fc3.weight.grad)
            grads[i], grads[j] = grads[j], grads[i]
        elif bug(step) == "swap-diff":
            i, j = at(fc2.weight.grad), at(fc2.bias.grad)
            grads[i], grads[j] = grads[j], grads[i]
        for g in grads:
            dist.all_reduce(g)
            g /= world
        if args.bug == "two-groups" and rank == 0 and step == args.bug_step:
            dist.all_reduce(torch.ones(4, device=dev), group=other)

        stat = loss.detach().reshape(1)
        if bug(step) == "count":
            stat = torch.cat([stat, torch.zeros(2, device=dev)])
        elif bug(step) == "dtype":
            stat = stat.double()
        if bug(step) != "missing":
            op = dist.ReduceOp.MAX if bug(step) == "op" else dist.ReduceOp.SUM
            dist.all_reduce(stat, op=op)
        if step % 4 == 0:
            acc = (out.argmax(1) == y).float().mean().reshape(1)
            gathered = torch.empty(world, device=dev)
            dist.all_gather_into_tensor(gathered, acc)
        if step % 8 == 7:  # re-sync the parameters now and then, as some trainers do
            root = 1 if bug(step) == "root" else 0
            for p in model.parameters():
                dist.broadcast(p.data, src=root)
        opt.step()
        if rank == 0 and step % 5 == 0:
            log(rank, f"step {step} loss {stat[0].item() / world:.4f}")
    torch.cuda.synchronize()
    dump_flight_recorder(rank)
    log(rank, "done")
    results.put((rank, 0))
    dist.destroy_process_group()


def main():
    ap = spawn_parser(__doc__, 29711)
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--bug", default="none",
                    choices=["none", "swap-same", "swap-diff", "count", "dtype", "op",
                             "missing", "root", "two-groups"])
    ap.add_argument("--bug-step", type=int, default=7)
    ap.add_argument("--timeout-s", type=int, default=20)
    args = ap.parse_args()
    import multiprocessing
    import torch.multiprocessing as mp
    results = multiprocessing.get_context("spawn").SimpleQueue()
    mp.spawn(worker, args=(args.world, args, results), nprocs=args.world, join=True)
    print("#done", flush=True)


if __name__ == "__main__":
    main()
