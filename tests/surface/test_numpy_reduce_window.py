"""``lax.reduce_window`` (the reduce_window_{sum,max,min} primitives) against
``jax.lax.reduce_window``: values on ref and pjrt, vmap, and the gradient of
the sum (its transpose rule)."""

from __future__ import annotations

import jax
import jax.lax as jl
import numpy as np
import pytest

import refimpl as ri
from refimpl import lax
from tests.helpers.pjrt_helpers import skip_without_pjrt

jax.config.update("jax_platforms", "cpu")

X = np.random.default_rng(0).standard_normal((2, 7, 6)).astype(np.float32)
WINDOWS = [
    ((1, 3, 2), (1, 2, 2), "VALID", None, None),
    ((1, 3, 3), (1, 1, 1), "SAME", None, None),
    ((1, 2, 2), (1, 1, 2), ((0, 0), (1, 2), (0, 1)), (1, 2, 1), (1, 2, 1)),
    ((2, 3, 2), (1, 3, 1), ((1, 1), (0, 2), (2, 0)), None, (1, 1, 2)),
]
MONOIDS = [
    (lax.add, jl.add, 0.0),
    (lax.max, jl.max, -np.inf),
    (lax.min, jl.min, np.inf),
    (lax.add, jl.add, 1.5),
]


def close(ours, expected, tol=1e-5):
    np.testing.assert_allclose(np.asarray(ours), np.asarray(expected), rtol=tol, atol=tol)


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("monoid", MONOIDS, ids=["sum", "max", "min", "sum-init"])
def test_reduce_window_values(window, monoid):
    skip_without_pjrt()
    ours, theirs, init = monoid
    expected = jl.reduce_window(X, init, theirs, *window)

    def f(v):
        return lax.reduce_window(v, init, ours, *window)

    close(f(X), expected)
    close(ri.jit(f, backend="pjrt")(X), expected)


def test_reduce_window_integers_and_vmap():
    ints = np.arange(24, dtype=np.int32).reshape(4, 6)
    for ours, theirs, init in [(lax.add, jl.add, 0), (lax.max, jl.max, np.iinfo(np.int32).min)]:
        np.testing.assert_array_equal(
            np.asarray(lax.reduce_window(ints, init, ours, (2, 3), (1, 2), "VALID")),
            np.asarray(jl.reduce_window(ints, init, theirs, (2, 3), (1, 2), "VALID")),
        )
    ours = ri.vmap(
        lambda v: lax.reduce_window(v, -np.inf, lax.max, (2, 2), (2, 1), "SAME"), in_axes=1
    )(X)
    expected = jax.vmap(
        lambda v: jl.reduce_window(v, -np.inf, jl.max, (2, 2), (2, 1), "SAME"), in_axes=1
    )(X)
    close(ours, expected)


@pytest.mark.parametrize("window", WINDOWS)
def test_reduce_window_sum_gradient(window):
    def loss(v, module):
        out = module.reduce_window(v, 0.0, module.add, *window)
        return (out * out).sum()

    close(ri.grad(lambda v: loss(v, lax))(X), jax.grad(lambda v: loss(v, jl))(X), 1e-4)


def test_reduce_window_errors():
    # any computation is the general reduce_window (tests/surface/test_lax_parity.py); its checks:
    with pytest.raises(TypeError, match="dtypes should match"):
        lax.reduce_window(X, np.int32(1), lambda a, b: a * b, (1, 1, 1), (1, 1, 1), "VALID")
    # a window larger than the operand fits nowhere: empty, as JAX 0.10.2 (not an error)
    assert lax.reduce_window(X, 0.0, lax.add, (1, 9, 1), (1, 1, 1), "VALID").shape[1] == 0


@pytest.mark.parametrize("window", [w for w in WINDOWS if w[4] is None])
@pytest.mark.parametrize("monoid", MONOIDS[1:3], ids=["max", "min"])
def test_reduce_window_max_min_gradient(window, monoid):
    ours, theirs, init = monoid

    def loss(v, module, op):
        out = module.reduce_window(v, init, op, *window)
        return (out * out).sum()

    close(
        ri.grad(lambda v: loss(v, lax, ours))(X), jax.grad(lambda v: loss(v, jl, theirs))(X), 1e-4
    )


# negative padding crops the base-dilated operand (as lax.pad), JAX 0.10.2's reading
CROPPING = [
    ((1, 3, 2), (1, 1, 2), ((0, 0), (-2, 1), (1, -2)), None, None),
    ((1, 2, 2), (1, 2, 1), ((0, -1), (-1, -3), (2, -1)), (1, 2, 1), (1, 1, 2)),
    ((1, 2, 1), (1, 1, 1), ((0, 0), (-9, 0), (0, 0)), None, None),  # past the operand: empty
]


@pytest.mark.parametrize("window", CROPPING)
@pytest.mark.parametrize(
    "monoid",
    [*MONOIDS, (lax.mul, jl.mul, 1.0)],
    # names, not str(): a function's repr holds its address, which differs between
    # the xdist workers (each must collect the same test ids)
    ids=lambda m: f"{m[0].__name__}-init{m[2]}",
)
def test_reduce_window_negative_padding_crops(window, monoid):
    skip_without_pjrt()
    ours, theirs, init = monoid
    expected = jl.reduce_window(X, init, theirs, *window)

    def f(v):
        return lax.reduce_window(v, init, ours, *window)

    close(f(X), expected)
    close(ri.jit(f, backend="pjrt")(X), expected)
    pair = np.stack([X, -X])
    close(ri.vmap(f)(pair), jax.vmap(lambda v: jl.reduce_window(v, init, theirs, *window))(pair))


@pytest.mark.parametrize("window", CROPPING)
@pytest.mark.parametrize("backend_name", ["ref", "pjrt"])
def test_reduce_window_negative_padding_gradients(window, backend_name):
    if backend_name == "pjrt":
        skip_without_pjrt()

    def loss(v, module, op, init):
        out = module.reduce_window(v, init, op, *window)
        return (out * out).sum()

    ours = ri.jit(ri.grad(lambda v: loss(v, lax, lax.add, 0.0)), backend=backend_name)(X)
    close(ours, jax.grad(lambda v: loss(v, jl, jl.add, 0.0))(X), 1e-4)
    # JAX 0.10.2's grad of a max with negative padding fails (its transpose slices at a
    # negative start): the oracle crops the operand first and pads with zeros
    if window[3] is None:
        lows = [max(-lo, 0) for lo, _ in window[2]]
        highs = [max(-hi, 0) for _, hi in window[2]]
        crop = tuple(slice(lo, n - hi) for lo, hi, n in zip(lows, highs, X.shape, strict=True))
        rest = tuple((max(lo, 0), max(hi, 0)) for lo, hi in window[2])

        want = jax.grad(
            lambda v: (jl.reduce_window(v[crop], -np.inf, jl.max, *window[:2], rest) ** 2).sum()
        )(X)
        ours = ri.jit(ri.grad(lambda v: loss(v, lax, lax.max, -np.inf)), backend=backend_name)(X)
        close(ours, want, 1e-4)
