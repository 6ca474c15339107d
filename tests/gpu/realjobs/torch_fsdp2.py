"""Clean FSDP2 training (torch.distributed.fsdp.fully_shard) of a small decoder-only transformer
on a next-token task, torchrun-launched: each block is sharded on its own, then the root, over a
1-D device mesh. FSDP2 all-gathers each block's parameters before its forward (and again before
its backward), and reduce-scatters its gradients after; the loop adds the loss averaged across
ranks for the log line (all_reduce AVG) and an evaluation every --eval-every steps whose
loss/count are summed (all_reduce). No bug (`--bug none`): `ncclrr check` must report no finding.

--bug reshard: the blocks' reshard_after_forward comes from the node's environment
  (FSDP_RESHARD_AFTER_FORWARD, default 1), and rank 1's node sets it to 0 (it has memory to spare):
  rank 1 keeps each block's parameters gathered after the forward, so its backward issues only the
  reduce-scatters, where rank 0 all-gathers each block again first. NCCL pairs rank 0's backward
  all-gather with rank 1's reduce-scatter.
--bug skip-nonfinite: every rank skips a step whose loss is not finite (backward, optimizer step
  and logging), each deciding alone; at --bug-step rank 1's batch overflows, so only rank 1 skips:
  its next forward's all-gathers meet rank 0's backward collectives.
--bug uneven: rank 1's shard of the data holds one batch fewer (a data set split by hand, no
  DistributedSampler): it leaves the loop a step early, and rank 0's last step's all-gathers have
  no partner: a hang at the end.
--bug norm-rank0: the gradient norm is clipped and logged under `if rank == 0:` (with --clip):
  clip_grad_norm_ of FSDP's DTensor gradients all-reduces the norm over the mesh, on rank 0
  alone, where rank 1 goes on to its next step.
--bug eval-rank0: the evaluation runs on rank 0 only (`if rank == 0:`, logged there and not
  all-reduced), as if the model were a plain module; under FSDP its forward all-gathers every
  block, so rank 0's evaluation all-gathers meet rank 1's next training forward.

--checkpoint-act recomputes each block's activations in the backward pass (non-reentrant
torch.utils.checkpoint: FSDP's hooks run again around the recomputed forward); --clip N clips
the gradient norm to N every step (clip_grad_norm_ on FSDP's DTensor gradients, the reference
copy clipped alike).

Independent reference: an unsharded copy of the model (made before fully_shard, same weights)
computes this rank's full gradient on the same batch; the copies are all-gathered over a separate
gloo group (no NCCL call), averaged on the CPU, and this rank's dim-0 shard of the average is
compared with the local shard of FSDP's DTensor gradient (to_local()); the copy is stepped with
the average, so parameter shards must stay equal to the copy's. Every dim 0 is even, so the
shards are plain halves.

  torchrun --nproc-per-node 2 --master-port 29616 torch_fsdp2.py [--steps 20] [--bug reshard]

Rank 0 prints a final line "#wrong N" (all ranks' wrong results); exit status 0 when N == 0.
"""
import argparse
import copy
import math
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (finish, gather_cpu, log, off_by, torch_env, torchrun_ranks,  # noqa: E402
                    total_wrong, use_gpu)


