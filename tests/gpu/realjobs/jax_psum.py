"""Multi-process JAX data-parallel training of a small MLP: one process per device
(jax.distributed.initialize), a pmapped train step that takes jax.grad of the loss, psums the
gradients and pmeans the loss over the "batch" axis, and applies SGD inside the step. Each
process feeds its own batches (leading axis = its one local device), as in multi-host pmap
training. Started once per process:

  python3 jax_psum.py --process-id 0 --port 29618 & python3 jax_psum.py --process-id 1 --port 29618

--bug branch: on --branch-step, process 1 alone logs the global gradient norm through a second
  pmapped function (a psum of a scalar), as debugging code guarded by the process index does.
  Its NCCL communicator then has one call more than process 0's: the scalar all-reduce is paired
  with process 0's next gradient all-reduce (different count), which hangs or garbles the sums.
--bug none: no extra call; must finish with 0 wrong results.

Independent reference: the batches come from known seeds (process p, step s), so each process
recomputes every process's local gradient and loss with a plain single-device jit on its own
device (no collective), sums them on the host and compares with what the psum/pmean returned.

Each process prints a final line "#wrong N" (its own count); exit status 0 when N == 0, else 1.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import finish, jax_step_wrong, share_one_gpu  # noqa: E402 (no torch at load)


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--process-id", type=int, required=True)
    ap.add_argument("--num-processes", type=int, default=2)
    ap.add_argument("--port", type=int, default=29618)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--bug", choices=["none", "branch"], default="none")
    ap.add_argument("--branch-step", type=int, default=7)
    return ap.parse_args()


args = parse()
PID = args.process_id
# Before JAX starts its backends: several processes on one GPU (each its own NCCL host id, no
# preallocation of most of the GPU's memory by the first one).
share_one_gpu(PID)
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

try:  # full fp32 matmuls, so that the reference and the pmapped step round alike
    jax.config.update("jax_default_matmul_precision", "highest")
except Exception as e:  # pragma: no cover - an option renamed in some release
    print(f"[process {PID}] note: cannot set matmul precision: {e}", flush=True)

jax.distributed.initialize(f"127.0.0.1:{args.port}", args.num_processes, PID)

D_IN, N_CLASSES = 32, 10
NDEV = jax.device_count()  # devices over all processes: the size of the "batch" axis


def log(msg):
    print(f"[process {PID}] {msg}", flush=True)


def init_params(key, hidden):
    k1, k2, k3 = jax.random.split(key, 3)
    def dense(k, m, n):
        return np.asarray(jax.random.normal(k, (m, n), jnp.float32)) / np.sqrt(m)
    return {"w1": dense(k1, D_IN, hidden), "b1": np.zeros(hidden, np.float32),
            "w2": dense(k2, hidden, hidden), "b2": np.zeros(hidden, np.float32),
            "w3": dense(k3, hidden, N_CLASSES), "b3": np.zeros(N_CLASSES, np.float32)}


def loss_fn(params, x, y):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    h = jnp.tanh(h @ params["w2"] + params["b2"])
    logits = h @ params["w3"] + params["b3"]
    logp = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))


TEACHER = np.random.default_rng(7).standard_normal((D_IN, N_CLASSES)).astype(np.float32)


def make_batch(process, step, batch):
    rng = np.random.default_rng(100_000 * (process + 1) + step)
    x = rng.standard_normal((batch, D_IN)).astype(np.float32)
    y = (x @ TEACHER).argmax(axis=1).astype(np.int32)
    return x, y


def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    grads = jax.lax.psum(grads, axis_name="batch")
    loss = jax.lax.pmean(loss, axis_name="batch")
    new_params = jax.tree.map(lambda p, g: p - args.lr * g / NDEV, params, grads)
    return new_params, grads, loss


def grad_norm(grads):
    sq = sum(jnp.sum(g * g) for g in jax.tree.leaves(grads))
    return jnp.sqrt(jax.lax.psum(sq, axis_name="batch"))


def host(a):
    """A pmap output as a numpy array without its device axis (one local device)."""
    try:
        v = np.asarray(a)
    except Exception:  # not fully addressable: take this process's shard
        v = np.asarray(a.addressable_shards[0].data)
    return v.reshape(v.shape[1:]) if v.ndim and v.shape[0] == 1 else v


def main():
    nloc = jax.local_device_count()
    ndev = jax.device_count()
    log(f"{jax.process_count()} processes, {ndev} devices ({nloc} local: {jax.local_devices()})")
    assert nloc == 1, "one local device per process expected"
    dev = jax.local_devices()[0]

    p_train_step = jax.pmap(train_step, axis_name="batch")
    p_grad_norm = jax.pmap(grad_norm, axis_name="batch")
    local_value_and_grad = jax.jit(jax.value_and_grad(loss_fn))

    params_np = init_params(jax.random.PRNGKey(0), args.hidden)  # identical on every process
    params = jax.tree.map(lambda a: a[None], params_np)  # leading axis: the local device
    wrong = 0

    for step in range(args.steps):
        x, y = make_batch(PID, step, args.batch)
        params, grads, loss = p_train_step(params, x[None], y[None])

        if args.bug == "branch" and PID == 1 and step == args.branch_step:
            gn = p_grad_norm(grads)  # only this process calls it: one extra psum
            log(f"step {step}: debug global grad norm {float(host(gn)):.4f}")

        got_l = float(host(loss))
        got_g = jax.tree.map(host, grads)
        wrong += jax_step_wrong(step, got_g, got_l, local_value_and_grad, params_np, make_batch,
                                args.num_processes, args.batch, dev, log)
        params_np = jax.tree.map(host, params)
        if PID == 0 and (step % 5 == 0 or step == args.steps - 1):
            log(f"step {step:3d} loss {got_l:.4f}")

    log(f"done: {wrong} wrong results")
    return wrong


if __name__ == "__main__":
    finish(main())
