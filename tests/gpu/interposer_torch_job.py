# PyTorch job for the interposer's GPU acceptance (tests/gpu/interposer_acceptance.sh): a few
# hundred collectives of every kind torch offers (send/recv when there are two ranks), with
# deterministic inputs, then optionally (NCCLRR_JOB_GRAPH=1) a CUDA graph that captures three
# allreduces and is replayed 10 times. Prints one "rank R checksum X" line: the same with and
# without recording. World size from torchrun, else 1.
import os

import torch
import torch.distributed as dist


def main():
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", os.environ.get("NCCLRR_JOB_PORT", "29561"))
    torch.cuda.set_device(rank % torch.cuda.device_count())
    dev = torch.device("cuda", torch.cuda.current_device())
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
    checksum = 0.0
    base = torch.arange(1024, device=dev, dtype=torch.float32) / 1024
    for step in range(50):
        x = base * (rank + 1) + step
        dist.all_reduce(x)
        gathered = torch.empty(1024 * world, device=dev)
        dist.all_gather_into_tensor(gathered, base + rank)
        scattered = torch.empty(1024, device=dev)
        dist.reduce_scatter_tensor(scattered, torch.cat([base * (r + 1) for r in range(world)]))
        b = base + rank * 7 + step
        dist.broadcast(b, src=0)
        if world > 1:
            peer = rank ^ 1
            msg = base * (rank + 3)
            if rank % 2 == 0:
                dist.send(msg, dst=peer)
                dist.recv(msg, src=peer)
            else:
                got = torch.empty_like(msg)
                dist.recv(got, src=peer)
                dist.send(msg, dst=peer)
                msg = got
            checksum += float(msg.double().sum())
        checksum += float(x.double().sum() + gathered.double().sum() + scattered.double().sum() +
                          b.double().sum())
    if os.environ.get("NCCLRR_JOB_GRAPH", "0") == "1":
        y = torch.ones(4096, device=dev)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            dist.all_reduce(y)  # warm up outside the capture
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(3):
                y.mul_(0.5)
                dist.all_reduce(y)
        for _ in range(10):
            g.replay()
        torch.cuda.synchronize()
        checksum += float(y.double().sum())
        # NCCL keeps a communicator's resources while a graph that captured it lives: destroying
        # the process group first would wait for the graph forever.
        del g
    torch.cuda.synchronize()
    print(f"rank {rank} checksum {checksum:.10e}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
