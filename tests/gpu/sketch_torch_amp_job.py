# PyTorch AMP training loop for issue 6's acceptance of `record --sketch`
# (tests/gpu/sketch_acceptance.sh): a small MLP under DDP (torch.distributed.run, one GPU per
# rank), torch.autocast(float16) and GradScaler, NCCLRR_AMP_STEPS steps (default 1000). DDP
# reduces gradients in fp16 (fp16_compress_hook), and every 100 steps the loss scale is set to
# 2^24 so that the next steps' fp16 gradients overflow: AllReduces whose data holds Inf and NaN,
# which GradScaler then skips, as in real mixed-precision training. Each step also averages the
# loss across ranks (a float AllReduce, as training loops log it). Prints per rank:
#   rank R steps N overflow_steps K final_scale S loss L
# `ncclrr check` of the recorded run must report no finding (no wrong_sum for the Inf/NaN data).
import os

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    steps = int(os.environ.get("NCCLRR_AMP_STEPS", "1000"))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", os.environ.get("NCCLRR_JOB_PORT", "29571"))
    torch.cuda.set_device(rank % torch.cuda.device_count())
    dev = torch.device("cuda", torch.cuda.current_device())
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
    torch.manual_seed(1234)  # the same initial weights everywhere (DDP broadcasts them anyway)
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 512), torch.nn.ReLU(),
        torch.nn.Linear(512, 512), torch.nn.ReLU(),
        torch.nn.Linear(512, 10)).to(dev)
    ddp = DDP(model, device_ids=[dev.index])
    ddp.register_comm_hook(dist.group.WORLD, default_hooks.fp16_compress_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda", init_scale=2.0 ** 16)
    loss_fn = torch.nn.CrossEntropyLoss()
    gen = torch.Generator(device=dev).manual_seed(100 + rank)
    overflow_steps = 0
    loss_avg = torch.zeros(1, device=dev)
    for step in range(steps):
        x = torch.randn(64, 256, device=dev, generator=gen)
        y = torch.randint(0, 10, (64,), device=dev, generator=gen)
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = loss_fn(ddp(x), y)
        scaler.scale(loss).backward()
        scale_before = scaler.get_scale()
        scaler.step(opt)
        if step % 100 == 50:
            scaler.update(new_scale=2.0 ** 24)  # the next steps' fp16 gradients overflow
        else:
            scaler.update()
            if scaler.get_scale() < scale_before:
                overflow_steps += 1  # GradScaler found Inf/NaN and skipped this step
        loss_avg.copy_(loss.detach().float())
        dist.all_reduce(loss_avg, op=dist.ReduceOp.AVG)
    torch.cuda.synchronize()
    print(f"rank {rank} steps {steps} overflow_steps {overflow_steps} "
          f"final_scale {scaler.get_scale():g} loss {loss_avg.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
