"""Two common large-job setups on 4 ranks (torchrun-launched), clean: `ncclrr check` must report
no finding.

--mode hsdp: hybrid sharding. FSDP2 (`fully_shard`) over a 2-D device mesh (2 replicas x 2
  shards, `init_device_mesh`): parameters are all-gathered and gradients reduce-scattered within
  each shard group, then all-reduced across the replica group; the communicators are split off
  the world. Each block is sharded on its own, then the root.
--mode tp: tensor parallel within pairs of ranks and FSDP2 across them (a 2 x 2 mesh, "dp" x
  "tp", as large transformer jobs combine them): each block's up-projection column-parallel and
  down-projection row-parallel (`parallelize_module`: DTensor all-reduces in the forward and
  backward), then `fully_shard` over "dp"; the ranks of one tensor-parallel pair read the same
  batch.
--mode compile: DistributedDataParallel around `torch.compile`d MLP blocks: the gradient bucket
  all-reduces are issued from the compiled backward (DDP's optimizer splits the graph at bucket
  boundaries; one bucket at the default size).

Both add the loss averaged across ranks for the log line (all_reduce AVG) every step, checked
against the ranks' losses all-gathered over a gloo group (no NCCL call). Rank 0 prints "#wrong N";
exit status 0 when N == 0.

  torchrun --nproc-per-node 4 --master-port 29635 torch_hsdp_compile.py --mode hsdp|tp|compile
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                               parallelize_module)
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (end_job, gather_cpu, log, off_by, torch_env, torchrun_ranks,  # noqa: E402
                    use_gpu)


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.up = nn.Linear(d, 4 * d)
        self.down = nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.ln(x))))


class Net(nn.Module):
    def __init__(self, d=128, depth=3, n_classes=10):
        super().__init__()
        self.inp = nn.Linear(32, d)
        self.blocks = nn.ModuleList([Block(d) for _ in range(depth)])
        self.head = nn.Linear(d, n_classes)

    def forward(self, x):
        x = self.inp(x)
        for b in self.blocks:
            x = b(x)
        return self.head(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", choices=["hsdp", "tp", "compile"], required=True)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args()

    rank, world, local_rank = torchrun_ranks()
    torch_env(rank)  # several ranks on one GPU
    dev = use_gpu(local_rank)
    dist.init_process_group("nccl", device_id=dev)
    check_pg = dist.new_group(backend="gloo")

    torch.manual_seed(0)
    model = Net().to(dev)
    if args.mode == "hsdp":
        mesh = init_device_mesh("cuda", (2, world // 2), mesh_dim_names=("replicate", "shard"))
        for b in model.blocks:
            fully_shard(b, mesh=mesh)
        fully_shard(model, mesh=mesh)
        net = model
    elif args.mode == "tp":
        mesh = init_device_mesh("cuda", (world // 2, 2), mesh_dim_names=("dp", "tp"))
        for b in model.blocks:
            parallelize_module(b, mesh["tp"], {"up": ColwiseParallel(), "down": RowwiseParallel()})
            fully_shard(b, mesh=mesh["dp"])
        fully_shard(model, mesh=mesh["dp"])
        net = model
    else:
        for i, b in enumerate(model.blocks):
            model.blocks[i] = torch.compile(b)
        net = DDP(model, device_ids=[dev.index])
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    teacher = torch.randn(32, 10, generator=torch.Generator().manual_seed(7)).to(dev)
    # One batch per data-parallel group: the ranks of a tensor-parallel pair read the same one.
    gen = torch.Generator(device=dev).manual_seed(7000 + (rank // 2 if args.mode == "tp" else rank))
    wrong = 0

    for step in range(args.steps):
        x = torch.randn(args.batch, 32, device=dev, generator=gen)
        y = (x @ teacher).argmax(dim=1)
        opt.zero_grad()
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        avg = loss.detach().clone()
        dist.all_reduce(avg, op=dist.ReduceOp.AVG)
        want = gather_cpu(loss.detach().reshape(1).cpu(), check_pg, world).mean(dim=0)
        err, bad = off_by(avg.reshape(1).cpu(), want)
        if bad:
            wrong += 1
            log(rank, f"WRONG: step {step} loss all_reduce(AVG) off by {err:.3g}")
        if rank == 0 and step % 4 == 0:
            log(rank, f"step {step:3d} loss {avg.item():.4f}")

    end_job(rank, wrong, check_pg)


if __name__ == "__main__":
    main()
