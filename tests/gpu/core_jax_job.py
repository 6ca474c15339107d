# A JAX job whose NCCL is reached through dlopen (XLA's nccl stub): pmap psum over the local
# devices, a few steps.
import jax
import jax.numpy as jnp

n = jax.local_device_count()
f = jax.pmap(lambda v: jax.lax.psum(v, "i"), axis_name="i")
x = jnp.ones((n, 1024))
for _ in range(5):
    x = f(x)
x.block_until_ready()
print("jax devices", n, "x[0,0] =", float(x[0, 0]), flush=True)
