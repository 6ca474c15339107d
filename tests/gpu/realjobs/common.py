"""Setup and checking helpers shared by the real jobs in this folder (imported by path: each job
puts its own folder first on sys.path). Nothing here makes an NCCL call: the jobs' own collectives
stay in the jobs, in their order. torch is imported inside the helpers that need it, so that
jax_psum.py can use this module without torch installed.
"""
import argparse
import multiprocessing
import os
import sys


def share_one_gpu(rank):
    """Let several ranks share one GPU: NCCL only refuses them when they claim the same host."""
    os.environ["NCCL_HOSTID"] = f"host-{rank}"
    os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")


def jax_start(process_id, num_processes, port):
    """The start of a multi-process JAX job on shared GPUs: share_one_gpu, no preallocation (the
    processes share the GPU's memory), full-precision matmuls (results are compared with the
    host's), jax.distributed over loopback. Returns shard_map, wherever this release keeps it."""
    share_one_gpu(process_id)
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax
    jax.config.update("jax_default_matmul_precision", "highest")
    jax.distributed.initialize(f"127.0.0.1:{port}", num_processes, process_id)
    try:
        from jax import shard_map
    except ImportError:  # older releases
        from jax.experimental.shard_map import shard_map
    return shard_map


def torch_env(rank, port=None):
    """share_one_gpu, gloo (the check group) on loopback too, and with port the rendezvous that
    spawned workers need (torchrun sets MASTER_ADDR/PORT itself)."""
    share_one_gpu(rank)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    if port is not None:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(port)


def torchrun_ranks():
    """This process's rank, world size and local rank, as torchrun passes them."""
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    return rank, world, local_rank


def torchrun_setup():
    """A torchrun worker's start: its ranks, a GPU, the NCCL process group and a gloo check group
    (no NCCL call). Returns rank, world, device, check group."""
    import torch.distributed as dist
    rank, world, local_rank = torchrun_ranks()
    torch_env(rank)
    dev = use_gpu(local_rank)
    dist.init_process_group("nccl", device_id=dev)
    return rank, world, dev, dist.new_group(backend="gloo")


def use_gpu(local_rank):
    """Make GPU local_rank % device_count current, so that more ranks than GPUs still run."""
    import torch
    dev = torch.device("cuda", local_rank % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    return dev


def log(rank, msg):
    """A "[rank R] ..." line, flushed at once so that a hung job still shows how far it got."""
    print(f"[rank {rank}] {msg}", flush=True)


def gather_cpu(t, group, world):
    """All-gather a CPU tensor over the gloo check group; returns [world, numel]."""
    import torch
    import torch.distributed as dist
    out = [torch.empty_like(t) for _ in range(world)]
    dist.all_gather(out, t, group=group)
    return torch.stack(out)


def mismatch(got, want, world):
    """True when got is not want up to the rounding of a world-way sum (and the error)."""
    scale = want.abs().max().item() if want.numel() else 0.0
    err = (got - want).abs().max().item() if want.numel() else 0.0
    return err > 1e-5 * world * scale + 1e-7, err


def off_by(got, want, rtol=1e-4):
    """Max abs error, and whether it is beyond rtol of want's scale (the reference and the job's
    kernels may round differently; a misrouted value is off by its whole size)."""
    err = (got - want).abs().max().item() if want.numel() else 0.0
    scale = want.abs().max().item() if want.numel() else 0.0
    return err, err > rtol * scale + 1e-6


def total_wrong(wrong, check_pg):
    """Every rank's wrong count summed over the gloo check group (no NCCL call), for rank 0."""
    import torch
    import torch.distributed as dist
    total = torch.tensor([wrong], dtype=torch.int64)
    dist.all_reduce(total, group=check_pg)
    return int(total.item())


def finish(total, show=True):
    """Print the final "#wrong N" line the driver reads (when show) and exit 0 only when N == 0."""
    if show:
        print(f"#wrong {total}", flush=True)
    sys.exit(0 if total == 0 else 1)


def end_job(rank, wrong, check_pg, detail=""):
    """The end of a torchrun job: wait for the GPU, sum every rank's wrong count over the gloo
    check group, say so, leave the process group and exit through finish (rank 0 prints)."""
    import torch
    import torch.distributed as dist
    torch.cuda.synchronize()
    total = total_wrong(wrong, check_pg)
    log(rank, f"done: {wrong} wrong results{detail}")
    dist.destroy_process_group()
    finish(total, show=rank == 0)


def end_spawned(rank, wrong, results):
    """The end of a spawned worker: wait for the GPU, report this rank's wrong count to the
    launcher (spawn_and_report) and leave the process group."""
    import torch
    import torch.distributed as dist
    torch.cuda.synchronize()
    log(rank, f"done: {wrong} wrong results")
    results.put((rank, wrong))
    dist.destroy_process_group()


def spawn_parser(doc, port):
    """An argument parser with the flags of a spawn-launched job's launcher: --port, --world."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--port", type=int, default=port)
    ap.add_argument("--world", type=int, default=2)
    return ap


def spawn_and_report(worker, args):
    """Run worker(rank, world, args, results) on args.world spawned ranks, print each rank's wrong
    count, then finish with their total."""
    import torch.multiprocessing as mp
    results = multiprocessing.get_context("spawn").SimpleQueue()
    mp.spawn(worker, args=(args.world, args, results), nprocs=args.world, join=True)
    per_rank = dict(results.get() for _ in range(args.world))
    total = sum(per_rank.values())
    print("wrong results per rank: " + ", ".join(f"{r}: {per_rank[r]}" for r in sorted(per_rank)),
          flush=True)
    finish(total)


def jax_step_wrong(step, got_grads, got_loss, value_and_grad, params, make_batch, nproc, batch,
                   dev, log):
    """How many of a data-parallel JAX step's results (the summed gradients got_grads, name ->
    numpy array, and the mean loss got_loss) are wrong: each process's gradient and loss are
    recomputed from its known batch (make_batch(process, step, batch)) with value_and_grad, a
    plain jit on this process's device (no collective), and summed on the host."""
    import jax
    import numpy as np

    def off_by(got, want, rtol=1e-3):
        err = float(np.max(np.abs(got - want)))
        return err, err > rtol * float(np.max(np.abs(want))) + 1e-6

    want_g, want_l = None, 0.0
    for q in range(nproc):
        xq, yq = make_batch(q, step, batch)
        lq, gq = value_and_grad(jax.device_put(params, dev), jax.device_put(xq, dev),
                                jax.device_put(yq, dev))
        gq = jax.tree.map(np.asarray, gq)
        want_g = gq if want_g is None else jax.tree.map(np.add, want_g, gq)
        want_l += float(lq) / nproc
    wrong = 0
    for name in sorted(want_g):
        err, bad = off_by(got_grads[name], want_g[name])
        if bad:
            wrong += 1
            log(f"WRONG: step {step} psum of grad[{name}] off by {err:.3g} from the sum of the "
                f"processes' gradients")
    err, bad = off_by(np.float32(got_loss), np.float32(want_l))
    if bad:
        wrong += 1
        log(f"WRONG: step {step} pmean of the loss gave {got_loss:.6f}, expected {want_l:.6f}")
    return wrong
