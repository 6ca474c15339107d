"""Pipeline parallelism with PyTorch's own library (torch.distributed.pipelining), torchrun, one
stage per rank (2 or 4): an MLP cut into equal stages, each a `PipelineStage`, driven by
`Schedule1F1B` (one forward, one backward, in steady state) over --micro micro-batches; the
library batches each stage's Sends and Recvs (`batch_isend_irecv`). SGD; the loss of the step is
the sum over the micro-batches, on the last stage.

--bug micro-mixed: the last stage's node splits each batch into half as many micro-batches (a
  per-node setting): its receives expect activations twice the size the first stage sends, and
  the schedule hangs.
--bug none: the same split everywhere; 0 wrong results.

Independent reference: every rank builds the whole model from one seed and keeps a copy; the
last stage runs the copy on the same batch (no collective) with the same micro-batches and
optimizer and compares each step's loss with the pipeline's. Rank 0 prints "#wrong N" (all
ranks' wrong results, summed over a gloo group); exit status 0 when N == 0.

  torchrun --nproc-per-node 2 torch_pipelining.py [--bug none|micro-mixed]
"""
import argparse
import copy
import inspect
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.pipelining import PipelineStage, Schedule1F1B

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import end_job, log, torchrun_setup  # noqa: E402


def whole_model(stages, width=128, per_stage=2):
    torch.manual_seed(0)
    layers = [nn.Linear(32, width)]
    for _ in range(stages * per_stage - 1):
        layers += [nn.GELU(), nn.Linear(width, width)]
    layers += [nn.GELU(), nn.Linear(width, 10)]
    return nn.Sequential(*layers)


def stage_of(model, stage, stages):
    """The stage's consecutive slice of the layers (the first stage has the input layer, the last
    the head)."""
    layers = list(model)
    per = len(layers) // stages
    end = len(layers) if stage == stages - 1 else (stage + 1) * per
    return nn.Sequential(*layers[stage * per:end])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--micro", type=int, default=4)
    ap.add_argument("--bug", choices=["none", "micro-mixed"], default="none")
    args = ap.parse_args()
    rank, world, dev, check_pg = torchrun_setup()

    reference = whole_model(world).to(dev)
    module = stage_of(copy.deepcopy(reference), rank, world).to(dev)
    last = rank == world - 1
    micro = args.micro // 2 if args.bug == "micro-mixed" and last else args.micro
    stage = PipelineStage(module, rank, world, dev)
    loss_fn = lambda out, y: F.cross_entropy(out, y, reduction="sum")  # noqa: E731
    schedule = Schedule1F1B(stage, micro, loss_fn=loss_fn)
    # Newer releases divide the accumulated gradients by the micro-batch count (scale_grads).
    scaled = "scale_grads" in inspect.signature(Schedule1F1B.__init__).parameters
    opt = torch.optim.SGD(module.parameters(), lr=1e-3)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=1e-3)
    teacher = torch.randn(32, 10, generator=torch.Generator().manual_seed(7)).to(dev)
    gen = torch.Generator(device=dev).manual_seed(42)  # every rank draws the same batches
    wrong = 0
    for step in range(args.steps):
        x = torch.randn(args.batch, 32, device=dev, generator=gen)
        y = (x @ teacher).argmax(dim=1)
        opt.zero_grad()
        if rank == 0:
            schedule.step(x)
        elif last:
            losses = []
            schedule.step(target=y, losses=losses)
        else:
            schedule.step()
        opt.step()
        if not last:
            continue
        got = torch.stack(losses).sum().item()
        ref_opt.zero_grad()
        want = 0.0
        for xm, ym in zip(x.chunk(micro), y.chunk(micro)):
            loss = loss_fn(reference(xm), ym)
            (loss / micro if scaled else loss).backward()
            want += loss.item()
        ref_opt.step()
        if abs(got - want) > 1e-3 * abs(want) + 1e-4:
            wrong += 1
            if wrong <= 3:
                log(rank, f"WRONG: step {step} pipeline loss {got:.5f}, the whole model's "
                          f"{want:.5f}")
        if step % 4 == 0:
            log(rank, f"step {step:3d} loss {got / args.batch:.4f}")
    end_job(rank, wrong, check_pg)


if __name__ == "__main__":
    main()
