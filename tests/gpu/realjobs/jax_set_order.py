"""Multi-process JAX data-parallel training that all-reduces its gradients one parameter at a
time (a pmapped psum per gradient, as code that overlaps communication or streams gradients
does), walking the parameters grouped by shape (`defaultdict(set)`: same-shape tensors could be
stacked), then the loss's pmean; SGD; 20 steps, one process per device
(jax.distributed.initialize). Started once per process:

  python3 jax_set_order.py --process-id 0 --port 29650 & python3 jax_set_order.py --process-id 1 --port 29650

--bug set-order: the names inside a shape group are walked in the set's order. Python seeds its
  string hashes per process (unless PYTHONHASHSEED is set), so each process walks them in its own
  order: the founding bug of ncclrr (TensorFlow's nccl_ops.all_sum over gradients in per-GPU
  order). Same-shape gradients are psum'd at each other's places: no error, no hang, wrong
  training. For a repeatable run the process re-executes itself with PYTHONHASHSEED set to
  --hash-seeds' entry for its process id (different orders, printed at the start).
--bug none: the names are sorted; must finish with 0 wrong results.

Independent reference as in jax_psum.py: every process recomputes every process's local
gradient from the known seeds with a plain jit (no collective). Each process prints "#wrong N"
(its own count); exit status 0 when N == 0.
"""
import argparse
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import finish, jax_step_wrong, share_one_gpu  # noqa: E402 (no torch at load)


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--process-id", type=int, required=True)
    ap.add_argument("--num-processes", type=int, default=2)
    ap.add_argument("--port", type=int, default=29650)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--bug", choices=["none", "set-order"], default="none")
    ap.add_argument("--hash-seeds", default="0,2", help="PYTHONHASHSEED per process id")
    return ap.parse_args()


args = parse()
PID = args.process_id
if args.bug == "set-order":
    seed = args.hash_seeds.split(",")[PID]
    if os.environ.get("PYTHONHASHSEED") != seed:
        os.environ["PYTHONHASHSEED"] = seed
        os.execv(sys.executable, [sys.executable] + sys.argv)
share_one_gpu(PID)
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

try:
    jax.config.update("jax_default_matmul_precision", "highest")
except Exception as e:  # pragma: no cover
    print(f"[process {PID}] note: cannot set matmul precision: {e}", flush=True)

jax.distributed.initialize(f"127.0.0.1:{args.port}", args.num_processes, PID)

D_IN, H, N_CLASSES = 32, 128, 10
NDEV = jax.device_count()


def log(msg):
    print(f"[process {PID}] {msg}", flush=True)


def init_params(key):
    ks = jax.random.split(key, 5)
    dims = [(D_IN, H), (H, H), (H, H), (H, H), (H, N_CLASSES)]
    params = {}
    for i, (k, (m, n)) in enumerate(zip(ks, dims), start=1):
        params[f"w{i}"] = np.asarray(jax.random.normal(k, (m, n), jnp.float32)) / np.sqrt(m)
        params[f"b{i}"] = np.zeros(n, np.float32)
    return params


def loss_fn(params, x, y):
    h = x
    for i in range(1, 5):
        h = jnp.tanh(h @ params[f"w{i}"] + params[f"b{i}"])
    logits = h @ params["w5"] + params["b5"]
    logp = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))


TEACHER = np.random.default_rng(7).standard_normal((D_IN, N_CLASSES)).astype(np.float32)


def make_batch(process, step, batch):
    rng = np.random.default_rng(300_000 * (process + 1) + step)
    x = rng.standard_normal((batch, D_IN)).astype(np.float32)
    y = (x @ TEACHER).argmax(axis=1).astype(np.int32)
    return x, y


def host(a):
    v = np.asarray(a.addressable_shards[0].data) if hasattr(a, "addressable_shards") else a
    v = np.asarray(v)
    return v.reshape(v.shape[1:]) if v.ndim and v.shape[0] == 1 else v


def walk_order(params):
    """The order the gradients are all-reduced in: by shape, then by name within a shape."""
    by_shape = defaultdict(set)
    for name, p in params.items():
        by_shape[p.shape].add(name)
    if args.bug == "set-order":
        return [n for s in sorted(by_shape) for n in by_shape[s]]
    return [n for s in sorted(by_shape) for n in sorted(by_shape[s])]


def main():
    assert jax.local_device_count() == 1, "one local device per process expected"
    dev = jax.local_devices()[0]
    p_grad = jax.pmap(jax.value_and_grad(loss_fn), axis_name="batch")
    p_sum = jax.pmap(lambda g: jax.lax.psum(g, "batch"), axis_name="batch")
    p_mean = jax.pmap(lambda v: jax.lax.pmean(v, "batch"), axis_name="batch")
    p_sgd = jax.pmap(lambda p, g: jax.tree.map(lambda a, b: a - args.lr * b / NDEV, p, g))
    local_value_and_grad = jax.jit(jax.value_and_grad(loss_fn))

    params_np = init_params(jax.random.PRNGKey(0))
    order = walk_order(params_np)
    log(f"PYTHONHASHSEED={os.environ.get('PYTHONHASHSEED', 'random')}: gradients all-reduced "
        f"in the order {' '.join(order)}")
    params = jax.tree.map(lambda a: a[None], params_np)
    wrong = 0
    for step in range(args.steps):
        x, y = make_batch(PID, step, args.batch)
        loss, grads = p_grad(params, x[None], y[None])
        summed = {}
        for name in order:
            summed[name] = p_sum(grads[name])
        loss = p_mean(loss)
        params = p_sgd(params, summed)

        got_l = float(host(loss))
        got_g = {n: host(v) for n, v in summed.items()}
        wrong += jax_step_wrong(step, got_g, got_l, local_value_and_grad, params_np, make_batch,
                                args.num_processes, args.batch, dev, log)
        params_np = jax.tree.map(host, params)
        if PID == 0 and (step % 5 == 0 or step == args.steps - 1):
            log(f"step {step:3d} loss {got_l:.4f}")
    log(f"done: {wrong} wrong results")
    return wrong


if __name__ == "__main__":
    finish(main())
