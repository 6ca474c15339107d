"""Context-parallel attention over a ring (as ring attention does): the sequence is split over
the ranks, each holds its chunk's queries, keys and values, and in world - 1 rounds every rank
passes the key/value block it holds to the next rank while it receives the previous rank's,
folding each block into its attention output with an online softmax. The output's projection
gradient is then all-reduced (data parallel over the same ranks) and the loss averaged, as a
training step does. torch.multiprocessing.spawn, --world ranks (default 2).

--bug send-first: the blocks move with blocking dist.send to the next rank, then dist.recv from
  the previous one, on every rank. Small blocks pass (NCCL buffers them), but a block larger than
  NCCL's buffers waits for its receiver, who is itself sending: every rank's send waits for a
  receive queued behind its peer's send, and the job hangs in the first round.
--bug none: the blocks move with one dist.batch_isend_irecv per round (the sends and receives
  of a round in one group), which cannot deadlock; it finishes with 0 wrong results.

Independent reference: the ranks' queries, keys and values are all-gathered over a gloo group (no
NCCL call) and full attention is computed on the CPU. Prints "#wrong N"; exit 0 when N == 0.

  python3 torch_ring.py --port 29664 [--bug none|send-first] [--tokens 2048] [--dim 1024]
"""
import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (end_spawned, gather_cpu, log, off_by, spawn_and_report,  # noqa: E402
                    spawn_parser, torch_env, use_gpu)


def exchange(block, args, rank, world):
    """The next rank's view of the ring: send `block` on, receive the previous rank's."""
    nxt, prv = (rank + 1) % world, (rank - 1) % world
    got = torch.empty_like(block)
    if args.bug == "send-first":
        dist.send(block, nxt)  # the bug: every rank sends before it receives
        dist.recv(got, prv)
    else:
        ops = [dist.P2POp(dist.isend, block, nxt), dist.P2POp(dist.irecv, got, prv)]
        for req in dist.batch_isend_irecv(ops):
            req.wait()
    return got


def ring_attention(q, k, v, args, rank, world):
    """Attention of this rank's queries over every rank's keys and values, one block a round."""
    scale = q.shape[-1] ** -0.5
    kv = torch.cat([k, v], dim=1).contiguous()  # one message per round
    out = torch.zeros_like(q)
    row_max = torch.full((q.shape[0], 1), float("-inf"), device=q.device)
    row_sum = torch.zeros((q.shape[0], 1), device=q.device)
    for rnd in range(world):
        kb, vb = kv[:, :k.shape[1]], kv[:, k.shape[1]:]
        s = (q @ kb.T) * scale
        new_max = torch.maximum(row_max, s.max(dim=1, keepdim=True).values)
        p = torch.exp(s - new_max)
        fix = torch.exp(row_max - new_max)
        out = out * fix + p @ vb
        row_sum = row_sum * fix + p.sum(dim=1, keepdim=True)
        row_max = new_max
        if rnd < world - 1:
            kv = exchange(kv, args, rank, world)
    return out / row_sum


def worker(rank, world, args, results):
    torch_env(rank, args.port)
    dev = use_gpu(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
    check_pg = dist.new_group(backend="gloo")
    torch.manual_seed(0)
    proj = torch.nn.Linear(args.dim, args.dim).to(dev)
    opt = torch.optim.SGD(proj.parameters(), lr=1e-3)
    wrong = 0
    for step in range(args.steps):
        gen = torch.Generator(device=dev).manual_seed(100 * step + rank)
        x = torch.randn(args.tokens, args.dim, device=dev, generator=gen) * 0.5
        with torch.no_grad():
            q, k, v = x, x.flip(1), x * 0.5
            att = ring_attention(q, k, v, args, rank, world)
        opt.zero_grad()
        loss = proj(att).pow(2).mean()
        loss.backward()
        for p in proj.parameters():
            dist.all_reduce(p.grad, op=dist.ReduceOp.AVG)
        loss_avg = loss.detach().clone()
        dist.all_reduce(loss_avg, op=dist.ReduceOp.AVG)
        opt.step()

        every = gather_cpu(torch.cat([q, k, v], dim=1).cpu().reshape(-1), check_pg, world)
        every = every.reshape(world, args.tokens, 3 * args.dim)
        qs, ks, vs = every.split(args.dim, dim=2)
        keys, values = ks.reshape(-1, args.dim), vs.reshape(-1, args.dim)
        want = torch.softmax((qs[rank] @ keys.T) * args.dim ** -0.5, dim=1) @ values
        err, bad = off_by(att.cpu(), want, rtol=1e-3)
        if bad:
            wrong += 1
            log(rank, f"WRONG: step {step} ring attention off by {err:.3g} from full attention")
        if rank == 0:
            log(rank, f"step {step} loss {loss_avg.item():.5f}")
    end_spawned(rank, wrong, results)


def main():
    ap = spawn_parser(__doc__, 29664)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--bug", choices=["none", "send-first"], default="none")
    spawn_and_report(worker, ap.parse_args())


if __name__ == "__main__":
    main()
