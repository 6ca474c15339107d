"""Multi-process JAX exchanging blocks the ways sequence- and expert-parallel code does: one global
device mesh, a jax.jit'd step whose shard_map body passes each process's block round the ring
with jax.lax.ppermute (XLA issues a collective-permute: grouped NCCL Sends and Recvs), folding
each block in as it arrives (ring attention's pattern), then redistributes chunks with
jax.lax.all_to_all (expert parallelism's dispatch) and averages a scalar with jax.lax.pmean.
Started once per process:

  python3 jax_ring.py --process-id 0 --port 29667 & python3 jax_ring.py --process-id 1 --port 29667

No bug variant: a process-dependent permutation compiles another program on one process, which
stops inside XLA before any NCCL call (jax_shard_map.py says the same); this job checks that
XLA's point-to-point traffic gives no false finding.

Independent reference: every block comes from a known seed, so each process computes on the host
what the ring fold, the all-to-all and the mean must give, and compares. Each process prints a
final line "#wrong N" (its own count); exit status 0 when N == 0, else 1.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import finish, jax_start  # noqa: E402 (no torch at load)


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--process-id", type=int, required=True)
    ap.add_argument("--num-processes", type=int, default=2)
    ap.add_argument("--port", type=int, default=29667)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rows", type=int, default=256, help="rows of each process's block")
    ap.add_argument("--width", type=int, default=64)
    return ap.parse_args()


args = parse()
PID = args.process_id
shard_map = jax_start(PID, args.num_processes, args.port)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402
NP = args.num_processes


def log(msg):
    print(f"[process {PID}] {msg}", flush=True)


def make_block(process, step):
    rng = np.random.default_rng(100 * (process + 1) + step)
    return rng.standard_normal((args.rows, args.width)).astype(np.float32)


def fold(acc, block, q):
    # What each arriving block adds (attention-like: a score per row against a query, then the
    # block weighted by it).
    score = jnp.tanh(block @ q)
    return acc + score[:, None] * block


def body(x, q):
    ring = [(i, (i + 1) % NP) for i in range(NP)]
    acc = fold(jnp.zeros_like(x), x, q)
    block = x
    for _ in range(NP - 1):
        block = jax.lax.ppermute(block, "data", ring)
        acc = fold(acc, block, q)
    spread = jax.lax.all_to_all(x, "data", split_axis=0, concat_axis=0, tiled=True)
    mean = jax.lax.pmean(jnp.sum(acc), "data")
    return acc, spread, mean


def expected(step, q):
    blocks = [make_block(p, step) for p in range(NP)]
    acc = sum(np.tanh(b @ q)[:, None] * b for b in blocks)
    chunk = args.rows // NP
    spread = np.concatenate([b[PID * chunk:(PID + 1) * chunk] for b in blocks])
    return acc, spread, float(np.sum(acc))


def main():
    mesh = Mesh(np.array(jax.devices()), ("data",))
    log(f"{jax.process_count()} processes, mesh {mesh.shape}")
    sharded, replicated = NamedSharding(mesh, P("data")), NamedSharding(mesh, P())
    step_fn = jax.jit(shard_map(body, mesh=mesh, in_specs=(P("data"), P()),
                                out_specs=(P("data"), P("data"), P())))
    host = lambda a: np.asarray(a.addressable_shards[0].data)  # noqa: E731
    q = np.random.default_rng(5).standard_normal(args.width).astype(np.float32) / 8
    gq = jax.make_array_from_process_local_data(replicated, q)
    wrong = 0
    for step in range(args.steps):
        gx = jax.make_array_from_process_local_data(sharded, make_block(PID, step))
        acc, spread, mean = step_fn(gx, gq)
        want_acc, want_spread, want_mean = expected(step, q)
        for name, got, want in (("ring fold", host(acc), want_acc),
                                ("all_to_all", host(spread), want_spread),
                                ("pmean", np.float32(host(mean)), np.float32(want_mean))):
            err = float(np.max(np.abs(got - want)))
            if err > 1e-3 * float(np.max(np.abs(want))) + 1e-5:
                wrong += 1
                log(f"WRONG: step {step} {name} off by {err:.3g}")
        if PID == 0 and step % 5 == 0:
            log(f"step {step:3d} mean {float(host(mean)):.4f}")
    log(f"done: {wrong} wrong results")
    return wrong


if __name__ == "__main__":
    finish(main())
