# JAX job for the interposer's GPU acceptance: pmap psum over the local devices (XLA reaches NCCL
# through dlopen + dlsym), deterministic inputs, one "jax devices N checksum X" line. Two sizes:
# on one host XLA may reduce small arrays with its own peer-to-peer kernel instead of NCCL (on
# 2 H200s, 1024 floats made no NCCL collective call), so a 16 MiB array is reduced too.
import jax
import jax.numpy as jnp

n = jax.local_device_count()
f = jax.pmap(lambda v: jax.lax.psum(v, "i"), axis_name="i")
total = 0.0
for elems in (1024, 4 << 20):
    x = jnp.arange(n * elems, dtype=jnp.float32).reshape(n, elems) / elems
    for step in range(5):
        x = f(x + step) / n
        total += float(x.sum())
print(f"jax devices {n} checksum {total:.10e}", flush=True)
