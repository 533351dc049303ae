"""The forms dot_general takes beyond JAX's (docs/semantics.md 16.2, "per-example
gradients"): the transpose rule contracts ``(y, ct)`` when that is already the
cotangent's layout (no transpose equation), and the pjrt lowering emits a
broadcast multiply when every contracted dim has size 1. Values against
NumPy and JAX (``jax.vjp``, ``jax.vmap(jax.grad)``), on both backends."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax
from tests.transforms.test_ad_rules_random import dot_configs

BACKENDS = ["ref", "pjrt"]
FEW = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))


def _primitives(program) -> list[str]:
    return [e.primitive.name for e in program.eqns]


def _einsum_reference(lhs, rhs, dims):
    """dot_general by einsum in float64 (complex128): batch, lhs free, rhs free."""
    (lc, rc), (lb, rb) = dims
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    lhs_sub = [None] * lhs.ndim
    rhs_sub = [None] * rhs.ndim
    for a, b in zip(lb, rb, strict=True):
        lhs_sub[a] = rhs_sub[b] = next(letters)
    for a, b in zip(lc, rc, strict=True):
        lhs_sub[a] = rhs_sub[b] = next(letters)
    for sub in (lhs_sub, rhs_sub):
        for i, s in enumerate(sub):
            if s is None:
                sub[i] = next(letters)
    out = [lhs_sub[d] for d in lb]
    out += [s for d, s in enumerate(lhs_sub) if d not in lb and d not in lc]
    out += [s for d, s in enumerate(rhs_sub) if d not in rb and d not in rc]
    wide = np.complex128 if np.iscomplexobj(lhs) else np.float64
    spec = f"{''.join(lhs_sub)},{''.join(rhs_sub)}->{''.join(out)}"
    return np.einsum(spec, lhs.astype(wide), rhs.astype(wide))


# --- lowering: a contraction over size-1 dims is a broadcast multiply -------------------


def _lowered(lhs, rhs, dims, **kw):
    f = ri.jit(lambda a, b: lax.dot_general(a, b, dims, **kw), backend="pjrt")
    return f, f.lower(lhs, rhs).as_text()


@pytest.mark.parametrize(
    "lhs_shape,rhs_shape,dims",
    [
        # per-example outer products of vmap(grad(x @ w)): (B, 1, H) x (B, 1, F)
        ((4, 1, 3), (4, 1, 5), (((1,), (1,)), ((0,), (0,)))),
        ((4, 1, 3), (4, 1, 1), (((1,), (1,)), ((0,), (0,)))),
        # no contraction at all, batched and not
        ((4, 3), (4, 5), (((), ()), ((0,), (0,)))),
        ((3,), (5,), (((), ()), ((), ()))),
        # size-1 contraction, unbatched rhs
        ((4, 1, 1), (6, 1), (((2,), (1,)), ((), ()))),
        # batch dims not leading in the operands, still in order
        ((1, 4, 3), (4, 1, 2), (((0,), (1,)), ((1,), (0,)))),
    ],
)
def test_size_one_contraction_lowers_to_multiply(lhs_shape, rhs_shape, dims):
    rng = np.random.default_rng(0)
    lhs = rng.normal(size=lhs_shape).astype(np.float32)
    rhs = rng.normal(size=rhs_shape).astype(np.float32)
    f, text = _lowered(lhs, rhs, dims)
    assert "stablehlo.dot_general" not in text and "stablehlo.multiply" in text, text
    got = np.asarray(f(lhs, rhs))
    want = np.asarray(jax.lax.dot_general(lhs, rhs, dims))
    # one product per element: exact, as JAX's (and NumPy's) dot
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, _einsum_reference(lhs, rhs, dims).astype(np.float32))


@pytest.mark.parametrize(
    "lhs_shape,rhs_shape,dims",
    [
        ((4, 3), (4, 3), (((1,), (1,)), ((0,), (0,)))),  # a real contraction (size 3)
        ((3, 4), (4, 5), (((), ()), ((1,), (0,)))),  # lhs free dim before its batch dim
        ((3, 4, 1), (1, 4, 2), (((2,), (0,)), ((1,), (1,)))),  # the same, size-1 contraction
    ],
)
def test_other_contractions_stay_dot_general(lhs_shape, rhs_shape, dims):
    rng = np.random.default_rng(1)
    lhs = rng.normal(size=lhs_shape).astype(np.float32)
    rhs = rng.normal(size=rhs_shape).astype(np.float32)
    f, text = _lowered(lhs, rhs, dims)
    assert "stablehlo.dot_general" in text, text
    np.testing.assert_allclose(
        np.asarray(f(lhs, rhs)), np.asarray(jax.lax.dot_general(lhs, rhs, dims)), rtol=1e-6
    )


@pytest.mark.parametrize(
    "dtype,preferred",
    [
        (np.float16, None),
        (ml_dtypes.bfloat16, None),
        (np.float16, np.float32),
        (np.int8, np.int32),
        (np.int32, None),
        (np.uint8, None),
        (np.bool_, None),
        (np.complex64, None),
    ],
    ids=lambda v: getattr(v, "__name__", str(v)),
)
def test_multiply_form_dtypes(dtype, preferred):
    """The multiply runs in the dot's accumulator type, so every dtype rounds
    (or wraps) as JAX's dot_general does."""
    rng = np.random.default_rng(2)
    dims = (((1,), (1,)), ((0,), (0,)))
    if dtype == np.bool_:
        lhs, rhs = rng.random((4, 1, 3)) < 0.5, rng.random((4, 1, 5)) < 0.5
    elif np.issubdtype(dtype, np.integer):
        lhs = rng.integers(-100, 100, (4, 1, 3)).astype(dtype)
        rhs = rng.integers(-100, 100, (4, 1, 5)).astype(dtype)
    elif dtype == np.complex64:
        lhs = (rng.normal(size=(4, 1, 3)) + 1j * rng.normal(size=(4, 1, 3))).astype(dtype)
        rhs = (rng.normal(size=(4, 1, 5)) + 1j * rng.normal(size=(4, 1, 5))).astype(dtype)
    else:
        lhs = (rng.normal(size=(4, 1, 3)) * 30).astype(dtype)
        rhs = (rng.normal(size=(4, 1, 5)) * 30).astype(dtype)
    f, text = _lowered(lhs, rhs, dims, preferred_element_type=preferred)
    assert "stablehlo.dot_general" not in text
    got = f(lhs, rhs)
    want = jax.lax.dot_general(lhs, rhs, dims, preferred_element_type=preferred)
    assert got.dtype == want.dtype
    if dtype == np.complex64:  # XLA may fuse the complex product's multiply-adds
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    else:
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    ref = ri.jit(lambda a, b: lax.dot_general(a, b, dims, preferred_element_type=preferred))
    if dtype == np.complex64:
        np.testing.assert_allclose(np.asarray(ref(lhs, rhs)), np.asarray(got), rtol=1e-6)
    else:
        np.testing.assert_array_equal(np.asarray(ref(lhs, rhs)), np.asarray(got))