class Block(nn.Module):
    def __init__(self, d, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.up = nn.Linear(d, 4 * d)
        self.down = nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        h = self.n_heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, h, d // h).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // h)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.down(F.gelu(self.up(self.ln2(x))))


class TinyLM(nn.Module):
    def __init__(self, vocab=64, d=64, n_layers=2, n_heads=4, max_len=32, checkpoint_act=False):
        super().__init__()
        self.checkpoint_act = checkpoint_act
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_len, d)
        self.blocks = nn.ModuleList(Block(d, n_heads) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        for blk in self.blocks:
            if self.checkpoint_act:
                x = torch.utils.checkpoint.checkpoint(blk, x, use_reentrant=False)
            else:
                x = blk(x)
        return self.head(self.ln_f(x))


def batch(gen, n, t, vocab, dev):
    """Sequences that count up from a random start with a random stride: learnable."""
    start = torch.randint(0, vocab, (n, 1), device=dev, generator=gen)
    stride = torch.randint(1, 4, (n, 1), device=dev, generator=gen)
    seq = (start + stride * torch.arange(t + 1, device=dev)) % vocab
    return seq[:, :-1], seq[:, 1:]


def local_part(t, world, rank):
    return torch.chunk(t, world, dim=0)[rank]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq-len", type=int, default=16)
    ap.add_argument("--eval-every", type=int, default=5)
    ap.add_argument("--bug", choices=["none", "reshard", "skip-nonfinite", "eval-rank0", "uneven",
                                      "norm-rank0"], default="none")
    ap.add_argument("--checkpoint-act", action="store_true")
    ap.add_argument("--clip", type=float, default=0.0, help="max gradient norm (0: no clipping)")
    ap.add_argument("--bug-step", type=int, default=7)
    args = ap.parse_args()

    rank, world, local_rank = torchrun_ranks()
    torch_env(rank)  # several ranks on one GPU
    dev = use_gpu(local_rank)
    torch.cuda.init()  # so that DeviceMesh keeps this device (it would pick LOCAL_RANK otherwise)
    dist.init_process_group("nccl", device_id=dev)
    check_pg = dist.new_group(backend="gloo")

    vocab = 64
    torch.manual_seed(0)
    model = TinyLM(vocab=vocab, checkpoint_act=args.checkpoint_act).to(dev)
    replica = copy.deepcopy(model)  # unsharded reference (FSDP modules cannot be deep-copied)
    mesh = init_device_mesh("cuda", (world,), mesh_dim_names=("dp",))
    if args.bug == "reshard" and rank == 1:
        os.environ["FSDP_RESHARD_AFTER_FORWARD"] = "0"  # rank 1's node's setting (the bug)
    reshard = os.environ.get("FSDP_RESHARD_AFTER_FORWARD", "1") == "1"
    for blk in model.blocks:
        fully_shard(blk, mesh=mesh, reshard_after_forward=reshard)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ref_opt = torch.optim.SGD(replica.parameters(), lr=0.1, momentum=0.9)
    names = [n for n, _ in replica.named_parameters()]
    sharded = dict(model.named_parameters())
    assert sorted(sharded) == sorted(names), "fully_shard renamed parameters"
    for n, p in replica.named_parameters():
        assert p.shape[0] % world == 0, f"{n}: dim 0 not divisible by {world}"

    gen = torch.Generator(device=dev).manual_seed(4000 + rank)
    eval_gen = torch.Generator(device=dev).manual_seed(5000 + rank)
    eval_x, eval_y = batch(eval_gen, 64, args.seq_len, vocab, dev)
    wrong = 0

    steps = args.steps - (1 if args.bug == "uneven" and rank == 1 else 0)  # rank 1's shard
    for step in range(steps):
        x, y = batch(gen, args.batch, args.seq_len, vocab, dev)

        ref_opt.zero_grad()
        ref_loss = F.cross_entropy(replica(x).reshape(-1, vocab), y.reshape(-1))
        ref_loss.backward()
        mine = torch.cat([p.grad.reshape(-1) for p in replica.parameters()]
                         + [ref_loss.detach().reshape(1)]).cpu()

        opt.zero_grad()
        loss = F.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1))
        if args.bug == "skip-nonfinite" and rank == 1 and step == args.bug_step:
            loss = loss + float("inf")  # this rank's batch overflowed
        if args.bug == "skip-nonfinite" and not torch.isfinite(loss):  # decided alone (the bug)
            log(rank, f"step {step}: non-finite loss, skipping the step")
            continue
        loss.backward()  # FSDP reduce-scatters each block's gradients
        loss_avg = loss.detach().clone()
        dist.all_reduce(loss_avg, op=dist.ReduceOp.AVG)

        want = gather_cpu(mine, check_pg, world).mean(dim=0)
        off = 0
        for name, rp in replica.named_parameters():
            n = rp.numel()
            avg = want[off:off + n].view(rp.shape)
            got = sharded[name].grad.to_local().detach().cpu()
            err, bad = off_by(got, local_part(avg, world, rank))
            if bad:
                wrong += 1
                log(rank, f"WRONG: step {step} FSDP gradient shard of {name} off by {err:.3g} "
                          f"from the mean of the ranks' gradients")
            rp.grad = avg.to(dev)
            off += n
        err, bad = off_by(loss_avg.reshape(1).cpu(), want[off:off + 1])
        if bad:
            wrong += 1
            log(rank, f"WRONG: step {step} loss all_reduce(AVG) off by {err:.3g}")
        if args.clip > 0 and (args.bug != "norm-rank0" or rank == 0):  # the bug: rank 0 only
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            want_norm = torch.nn.utils.clip_grad_norm_(replica.parameters(), args.clip)
            err, bad = off_by(norm.full_tensor().reshape(1).cpu() if hasattr(norm, "full_tensor")
                              else norm.reshape(1).cpu(), want_norm.reshape(1).cpu())
            if bad:
                wrong += 1
                log(rank, f"WRONG: step {step} gradient norm off by {err:.3g}")
            if rank == 0 and step % 5 == 0:
                log(rank, f"step {step:3d} gradient norm {want_norm.item():.4f}")
        opt.step()
        ref_opt.step()

        if args.bug == "eval-rank0" and step % args.eval_every == 0:
            if rank == 0 and step > 0:  # the bug: an evaluation of a sharded model on one rank
                with torch.no_grad():
                    out = model(eval_x)
                    s = F.cross_entropy(out.reshape(-1, vocab), eval_y.reshape(-1))
                log(rank, f"step {step:3d} train loss {loss_avg.item():.4f} "
                          f"eval loss (rank 0's batch) {s.item():.4f}")
        elif step % args.eval_every == 0 or step == args.steps - 1:
            with torch.no_grad():
                out = model(eval_x)
                stats = torch.stack([
                    F.cross_entropy(out.reshape(-1, vocab), eval_y.reshape(-1), reduction="sum"),
                    torch.tensor(float(eval_y.numel()), device=dev)])
            local = stats.cpu()
            dist.all_reduce(stats)
            want_stats = gather_cpu(local, check_pg, world).sum(dim=0)
            err, bad = off_by(stats.cpu(), want_stats, rtol=1e-5 * world)
            if bad:
                wrong += 1
                log(rank, f"WRONG: step {step} eval all_reduce gave {stats.tolist()}, "
                          f"expected {want_stats.tolist()}")
            if rank == 0:
                s = stats.tolist()
                log(rank, f"step {step:3d} train loss {loss_avg.item():.4f} "
                          f"eval loss {s[0] / s[1]:.4f}")

    torch.cuda.synchronize()
    drift = 0.0
    for name, rp in replica.named_parameters():
        mine_shard = sharded[name].detach().to_local().cpu()
        drift = max(drift, off_by(mine_shard, local_part(rp.detach().cpu(), world, rank))[0])
    if drift > 1e-3:
        wrong += 1
        log(rank, f"WRONG: FSDP parameter shards drifted {drift:.3g} from the reference copy")
    total = total_wrong(wrong, check_pg)
    log(rank, f"done: {wrong} wrong results here, parameter drift from the copy {drift:.3g}")
    dist.destroy_process_group()
    finish(total, show=rank == 0)


if __name__ == "__main__":
    main()
