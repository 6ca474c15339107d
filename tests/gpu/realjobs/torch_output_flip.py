"""Data-parallel training of a small MLP with hand-written gradient sync, where one rank's output of
one collective gets corrupted after NCCL wrote it: what a faulty GPU, link or memory, or a kernel
that writes the output buffer from another stream without waiting for the collective, does to a
job. NCCL gives every rank of an all_reduce, a broadcast and an all_gather the same bytes, so
`ncclrr record --sketch` of this job must give `ncclrr check` an `output_divergence` at the
corrupted call, naming rank 1.

Per step (all on the default process group, NCCL; the job counts its collectives: NCCL's seq):
  * seq 3*step:     all_reduce of the flattened gradients (one bucket, as DDP would), then / world;
  * seq 3*step + 1: broadcast from rank 0 of a "schedule" tensor (rank 0 decides the learning rate
                    scale and a data-order seed for everyone, as a trainer's controller would);
  * seq 3*step + 2: all_gather_into_tensor of every rank's loss and accuracy, for the log line.
No other NCCL call: the correctness check below runs over a separate gloo group.

The corruption (--victim all_reduce|broadcast|all_gather, at --flip-step, on rank 1): right before
issuing that collective, rank 1 launches on a side stream a Triton kernel that keeps storing a
fixed wrong value (--wrong) into one element of the collective's output buffer, with an atomic
store in a loop (idempotent: the same value every time), until a device flag is set. It thus
overlaps NCCL's kernel and ncclrr's sketch of the output, which is enqueued on the collective's
own stream right after the NCCL call (a write ordered after the collective would come after the
sketch and be invisible to it). Rank 1 then waits for the collective's stream (NCCL kernel and
sketch done), sets the flag from a third stream and waits for the side stream. The kernel gives
up by itself after --max-iters polls (a few seconds), so a mistake cannot hang the job.
For the all_reduce (in place, as PyTorch's is) the kernel also changes rank 1's input before NCCL
reads it; rank 0 then gets the sum with the wrong value in it and rank 1 the wrong value alone.

Afterwards both ranks copy that output to the CPU and compare it over the gloo group: the job
prints how many elements differ between rank 0 and rank 1, so the run shows the injection
happened ("injected: ... differ at N element(s)"). Each rank also prints the step and seq it
corrupted. Launched with torch.multiprocessing.spawn, both ranks on GPU rank % device_count:

  python3 torch_output_flip.py --port 29631 [--victim all_reduce] [--flip-step 4] [--steps 8]
                                            [--element -1] [--wrong 100] [--no-flip]

Prints "#wrong N" (elements that differ across ranks, summed over every step: the injection makes
N > 0 on purpose; --no-flip gives a clean run with N == 0); exit status 0 when N == 0, else 1.
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import finish, gather_cpu, log, spawn_parser, torch_env, use_gpu  # noqa: E402

VICTIMS = {"all_reduce": 0, "broadcast": 1, "all_gather": 2}


def make_corrupter():
    """The side-stream writer, compiled by Triton (PyTorch ships it; no other compiler needed)."""
    import triton
    import triton.language as tl

    @triton.jit
    def keep_writing(out_ptr, flag_ptr, wrong, max_iters):
        # Store `wrong` into *out_ptr until *flag_ptr becomes non-zero (or max_iters polls). The
        # atomic exchange is a store the compiler can neither merge nor move out of the loop; the
        # volatile load re-reads the flag from memory on every turn.
        i = 0
        go = tl.load(flag_ptr, volatile=True) == 0
        while go:
            tl.atomic_xchg(out_ptr, wrong)
            i += 1
            go = (tl.load(flag_ptr, volatile=True) == 0) & (i < max_iters)
        tl.atomic_xchg(out_ptr, wrong)

    def launch(elem, flag, wrong, max_iters):
        keep_writing[(1,)](elem, flag, wrong, max_iters, num_warps=1)

    return launch


class MLP(nn.Module):
    def __init__(self, d_in, hidden, n_classes):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, n_classes)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def compare_across_ranks(t, check_pg, world):
    """Elements where rank 0's and rank 1's copies of t differ (bitwise), and the first of them
    with both values. Every rank calls it (gloo all_gather, no NCCL)."""
    everyone = gather_cpu(t.detach().reshape(-1).float().cpu(), check_pg, world)
    a, b = everyone[0], everyone[1]
    diff = (a != b) & ~(torch.isnan(a) & torch.isnan(b))
    n = int(diff.sum().item())
    if n == 0:
        return 0, None
    i = int(diff.nonzero()[0].item())
    return n, (i, a[i].item(), b[i].item())


def worker(rank, world, args, results):
    torch_env(rank, args.port)  # several ranks on one GPU: NCCL_HOSTID, NCCL_SOCKET_IFNAME=lo
    dev = use_gpu(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
    check_pg = dist.new_group(backend="gloo")  # the checker's own channel, invisible to NCCL

    flip = not args.no_flip and rank == 1
    corrupt = make_corrupter() if flip else None
    side = torch.cuda.Stream(device=dev)
    flag_stream = torch.cuda.Stream(device=dev)
    if flip:
        # Compile the writer now (a flag already set: it stores once and returns), not while
        # rank 0 waits inside the victim collective.
        scratch = torch.zeros(2, device=dev)[1:]  # misaligned, as the victim elements are
        corrupt(scratch, torch.ones(1, dtype=torch.int32, device=dev), args.wrong, args.max_iters)
        torch.cuda.synchronize()
    victim_seq = 3 * args.flip_step + VICTIMS[args.victim]

    d_in, n_classes = 64, 10
    torch.manual_seed(args.seed)  # the same initial weights on every rank
    model = MLP(d_in, args.hidden, n_classes).to(dev)
    params = list(model.parameters())
    teacher = torch.randn(d_in, n_classes, generator=torch.Generator().manual_seed(7)).to(dev)
    gen = torch.Generator(device=dev).manual_seed(1000 + rank)
    schedule = torch.zeros(2, device=dev)
    seq = 0  # this job's count of its collectives on the default group (NCCL's pairing index)
    wrong = 0
    if flip:
        log(rank, f"will corrupt element {args.element} of its {args.victim} output at step "
                  f"{args.flip_step} (seq {victim_seq}) with {args.wrong} from a side stream")

    for step in range(args.steps):
        x = torch.randn(args.batch, d_in, device=dev, generator=gen)
        y = (x @ teacher).argmax(dim=1)
        for p in params:
            p.grad = None
        out = model(x)
        loss = F.cross_entropy(out, y)
        loss.backward()
        acc = (out.argmax(dim=1) == y).float().mean()

        bucket = torch.cat([p.grad.reshape(-1) for p in params])  # one flat gradient bucket
        if rank == 0:
            schedule = torch.tensor([0.5 ** (step // 3), float(1234 + step)], device=dev)
        metrics = torch.stack([loss.detach(), acc])
        gathered = torch.empty(world * 2, device=dev)
        outputs = [bucket, schedule, gathered]

        for k, name in enumerate(["all_reduce", "broadcast", "all_gather"]):
            hit = flip and step == args.flip_step and name == args.victim
            if hit:
                target = outputs[k].reshape(-1)
                index = args.element % target.numel()
                flag = torch.zeros(1, dtype=torch.int32, device=dev)
                torch.cuda.current_stream().synchronize()  # the buffers are ready before it runs
                with torch.cuda.stream(side):
                    corrupt(target[index], flag, args.wrong, args.max_iters)
                log(rank, f"step {step}: corrupting {name} at seq {seq}, element {index}, from a "
                          f"side stream (expect output_divergence at seq {seq} naming rank 1)")
            if name == "all_reduce":
                work = dist.all_reduce(bucket, async_op=True)
            elif name == "broadcast":
                work = dist.broadcast(schedule, src=0, async_op=True)
            else:
                work = dist.all_gather_into_tensor(gathered, metrics, async_op=True)
            if hit:
                # The collective's stream, with NCCL's kernel and ncclrr's sketch after it, is
                # done once the current stream (made to wait for it) is; then the writer stops.
                work.wait()
                torch.cuda.current_stream().synchronize()
                with torch.cuda.stream(flag_stream):
                    flag.fill_(1)
                side.synchronize()
            else:
                work.wait()
            seq += 1

        # Outputs NCCL makes identical on every rank: count the elements that differ.
        for k, name in enumerate(["all_reduce", "broadcast", "all_gather"]):
            n, first = compare_across_ranks(outputs[k], check_pg, world)
            if n:
                wrong += n
                if rank == 0:
                    i, a, b = first
                    print(f"injected: step {step} {name} (seq {3 * step + k}): rank 0's and rank "
                          f"1's outputs differ at {n} element(s); element {i}: {a!r} on rank 0, "
                          f"{b!r} on rank 1", flush=True)
            elif rank == 0 and step == args.flip_step and name == args.victim and not args.no_flip:
                print(f"NOT injected: step {step} {name} (seq {3 * step + k}): the outputs of "
                      f"rank 0 and rank 1 are equal", flush=True)

        with torch.no_grad():
            bucket /= world
            offset = 0
            for p in params:
                p.grad.copy_(bucket[offset:offset + p.numel()].view_as(p))
                offset += p.numel()
            for p in params:
                p.add_(p.grad, alpha=-args.lr * schedule[0].item())
        if rank == 0 and step % 2 == 0:
            losses = gathered.view(world, 2)[:, 0].tolist()
            print(f"step {step}: loss per rank {[round(v, 4) for v in losses]}", flush=True)

    torch.cuda.synchronize()
    if rank == 0:
        print(f"the job issued {seq} collectives on the default group", flush=True)
    results.put((rank, wrong if rank == 0 else 0))
    dist.destroy_process_group()


def main():
    ap = spawn_parser(__doc__, 29631)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--flip-step", type=int, default=4)
    ap.add_argument("--victim", choices=sorted(VICTIMS), default="all_reduce")
    # -1: the last element (all_reduce: fc3.bias[9], whose gradient is never zero).
    ap.add_argument("--element", type=int, default=-1)
    ap.add_argument("--wrong", type=float, default=100.0)
    ap.add_argument("--max-iters", type=int, default=5_000_000)
    ap.add_argument("--no-flip", action="store_true")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.world < 2:
        ap.error("--world must be at least 2 (rank 1 corrupts, rank 0 is the reference)")
    if args.flip_step >= args.steps:
        ap.error("--flip-step must be below --steps")
    if not args.no_flip:
        try:
            import triton  # noqa: F401
        except ImportError as e:
            print(f"needs triton (it ships with PyTorch's CUDA wheels): {e}", flush=True)
            sys.exit(2)
    import multiprocessing
    import torch.multiprocessing as mp
    results = multiprocessing.get_context("spawn").SimpleQueue()
    mp.spawn(worker, args=(args.world, args, results), nprocs=args.world, join=True)
    total = sum(n for _, n in (results.get() for _ in range(args.world)))
    finish(total)


if __name__ == "__main__":
    main()
