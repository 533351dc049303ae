"""ri.invertible and ri.custom_ivjp: gradients against plain grad
and JAX, inverse rules, errors, residuals and backward-pass memory."""

from __future__ import annotations

import tracemalloc

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl.ad_checkpoint import saved_residuals

RNG = np.random.RandomState(0)
WIDTH = 16


def _params(depth, width=WIDTH, seed=0):
    rng = np.random.RandomState(seed)
    return [(rng.randn(width, width) / np.sqrt(width)).astype(np.float32) for _ in range(2 * depth)]


def _revnet(np_, params, x1, x2):
    for i in range(len(params) // 2):
        x1 = x1 + np_.tanh(x2 @ params[2 * i])
        x2 = x2 + np_.tanh(x1 @ params[2 * i + 1])
    return x1, x2


def _loss(kind):
    def loss(params, x1, x2):
        if kind == "invertible":
            y1, y2 = ri.invertible(lambda a, b: _revnet(rnp, params, a, b))(x1, x2)
        else:
            y1, y2 = _revnet(rnp, params, x1, x2)
        return rnp.sum(y1 * y2)

    return loss


def _jax_loss(params, x1, x2):
    y1, y2 = _revnet(jnp, params, x1, x2)
    return jnp.sum(y1 * y2)


def _inputs(batch=4, width=WIDTH):
    rng = np.random.RandomState(1)
    return [rng.randn(batch, width).astype(np.float32) for _ in range(2)]


def _assert_trees_close(got, want, rtol):
    for g, w in zip(ri.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True):
        g, w = np.asarray(g), np.asarray(w)
        scale = np.abs(w).max() + 1e-30
        assert np.abs(g - w).max() <= rtol * scale, np.abs(g - w).max() / scale


@pytest.mark.parametrize(
    "depth,rtol", [(8, 1e-5), (32, 1e-4), pytest.param(128, 5e-3, marks=pytest.mark.slow)]
)
def test_revnet_gradients_equal_plain_grad_and_jax(depth, rtol):
    params, (x1, x2) = _params(depth), _inputs()
    argnums = (0, 1, 2)
    plain = ri.grad(_loss("plain"), argnums)(params, x1, x2)
    inv = ri.grad(_loss("invertible"), argnums)(params, x1, x2)
    # rebuilding activations from the outputs rounds differently: the error
    # grows with depth (float32)
    _assert_trees_close(inv, plain, rtol)
    _assert_trees_close(inv, jax.grad(_jax_loss, argnums)(params, x1, x2), rtol)


@pytest.mark.parametrize("backend", ["ref", "pjrt"])
def test_revnet_under_jit(backend):
    params, (x1, x2) = _params(4), _inputs()
    got = ri.jit(ri.grad(_loss("invertible"), (0, 1, 2)), backend=backend)(params, x1, x2)
    _assert_trees_close(got, jax.grad(_jax_loss, (0, 1, 2))(params, x1, x2), 1e-5)


def test_residuals_are_outputs_and_closed_over_values_only():
    params, (x1, x2) = _params(8), _inputs()
    plain = saved_residuals(_loss("plain"), params, x1, x2)
    inv = saved_residuals(_loss("invertible"), params, x1, x2)
    act = (4, WIDTH)
    # invertible: the 16 weights, the two outputs (for its own backward
    # walk) and nothing per layer; plain grad keeps activations per layer.
    assert sum(a.shape == act for a in inv) == 2
    assert sum(a.shape == act for a in plain) >= 2 * 8 * 2


def test_values_jvp_vmap_linearize():
    params, (x1, x2) = _params(3), _inputs()
    f = ri.invertible(lambda a, b: _revnet(rnp, params, a, b))
    want = _revnet(jnp, params, x1, x2)
    _assert_trees_close(f(x1, x2), want, 1e-6)
    _assert_trees_close(ri.jit(f)(x1, x2), want, 1e-6)
    t = (np.ones_like(x1), np.zeros_like(x2))
    _, tout = ri.jvp(f, (x1, x2), t)
    _, tj = jax.jvp(lambda a, b: _revnet(jnp, params, a, b), (x1, x2), t)
    _assert_trees_close(tout, tj, 1e-5)
    _, f_jvp = ri.linearize(f, x1, x2)
    _assert_trees_close(f_jvp(*t), tj, 1e-4)
    xs = np.stack([x1, 2 * x1])
    got = ri.vmap(ri.grad(lambda a: rnp.sum(f(a, x2)[1])))(xs)
    want = jax.vmap(jax.grad(lambda a: jnp.sum(_revnet(jnp, params, a, x2)[1])))(xs)
    _assert_trees_close(got, want, 1e-5)


def test_every_inverse_rule():
    x = np.linspace(0.1, 0.9, 7).astype(np.float32)
    c = np.float32(1.7)

    def body(np_, v):
        v = v + c  # add
        v = v - 0.5  # sub
        v = 5.0 - v  # sub (second operand rebuilt)
        v = v * 3.0  # mul by a value
        v = v / c  # div by a value
        v = 2.0 / v  # div (denominator rebuilt)
        v = -v  # neg
        v = np_.exp(v)  # exp
        v = np_.log(v + 2.0)  # log
        v = np_.log1p(v)  # log1p
        return np_.expm1(v)  # expm1

    got = ri.grad(lambda v: rnp.sum(ri.invertible(lambda u: body(rnp, u))(v)))(x)
    want = jax.grad(lambda v: jnp.sum(body(jnp, v)))(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4)


def test_missing_inverse_rule_and_non_invertible_programs():
    x = np.linspace(0.1, 0.9, 7).astype(np.float32)
    with pytest.raises(NotImplementedError, match="Inverse rule for 'sin' not implemented"):
        ri.grad(lambda v: rnp.sum(ri.invertible(rnp.sin)(v)))(x)
    with pytest.raises(NotImplementedError, match="invertible"):
        ri.grad(lambda v: rnp.sum(ri.invertible(lambda u: u * u)(v)))(x)
    with pytest.raises(TypeError, match="callable"):
        ri.invertible(3)


def test_custom_ivjp():
    calls = []

    @ri.custom_ivjp
    def cube(x):
        return x * x * x  # not invertible equation by equation

    @cube.defivjp
    def cube_ivjp(inputs, outputs, out_cts):
        calls.append(inputs)
        x = rnp.cbrt(outputs)
        return (x,), (out_cts * 3.0 * x * x,)

    x = np.linspace(0.2, 1.5, 5).astype(np.float32)
    got = ri.grad(lambda v: rnp.sum(ri.invertible(lambda u: cube(u) + 1.0)(v)))(x)
    want = jax.grad(lambda v: jnp.sum(v**3 + 1.0))(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5)
    assert calls and calls[0][0] is None  # the input was unknown: rebuilt by ivjp
    # outside invertible it is the function, with its own derivative
    np.testing.assert_allclose(np.asarray(ri.grad(lambda v: cube(v).sum())(x)), want, rtol=1e-6)
    with pytest.raises(AttributeError, match="defivjp"):
        ri.custom_ivjp(lambda v: v)(x)


def _backward_peak(kind, depth):
    params = [ri.device_put(p) for p in _params(depth, 64)]
    x1, x2 = (ri.device_put(v) for v in _inputs(64, 64))
    loss = _loss(kind)
    tracemalloc.start()
    try:
        _, pullback = ri.vjp(lambda a, b: loss(params, a, b), x1, x2)
        tracemalloc.reset_peak()
        pullback(np.float32(1.0))
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_backward_memory_flat_for_invertible_linear_for_plain():
    # The minimum of two runs: a first run can allocate one-off caches (rule
    # tables, interned avals) that are not part of the backward pass's peak.
    inv = [min(_backward_peak("invertible", d) for _ in range(2)) for d in (4, 32)]
    plain = [min(_backward_peak("plain", d) for _ in range(2)) for d in (4, 32)]
    assert plain[1] > 4 * plain[0], plain  # grows with depth (8x the layers)
    assert inv[1] < 1.5 * inv[0], inv  # does not
    # growth with depth, not totals: the baseline (the per-layer temporaries
    # of one backward step, e.g. the reference's float32 tanh) is not storage
    assert inv[1] - inv[0] < 0.25 * (plain[1] - plain[0]), (inv, plain)


def test_grad_program_type_checks_and_rebuilds_in_the_backward_pass():
    params, (x1, x2) = _params(2), _inputs()
    program = ri.make_program(ri.grad(_loss("invertible"), (1, 2)))(params, x1, x2)
    ri.check_program(program)
    names = [e.primitive.name for e in program.walk_eqns()]
    # forward: one invertible call; backward: the rebuilt activations
    # (sub = y - tanh(...)) are part of the Program
    assert names.count("invertible") == 1
    assert "sub" in names and "invertible_lin" not in names


def test_shared_numpy_weights_are_one_constant_per_object():
    # A RevNet whose blocks share two NumPy weights (closed over, not device
    # arrays): every use converts the weight inside the trace. JAX makes one
    # constant per object; refimpl once kept a copy per use, so the invertible
    # VJP's memory grew with depth by two weights a block.
    w = _params(1, 64)
    shared = [w[0], w[1]] * 16

    def jaxpr_consts(f, *args):
        return len(ri.make_program(f)(*args).consts)

    x1, x2 = _inputs(8, 64)
    assert jaxpr_consts(lambda a, b: _revnet(rnp, shared, a, b), x1, x2) == 2
    assert len(jax.make_jaxpr(lambda a, b: _revnet(jnp, shared, a, b))(x1, x2).consts) == 2

    def peak(depth):
        x1, x2 = (ri.device_put(v) for v in _inputs(64, 64))
        f = ri.invertible(lambda a, b: _revnet(rnp, [w[0], w[1]] * depth, a, b))
        tracemalloc.start()
        try:
            _, pullback = ri.vjp(lambda a, b: rnp.sum(rnp.multiply(*f(a, b))), x1, x2)
            tracemalloc.reset_peak()
            pullback(np.float32(1.0))
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    small, large = (min(peak(d) for _ in range(2)) for d in (4, 32))
    # 28 more blocks of two 16 KiB weights would be ~900 KiB
    assert large - small < 200 * 1024, (small, large)
