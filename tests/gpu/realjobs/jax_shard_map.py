"""Multi-process JAX data-parallel training written the current way: one global device mesh over
every process's device, the batch a global array sharded over the "data" axis
(jax.make_array_from_process_local_data), parameters replicated, and one jax.jit'd train step
whose body is a shard_map: jax.grad of the loss averaged over "data" (jax.lax.pmean) on the
local shard, SGD with momentum. XLA decides how the reductions become NCCL calls (it may
combine them). Started once per process:

  python3 jax_shard_map.py --process-id 0 --port 29666 & \
  python3 jax_shard_map.py --process-id 1 --port 29666

The gradient of the averaged loss (jax.lax.pmean of the local loss inside the function that
jax.grad differentiates) is what XLA reduces over the devices: the parameters are replicated, so
their cotangents are summed across "data" by the transpose of that mean. No bug variant: a
process-dependent step (one process compiling another program) stops inside XLA before any NCCL
call, which leaves nothing to record; this job checks that the current JAX style gives no false
finding.

Independent reference: the batches come from known seeds, so each process recomputes every
process's local gradient and loss with a plain single-device jit (no collective), averages them
on the host and compares with what the step returned.

Each process prints a final line "#wrong N" (its own count); exit status 0 when N == 0, else 1.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import finish, jax_start, jax_step_wrong  # noqa: E402 (no torch at load)


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--process-id", type=int, required=True)
    ap.add_argument("--num-processes", type=int, default=2)
    ap.add_argument("--port", type=int, default=29666)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=64, help="per process")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--lr", type=float, default=0.05)
    return ap.parse_args()


args = parse()
PID = args.process_id
shard_map = jax_start(PID, args.num_processes, args.port)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

D_IN, N_CLASSES = 32, 10


def log(msg):
    print(f"[process {PID}] {msg}", flush=True)


def init_params(hidden):
    rng = np.random.default_rng(0)
    def dense(m, n):
        return (rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32)
    return {"w1": dense(D_IN, hidden), "b1": np.zeros(hidden, np.float32),
            "w2": dense(hidden, hidden), "b2": np.zeros(hidden, np.float32),
            "w3": dense(hidden, N_CLASSES), "b3": np.zeros(N_CLASSES, np.float32)}


def loss_fn(params, x, y):
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    h = jax.nn.relu(h @ params["w2"] + params["b2"])
    logp = jax.nn.log_softmax(h @ params["w3"] + params["b3"])
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))


TEACHER = np.random.default_rng(7).standard_normal((D_IN, N_CLASSES)).astype(np.float32)


def make_batch(process, step, batch):
    rng = np.random.default_rng(1000 * (process + 1) + step)
    x = rng.standard_normal((batch, D_IN)).astype(np.float32)
    return x, (x @ TEACHER).argmax(axis=1).astype(np.int32)


def local_step(params, momentum, x, y):
    # The loss averaged over the devices: its gradient with respect to the replicated
    # parameters is the mean of the devices' gradients (XLA's all-reduce).
    loss, grads = jax.value_and_grad(lambda p: jax.lax.pmean(loss_fn(p, x, y), "data"))(params)
    momentum = jax.tree.map(lambda m, g: 0.9 * m + g, momentum, grads)
    params = jax.tree.map(lambda p, m: p - args.lr * m, params, momentum)
    return params, momentum, grads, loss


def main():
    mesh = Mesh(np.array(jax.devices()), ("data",))
    log(f"{jax.process_count()} processes, mesh {mesh.shape}")
    dev = jax.local_devices()[0]
    replicated, sharded = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))
    step_fn = jax.jit(shard_map(local_step, mesh=mesh,
                                in_specs=(P(), P(), P("data"), P("data")),
                                out_specs=(P(), P(), P(), P())))
    local_value_and_grad = jax.jit(jax.value_and_grad(loss_fn))

    params_np = init_params(args.hidden)
    put = lambda tree: jax.tree.map(  # noqa: E731
        lambda a: jax.make_array_from_process_local_data(replicated, a), tree)
    params = put(params_np)
    momentum = put(jax.tree.map(np.zeros_like, params_np))
    host = lambda a: np.asarray(a.addressable_shards[0].data)  # noqa: E731
    wrong = 0
    for step in range(args.steps):
        x, y = make_batch(PID, step, args.batch)
        gx = jax.make_array_from_process_local_data(sharded, x)
        gy = jax.make_array_from_process_local_data(sharded, y)
        params, momentum, grads, loss = step_fn(params, momentum, gx, gy)
        got_g = jax.tree.map(host, grads)
        got_l = float(host(loss))
        # The reference sums the processes' gradients; the step averaged them.
        got_sum = jax.tree.map(lambda g: g * args.num_processes, got_g)
        wrong += jax_step_wrong(step, got_sum, got_l, local_value_and_grad, params_np, make_batch,
                                args.num_processes, args.batch, dev, log)
        params_np = jax.tree.map(host, params)
        if PID == 0 and (step % 5 == 0 or step == args.steps - 1):
            log(f"step {step:3d} loss {got_l:.4f}")
    log(f"done: {wrong} wrong results")
    return wrong


if __name__ == "__main__":
    finish(main())
