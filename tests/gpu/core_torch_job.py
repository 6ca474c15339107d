# A small PyTorch job for GPU acceptance of capture: every collective kind torch offers on one
# process group, a few hundred calls, then a CUDA graph that captures three allreduces and is
# replayed 10 times. World size from torchrun / env (1 on a one-GPU machine).
import os
import torch
import torch.distributed as dist


def main():
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    torch.cuda.set_device(rank % torch.cuda.device_count())
    dist.init_process_group("nccl", rank=rank, world_size=world)
    dev = torch.device("cuda", torch.cuda.current_device())
    x = torch.ones(1024, device=dev) * (rank + 1)
    for step in range(50):
        dist.all_reduce(x)
        out = torch.empty(1024 * world, device=dev)
        dist.all_gather_into_tensor(out, torch.ones(1024, device=dev))
        rs = torch.empty(1024, device=dev)
        dist.reduce_scatter_tensor(rs, torch.ones(1024 * world, device=dev))
        dist.broadcast(x, src=0)
        if world > 1:
            peer = 1 - rank if world == 2 else (rank + 1) % world
            if rank % 2 == 0:
                dist.send(x, dst=peer)
            else:
                dist.recv(x, src=peer)
    torch.cuda.synchronize()
    expect = float(world * (world + 1) // 2)
    if os.environ.get("NCCLRR_JOB_GRAPH", "1") == "1":
        g = torch.cuda.CUDAGraph()
        y = torch.ones(4096, device=dev)
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            dist.all_reduce(y)  # warm up outside capture (NCCL lazy init)
        torch.cuda.synchronize()
        with torch.cuda.graph(g):
            for _ in range(3):
                dist.all_reduce(y)
        for _ in range(10):
            g.replay()
        torch.cuda.synchronize()
    print(f"rank {rank}: done, x[0]={x[0].item()} expect-ish {expect}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
