"""A data-parallel training step with pmap: each device takes a shard of the
batch, gradients are averaged with lax.pmean, parameters stay replicated.

It asks for 4 devices, before anything starts, so every implementation runs
it on 4: the ref backend simulates ``ref_num_devices`` devices (1 unless
``REFIMPL_REF_NUM_DEVICES`` or ``ri.config.update("ref_num_devices", n)``
says otherwise), the pjrt backend's XLA CPU plugin has 4 by default, and
JAX's CPU client (the JAX twin of this script) makes as many as
``--xla_force_host_platform_device_count`` in ``XLA_FLAGS`` asks for (1
otherwise). Settings already in the environment win. The global batch is
fixed, so the result does not depend on the device count."""

import os

os.environ.setdefault("REFIMPL_REF_NUM_DEVICES", "4")
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    flags = os.environ.get("XLA_FLAGS", "")
    os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count=4".strip()

import refimpl as ri  # noqa: E402 -- the device counts must be set before it starts
import refimpl.numpy as rnp
from refimpl import lax, random

n_dev = ri.local_device_count()
global_batch = 8 * 3 * 4  # divisible by 1, 2, 3, 4, 6, 8 devices
kx, kw = random.split(random.PRNGKey(8))
x = random.normal(kx, (global_batch, 3))
y = x @ rnp.array([1.0, -2.0, 0.5]) + 1.0


def loss(params, x, y):
    w, b = params
    return rnp.mean((x @ w + b - y) ** 2)


def step(params, x, y):
    grads = lax.pmean(ri.grad(loss)(params, x, y), axis_name="devices")
    return ri.tree.map(lambda p, g: p - 0.1 * g, params, grads)


p_step = ri.pmap(step, axis_name="devices")
params = (rnp.zeros(3), rnp.float32(0.0))
replicated = ri.tree.map(lambda a: rnp.stack([a] * n_dev), params)
shards = (x.reshape(n_dev, -1, 3), y.reshape(n_dev, -1))
for _ in range(20):
    replicated = p_step(replicated, *shards)

final = ri.tree.map(lambda a: a[0], replicated)
results = {"params": final, "loss": loss(final, x, y)}
print(n_dev, "devices; params", final, "loss", float(results["loss"]))