@FEW
@given(dot_configs(), st.integers(0, 2**16))
def test_random_dot_general_pjrt_vs_numpy_and_jax(config, seed):
    """Random dimension numbers (sizes 1-3: many size-1 contractions, batch dims
    in any order), whichever form the lowering picks."""
    lhs_shape, rhs_shape, dims = config
    rng = np.random.default_rng(seed)
    lhs = rng.normal(size=lhs_shape).astype(np.float32)
    rhs = rng.normal(size=rhs_shape).astype(np.float32)
    got = np.asarray(ri.jit(lambda a, b: lax.dot_general(a, b, dims), backend="pjrt")(lhs, rhs))
    want = np.asarray(jax.lax.dot_general(lhs, rhs, dims, precision=jax.lax.Precision.HIGHEST))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got, _einsum_reference(lhs, rhs, dims), rtol=1e-5, atol=1e-6)


# --- transpose rule: (y, ct) when that is x's layout -------------------------------------


def test_grad_of_rhs_has_no_transpose():
    """``x @ w``: w's cotangent is ``dot_general(x, ct)`` contracting the rows,
    already (F, H); JAX's is ``dot_general(ct, x)`` then a transpose."""
    rng = np.random.default_rng(3)
    w = rng.normal(size=(3, 4)).astype(np.float32)
    x = rng.normal(size=(5, 3)).astype(np.float32)

    def loss(ns):
        return lambda w, x: ns.sum(ns.tanh(x @ w))

    program = ri.make_program(ri.grad(loss(rnp)))(w, x)
    assert "transpose" not in _primitives(program), program
    their_jaxpr = jax.make_jaxpr(jax.grad(loss(jnp)))(w, x)
    assert "transpose" in [e.primitive.name for e in their_jaxpr.jaxpr.eqns]  # what we avoid
    want = np.asarray(jax.grad(loss(jnp))(w, x))
    for backend in BACKENDS:
        got = np.asarray(ri.jit(ri.grad(loss(rnp)), backend=backend)(w, x))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_transpose_rule_either_operand_against_vjp(backend):
    """Cotangents of both operands through every layout case of a 2-D x 3-D
    contraction (a swapped or a transposed form), against ``jax.vjp``."""
    rng = np.random.default_rng(4)
    cases = [
        ((2, 3), (3, 4, 5), (((1,), (0,)), ((), ()))),
        ((3, 2), (3, 4, 5), (((0,), (0,)), ((), ()))),
        ((4, 2), (5, 4, 3), (((0,), (1,)), ((), ()))),
        ((2, 4, 3), (2, 3, 5), (((2,), (1,)), ((0,), (0,)))),
        ((3, 2, 4), (2, 5, 3), (((0,), (2,)), ((1,), (0,)))),
    ]
    for lhs_shape, rhs_shape, dims in cases:
        lhs = rng.normal(size=lhs_shape).astype(np.float32)
        rhs = rng.normal(size=rhs_shape).astype(np.float32)

        def ours(a, b, dims=dims):
            return lax.dot_general(a, b, dims)

        def theirs(a, b, dims=dims):
            return jax.lax.dot_general(a, b, dims, precision=jax.lax.Precision.HIGHEST)

        out, pull = jax.vjp(theirs, lhs, rhs)
        ct = rng.normal(size=out.shape).astype(np.float32)
        want = pull(ct)
        got = ri.jit(lambda a, b, c, f=ours: ri.vjp(f, a, b)[1](c), backend=backend)(lhs, rhs, ct)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-5)


