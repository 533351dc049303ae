"""Peak memory of a training loop with and without donating the state.

The state (parameters and momentum, a few MB in several leaves) goes through
``state = step(state)`` every iteration. Without donation the call must
produce a new state while the caller still holds the old one, so the peak is
about two copies. With ``donate_argnums=0`` the reference interpreter writes
each updated leaf into the old leaf's buffer as soon as the old value is
dead, so the peak is about one copy plus a few leaf-sized temporaries.

Memory is measured with ``tracemalloc`` (NumPy reports its buffers to it):
the peak of traced memory over the loop, against the size of the state.

Run: ``python benchmarks/donation_memory.py [--mb 4] [--steps 5]``.
"""

from __future__ import annotations

import argparse
import gc
import tracemalloc
from typing import Any

import numpy as np

import refimpl as ri
from refimpl import lax

LEARNING_RATE = 0.01
MOMENTUM = 0.9


def make_state(total_mb: float, n_layers: int = 4) -> dict[str, Any]:
    """Weights, biases and one momentum buffer per parameter: ~``total_mb`` MB."""
    side = int(np.sqrt(total_mb * 2**20 / 4 / (2 * n_layers)))
    rng = np.random.default_rng(0)
    state: dict[str, Any] = {}
    for layer in range(n_layers):
        for name, shape in ((f"w{layer}", (side, side)), (f"b{layer}", (side,))):
            value = rng.standard_normal(shape).astype(np.float32)
            state[name] = ri.device_put(value)
            state[f"m_{name}"] = ri.device_put(np.zeros(shape, np.float32))
    return state


def state_bytes(state: dict[str, Any]) -> int:
    return sum(leaf.size * leaf.dtype.itemsize for leaf in state.values())


def step(state: dict[str, Any]) -> dict[str, Any]:
    """One SGD-with-momentum update; the "gradient" is a stand-in (sin of the weight)."""
    new: dict[str, Any] = {}
    for name in (k for k in state if not k.startswith("m_")):
        param, velocity = state[name], state[f"m_{name}"]
        grad = lax.sin(param) * 0.01
        velocity = velocity * MOMENTUM + grad
        new[f"m_{name}"] = velocity
        new[name] = param - velocity * LEARNING_RATE
    return new


def peak_bytes(jitted: Any, state_mb: float, steps: int) -> tuple[int, int]:
    """(peak traced bytes over ``steps`` iterations, bytes of the state).

    Tracing starts before the state is made, so the peak counts the state
    itself plus whatever a step allocates on top of it.
    """
    gc.collect()
    tracemalloc.start()
    try:
        state = jitted(make_state(state_mb))  # the first call traces: not part of the peak
        tracemalloc.reset_peak()
        for _ in range(steps):
            state = jitted(state)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, state_bytes(state)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=4.0, help="size of the state in MB")
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()

    plain = ri.jit(step)
    donating = ri.jit(step, donate_argnums=0)
    peak_plain, size = peak_bytes(plain, args.mb, args.steps)
    peak_donating, _ = peak_bytes(donating, args.mb, args.steps)

    mb = 2**20
    print(f"state: {size / mb:.2f} MB in {len(make_state(args.mb))} leaves, {args.steps} steps")
    print(f"{'':14}{'peak MB':>10}{'x state':>10}")
    print(f"{'no donation':14}{peak_plain / mb:>10.2f}{peak_plain / size:>10.2f}")
    print(f"{'donation':14}{peak_donating / mb:>10.2f}{peak_donating / size:>10.2f}")
    print(f"ratio donation / no donation: {peak_donating / peak_plain:.2f}")


if __name__ == "__main__":
    main()
