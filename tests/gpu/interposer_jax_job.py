# JAX job for the interposer's GPU acceptance: pmap psum over the local devices (XLA reaches NCCL
# through dlopen + dlsym), deterministic inputs, one "jax devices N checksum X" line.
import jax
import jax.numpy as jnp

n = jax.local_device_count()
f = jax.pmap(lambda v: jax.lax.psum(v, "i"), axis_name="i")
x = jnp.arange(n * 1024, dtype=jnp.float32).reshape(n, 1024) / 1024
total = 0.0
for step in range(5):
    x = f(x + step)
    total += float(x.sum())
print(f"jax devices {n} checksum {total:.10e}", flush=True)
