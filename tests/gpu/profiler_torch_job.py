"""A two-process PyTorch job for tests/gpu/profiler_acceptance.sh: collectives on the world
communicator, on a subgroup (a split), and point-to-point, so that the profiler-plugin route and
the preload route can be compared call by call. Run with torchrun --nproc-per-node 2."""
import os

import torch
import torch.distributed as dist


def main():
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(rank % torch.cuda.device_count())
    dist.init_process_group("nccl", device_id=torch.device("cuda", rank % torch.cuda.device_count()))
    x = torch.ones(256, device="cuda") * (rank + 1)
    for step in range(3):
        dist.all_reduce(x)
        dist.broadcast(x, src=0)
        out = torch.empty(world * 16, device="cuda")
        dist.all_gather_into_tensor(out, x[:16])
        rs = torch.empty(8, device="cuda")
        dist.reduce_scatter_tensor(rs, x[: 8 * world])
        if world >= 2:
            peer = (rank + 1) % world
            src = (rank - 1) % world
            reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, x[:32], peer),
                                           dist.P2POp(dist.irecv, out[:32], src)])
            for r in reqs:
                r.wait()
    sub = dist.new_group(list(range(world)))  # a second communicator (split or new init)
    dist.all_reduce(x, group=sub)
    torch.cuda.synchronize()
    print(f"rank {rank}: done, x[0]={x[0].item()}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