# --- the benchmark's per-example gradients ----------------------------------------------


def _mlp_loss(ns):
    def loss(params, x, y):
        (w1, b1), (w2, b2) = params
        h = ns.tanh(x @ w1 + b1)
        return ns.sum((h @ w2 + b2 - y) ** 2)

    return loss


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("size", [(8, 16, 32), (32, 64, 64)])
def test_per_example_mlp_gradients(backend, size):
    """benchmarks/vmap.py's program: no transpose equation left, the values
    JAX's and a loop of per-example ``grad``s."""
    batch, features, hidden = size
    rng = np.random.default_rng(5)
    params = [
        (
            rng.normal(size=(features, hidden)).astype(np.float32) * 0.1,
            np.zeros(hidden, np.float32),
        ),
        (rng.normal(size=(hidden, 1)).astype(np.float32) * 0.1, np.zeros(1, np.float32)),
    ]
    x = rng.normal(size=(batch, features)).astype(np.float32)
    y = rng.normal(size=(batch, 1)).astype(np.float32)
    per_example = ri.vmap(ri.grad(_mlp_loss(rnp)), in_axes=(None, 0, 0))
    program = ri.make_program(per_example)(params, x, y)
    assert "transpose" not in _primitives(program), program
    got = jax.tree_util.tree_leaves(ri.jit(per_example, backend=backend)(params, x, y))
    want = jax.tree_util.tree_leaves(
        jax.vmap(jax.grad(_mlp_loss(jnp)), in_axes=(None, 0, 0))(params, x, y)
    )
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)
    single = ri.jit(ri.grad(_mlp_loss(rnp)), backend=backend)
    for i in (0, batch - 1):
        loop = jax.tree_util.tree_leaves(single(params, x[i], y[i]))
        for g, w in zip(got, loop, strict=True):
            np.testing.assert_allclose(np.asarray(g)[i], np.asarray(w), rtol=1e-5, atol=1e-6)
