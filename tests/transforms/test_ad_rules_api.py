"""Every differentiable primitive through the public API: ``ri.jvp`` and
``ri.vjp`` against ``jax.jvp`` / ``jax.vjp`` of the same ``lax`` program on
random inputs, on the reference backend and under ``jit(backend="pjrt")``;
and ``check_grads`` to second order (float64, reference backend).

A case is ``fn(lax, *args)`` written once against ``refimpl.lax`` and
``jax.lax`` alike (``take``/``scatter_add`` map the one-axis gather and
scatter primitives to their ``jax.numpy`` equivalents).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import jax.test_util
import ml_dtypes
import numpy as np
import pytest

import refimpl as ri
from refimpl import dtypes
from refimpl import lax as rlax
from refimpl.test_util import check_grads

if not all(hasattr(ri, name) for name in ("jvp", "vjp", "grad")):  # pragma: no cover
    pytest.skip("refimpl.jvp / refimpl.vjp not available", allow_module_level=True)

F16, BF16 = np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
TOL = {F32: (3e-5, 3e-6), F64: (1e-12, 1e-13), F16: (2e-2, 2e-3), BF16: (6e-2, 2e-2)}


class _JaxLax:
    """jax.lax plus the one-axis gather/scatter of refimpl.lax, spelled in jnp."""

    def __getattr__(self, name):
        return getattr(jax.lax, name)

    @staticmethod
    def gather_along_axis(x, indices, axis=0, mode="clip", fill_value=None):
        return jnp.take(x, indices, axis=axis, mode=mode, fill_value=fill_value)

    @staticmethod
    def scatter_add_along_axis(x, indices, updates, axis=0, mode="drop"):
        return x.at[(slice(None),) * axis + (indices,)].add(updates, mode=mode)

    @staticmethod
    def scatter_along_axis(x, indices, updates, axis=0, mode="drop"):
        return x.at[(slice(None),) * axis + (indices,)].set(updates, mode=mode)


JLAX = _JaxLax()


def _sample(rng, shape, dtype, domain):
    if domain == "pos":
        x = rng.uniform(0.5, 2.0, shape)
    elif domain == "unit":
        x = rng.uniform(-0.9, 0.9, shape)
    elif domain == "neg":
        x = rng.uniform(-2.0, -0.3, shape)
    elif domain == "away":
        x = rng.uniform(0.5, 2.0, shape) * rng.choice([-1, 1], shape)
    else:
        x = rng.normal(size=shape)
    return np.asarray(x).astype(dtype)


IDX = np.array([[3, 0], [1, 6]], np.int32)  # repeats none, one out of range (6 >= 5)
DOT_DIMS = (((2,), (1,)), ((0,), (0,)))
CONV_KW = dict(window_strides=(2, 1), padding=((1, 0), (1, 1)), rhs_dilation=(1, 2))

# name, fn(lax, *args), [(shape, domain), ...], smooth (check_grads applies)
CASES = [
    ("neg", lambda L, x: L.neg(x), [((3, 4), "any")]),
    ("exp", lambda L, x: L.exp(x), [((3, 4), "any")]),
    ("log", lambda L, x: L.log(x), [((3, 4), "pos")]),
    ("log1p", lambda L, x: L.log1p(x), [((3, 4), "pos")]),
    ("expm1", lambda L, x: L.expm1(x), [((3, 4), "any")]),
    ("tanh", lambda L, x: L.tanh(x), [((3, 4), "any")]),
    ("sin", lambda L, x: L.sin(x), [((3, 4), "any")]),
    ("cos", lambda L, x: L.cos(x), [((3, 4), "any")]),
    ("tan", lambda L, x: L.tan(x), [((3, 4), "unit")]),
    ("asin", lambda L, x: L.asin(x), [((3, 4), "unit")]),
    ("acos", lambda L, x: L.acos(x), [((3, 4), "unit")]),
    ("atan", lambda L, x: L.atan(x), [((3, 4), "any")]),
    ("sinh", lambda L, x: L.sinh(x), [((3, 4), "any")]),
    ("cosh", lambda L, x: L.cosh(x), [((3, 4), "any")]),
    ("sqrt", lambda L, x: L.sqrt(x), [((3, 4), "pos")]),
    ("rsqrt", lambda L, x: L.rsqrt(x), [((3, 4), "pos")]),
    ("cbrt", lambda L, x: L.cbrt(x), [((3, 4), "away")]),
    ("logistic", lambda L, x: L.logistic(x), [((3, 4), "any")]),
    ("erf", lambda L, x: L.erf(x), [((3, 4), "any")]),
    ("abs", lambda L, x: L.abs(x), [((3, 4), "away")]),
    ("sign", lambda L, x: L.mul(L.sign(x), x), [((3, 4), "away")]),
    ("floor", lambda L, x: L.add(L.floor(x), x), [((3, 4), "any")]),
    ("ceil", lambda L, x: L.add(L.ceil(x), x), [((3, 4), "any")]),
    ("round", lambda L, x: L.add(L.round(x), x), [((3, 4), "any")]),
    ("integer_pow", lambda L, x: L.integer_pow(x, 3), [((3, 4), "any")]),
    ("integer_pow_neg", lambda L, x: L.integer_pow(x, -2), [((3, 4), "away")]),
    ("add", lambda L, x, y: L.add(x, y), [((3, 4), "any"), ((3, 4), "any")]),
    ("add_rank0", lambda L, x, y: L.add(x, y), [((3, 4), "any"), ((), "any")]),
    ("sub", lambda L, x, y: L.sub(x, y), [((3, 4), "any"), ((), "any")]),
    ("mul", lambda L, x, y: L.mul(x, y), [((3, 4), "any"), ((3, 4), "any")]),
    ("mul_rank0", lambda L, x, y: L.mul(x, y), [((), "any"), ((3, 4), "any")]),
    ("div", lambda L, x, y: L.div(x, y), [((3, 4), "any"), ((3, 4), "away")]),
    ("rem", lambda L, x, y: L.rem(x, y), [((3, 4), "any"), ((3, 4), "away")]),
    ("pow", lambda L, x, y: L.pow(x, y), [((3, 4), "pos"), ((3, 4), "any")]),
    ("max", lambda L, x, y: L.max(x, y), [((3, 4), "any"), ((3, 4), "any")]),
    ("min", lambda L, x, y: L.min(x, y), [((3, 4), "any"), ((3, 4), "any")]),
    ("atan2", lambda L, x, y: L.atan2(x, y), [((3, 4), "any"), ((3, 4), "any")]),
    ("select_n",
     lambda L, x, y, z: L.select_n(L.convert_element_type(L.gt(x, z), np.int32), x, y),
     [((3, 4), "any"), ((3, 4), "any"), ((3, 4), "any")]),
    # lo <= hi (for lo > hi the result is hi, whose tangent JAX's rule drops)
    ("clamp", lambda L, a, x, b: L.clamp(a, x, b), [((3, 4), "neg"), ((3, 4), "any"),
                                                    ((3, 4), "pos")]),
    # (jax.jvp fails on a rank-0 bound's tangent: here the bounds are constants)
    ("clamp_rank0", lambda L, x: L.clamp(x.dtype.type(-0.5), x, x.dtype.type(0.7)),
     [((3, 4), "any")]),
    ("convert_f16", lambda L, x: L.convert_element_type(L.convert_element_type(x, np.float16),
                                                         x.dtype), [((3, 4), "any")]),
    ("reduce_sum", lambda L, x: L.reduce_sum(x, (0, 2)), [((3, 4, 2), "any")]),
    ("reduce_prod", lambda L, x: L.reduce_prod(x, (1,)), [((3, 4, 2), "away")]),
    ("reduce_max", lambda L, x: L.reduce_max(x, (0, 2)), [((3, 4, 2), "any")]),
    ("reduce_min", lambda L, x: L.reduce_min(x, (1,)), [((3, 4, 2), "any")]),
    ("argmax", lambda L, x: L.argmax(x, 1, np.int32), [((3, 4), "any")]),
    ("cumsum", lambda L, x: L.cumsum(x, 1, reverse=True), [((3, 5), "any")]),
    ("cumprod", lambda L, x: L.cumprod(x, 1), [((3, 5), "away")]),
    ("cummax", lambda L, x: L.cummax(x, 0), [((5, 3), "any")]),
    ("cummin", lambda L, x: L.cummin(x, 1, reverse=True), [((3, 5), "any")]),
    ("sort", lambda L, x: L.sort(x, dimension=0), [((5, 3), "any")]),
    ("sort_key_val", lambda L, k, v: L.sort_key_val(k, v, 1), [((3, 5), "any"), ((3, 5), "any")]),
    ("broadcast_in_dim", lambda L, x: L.broadcast_in_dim(x, (2, 3, 4), (1, 2)),
     [((3, 1), "any")]),
    ("reshape", lambda L, x: L.reshape(x, (2, 6)), [((3, 4), "any")]),
    ("squeeze_expand", lambda L, x: L.expand_dims(L.squeeze(x, (1,)), (0,)),
     [((3, 1, 4), "any")]),
    ("transpose", lambda L, x: L.transpose(x, (2, 0, 1)), [((2, 3, 4), "any")]),
    ("rev", lambda L, x: L.rev(x, (0, 1)), [((3, 4), "any")]),
    ("slice", lambda L, x: L.slice(x, (1, 0), (6, 5), (2, 3)), [((7, 5), "any")]),
    ("pad", lambda L, x, v: L.pad(x, v, ((1, -1, 1), (-2, 2, 0))),
     [((4, 5), "any"), ((), "any")]),
    ("concatenate", lambda L, x, y: L.concatenate([x, y, x], 1),
     [((2, 3), "any"), ((2, 1), "any")]),
    ("dynamic_slice", lambda L, x: L.dynamic_slice(x, (np.int32(1), np.int32(4)), (3, 3)),
     [((5, 6), "any")]),
    ("dynamic_update_slice",
     lambda L, x, u: L.dynamic_update_slice(x, u, (np.int32(4), np.int32(1))),
     [((5, 6), "any"), ((2, 3), "any")]),
    ("gather_clip", lambda L, x: L.gather_along_axis(x, IDX, 1, mode="clip"), [((3, 5), "any")]),
    ("gather_fill",
     lambda L, x: L.gather_along_axis(x, IDX, 0, mode="fill", fill_value=0.5), [((5, 3), "any")]),
    ("scatter_add", lambda L, x, u: L.scatter_add_along_axis(x, IDX, u, 1),
     [((3, 5), "any"), ((3, 2, 2), "any")]),
    ("scatter", lambda L, x, u: L.scatter_along_axis(x, IDX, u, 0),
     [((5, 3), "any"), ((2, 2, 3), "any")]),
    ("dot_general", lambda L, a, b: L.dot_general(a, b, DOT_DIMS, precision="highest"),
     [((2, 3, 4), "any"), ((2, 4, 5), "any")]),
    ("conv", lambda L, a, b: L.conv_general_dilated(a, b, precision="highest", **CONV_KW),
     [((2, 3, 7, 6), "any"), ((4, 3, 3, 2), "any")]),
    ("conv_groups",
     lambda L, a, b: L.conv_general_dilated(a, b, (1,), ((1, 1),), feature_group_count=2,
                                            precision="highest"),
     [((2, 4, 6), "any"), ((6, 2, 3), "any")]),
]  # fmt: skip
IDS = [c[0] for c in CASES]
# Piecewise or integer-valued: finite differences across a kink are meaningless
# there; their derivatives are checked against JAX only.
NOT_SMOOTH = {"argmax", "convert_f16"}  # (float16 rounding: finite differences see steps)


def _args(rng, specs, dtype):
    return [_sample(rng, shape, dtype, domain) for shape, domain in specs]


def _assert_tree_close(actual, expected, dtype, what):
    actual_leaves = jax.tree_util.tree_leaves(actual)
    expected_leaves = jax.tree_util.tree_leaves(expected)
    assert len(actual_leaves) == len(expected_leaves), what
    rtol, atol = TOL[dtype]
    for a, e in zip(actual_leaves, expected_leaves, strict=True):
        a, e = np.asarray(a), np.asarray(e)
        assert a.shape == e.shape, (what, a.shape, e.shape)
        if e.dtype == jax.dtypes.float0:
            assert a.dtype == dtypes.float0, (what, a.dtype)
            continue
        assert a.dtype == e.dtype, (what, a.dtype, e.dtype)
        np.testing.assert_allclose(
            a.astype(np.float64), e.astype(np.float64), rtol=rtol, atol=atol, err_msg=what
        )


def _check_against_jax(fn, args, rng, dtype, backend):
    ri_fn = functools.partial(fn, rlax)
    jax_fn = functools.partial(fn, JLAX)
    tangents = [_sample(rng, np.shape(a), dtype, "any") for a in args]

    def ri_jvp(primals, tangents):
        return ri.jvp(ri_fn, primals, tangents)

    def ri_vjp(primals, ct):
        return ri.vjp(ri_fn, *primals)[1](ct)

    if backend == "pjrt":
        ri_jvp = ri.jit(ri_jvp, backend="pjrt")
        ri_vjp = ri.jit(ri_vjp, backend="pjrt")
    out, tangent_out = ri_jvp(tuple(args), tuple(tangents))
    jax_out, jax_tangent_out = jax.jvp(jax_fn, tuple(args), tuple(tangents))
    _assert_tree_close(out, jax_out, dtype, "jvp primal")
    _assert_tree_close(tangent_out, jax_tangent_out, dtype, "jvp tangent")
    jax_out, jax_vjp = jax.vjp(jax_fn, *args)
    if any(np.asarray(o).dtype == jax.dtypes.float0 or not np.issubdtype(np.asarray(o).dtype,
           np.inexact) for o in jax.tree_util.tree_leaves(jax_out)):  # fmt: skip
        return  # integer output: no cotangent to pull back
    ct = jax.tree_util.tree_map(lambda o: _sample(rng, np.shape(o), dtype, "any"), jax_out)
    _assert_tree_close(ri_vjp(tuple(args), ct), jax_vjp(ct), dtype, "vjp")


# JAX takes seconds to differentiate these eagerly: in the slow suite only
HEAVY = {"cummax", "cummin", "cumprod", "reduce_prod", "scatter"}
F32_CASES = [
    pytest.param(*case, marks=pytest.mark.slow, id=case[0]) if case[0] in HEAVY
    else pytest.param(*case, id=case[0])
    for case in CASES
]  # fmt: skip


@pytest.mark.parametrize("backend", ["ref", "pjrt"])
@pytest.mark.parametrize("name,fn,specs", F32_CASES)
def test_jvp_and_vjp_match_jax_f32(name, fn, specs, backend, rng):
    if backend == "pjrt":
        from tests.helpers.pjrt_helpers import skip_without_pjrt

        skip_without_pjrt()
    _check_against_jax(fn, _args(rng, specs, F32), rng, F32, backend)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [F16, BF16], ids=["f16", "bf16"])
@pytest.mark.parametrize("name,fn,specs", CASES, ids=IDS)
def test_jvp_and_vjp_match_jax_low_precision(name, fn, specs, dtype, rng):
    if name in ("conv", "conv_groups", "dot_general", "reduce_prod", "cumprod"):
        pytest.skip("long sums/products in 16-bit floats: accumulation order dominates")
    _check_against_jax(fn, _args(rng, specs, dtype), rng, dtype, "ref")


@pytest.mark.slow
@pytest.mark.parametrize("name,fn,specs", CASES, ids=IDS)
def test_jvp_and_vjp_match_jax_f64(name, fn, specs, rng, x64):
    _check_against_jax(fn, _args(rng, specs, F64), rng, F64, "ref")


@pytest.mark.slow
@pytest.mark.parametrize("name,fn,specs", CASES, ids=IDS)
def test_check_grads_second_order(name, fn, specs, rng, x64):
    if name in NOT_SMOOTH:
        pytest.skip("integer-valued output")
    check_grads(functools.partial(fn, rlax), _args(rng, specs, F64), order=2)


@pytest.mark.parametrize("name", ["sin", "mul_rank0", "reduce_max", "pad", "conv", "sort"])
def test_check_grads_second_order_quick(name, rng, x64):
    """A fast subset of the second-order checks, in the default suite."""
    _, fn, specs = CASES[IDS.index(name)]
    check_grads(functools.partial(fn, rlax), _args(rng, specs, F64), order=2)


def test_check_grads_catches_a_wrong_derivative(monkeypatch, rng, x64):
    """check_grads is not vacuous: a sin whose jvp returns 2 cos fails it."""
    from refimpl.primitives import elementwise

    real_rule = elementwise.sin_p.jvp_rule

    def wrong_rule(primals, tangents):
        out, t = real_rule(primals, tangents)
        return out, rlax.mul(t, np.float64(2.0))

    monkeypatch.setattr(elementwise.sin_p, "jvp_rule", wrong_rule)
    x = _sample(rng, (3,), F64, "any")
    with pytest.raises(AssertionError, match="JVP"):
        check_grads(rlax.sin, (x,), order=1, modes=("fwd",))
    with pytest.raises(AssertionError, match="VJP"):
        check_grads(rlax.sin, (x,), order=1, modes=("rev",))


def test_integer_inputs_have_float0_tangents():
    x = np.arange(4, dtype=np.int32)
    y = np.linspace(0, 1, 4).astype(F32)
    out, t = ri.jvp(
        lambda a, b: rlax.mul(rlax.convert_element_type(a, np.float32), b),
        (x, y),
        (np.zeros(4, dtypes.float0), np.ones(4, F32)),
    )
    np.testing.assert_allclose(np.asarray(t), x.astype(F32))
    _, pullback = ri.vjp(lambda a: rlax.argmax(rlax.mul(a, y), 0, np.int32), y)
    (ct,) = pullback(np.zeros((), dtypes.float0))
    assert np.asarray(ct).dtype == F32 and not np.asarray(ct).any()


# Python-scalar (weakly typed) inputs: the weak type of every jvp output and
# of the gradient matches JAX's.
WEAK_CASES = {
    "sin": lambda L, x: L.sin(x),
    "mul": lambda L, x: L.mul(x, 2.0),
    "max": lambda L, x: L.max(x, 0.5),
    "pow": lambda L, x: L.pow(x, 2.5),
    "integer_pow": lambda L, x: L.integer_pow(x, 3),
    "div": lambda L, x: L.div(1.0, x),
    "abs": lambda L, x: L.abs(x),
    "clamp": lambda L, x: L.clamp(0.0, x, 2.0),
    "broadcast": lambda L, x: L.reduce_sum(L.broadcast_in_dim(x, (3,), ()), (0,)),
    "pad": lambda L, x: L.reduce_sum(L.pad(L.broadcast_in_dim(x, (3,), ()), 0.0, ((1, 1, 0),)),
                                     (0,)),
    "dynamic_slice": lambda L, x: L.reduce_sum(
        L.dynamic_slice(L.broadcast_in_dim(x, (3,), ()), (1,), (2,)), (0,)),
    "reduce_max": lambda L, x: L.reduce_max(L.broadcast_in_dim(x, (3,), ()), (0,)),
    "select_n": lambda L, x: L.select_n(True, x, L.mul(x, 3.0)),
}  # fmt: skip


def _weak(x):
    aval = getattr(x, "aval", None)
    return aval.weak_type if aval is not None else x.weak_type


@pytest.mark.parametrize("name", list(WEAK_CASES))
def test_weak_types_match_jax(name):
    fn = WEAK_CASES[name]
    ours = ri.jvp(functools.partial(fn, rlax), (1.5,), (1.0,))
    theirs = jax.jvp(functools.partial(fn, JLAX), (1.5,), (1.0,))
    assert [_weak(v) for v in ours] == [_weak(v) for v in theirs]
    grad = ri.grad(functools.partial(fn, rlax))(1.5)
    jax_grad = jax.grad(functools.partial(fn, JLAX))(1.5)
    assert _weak(grad) == _weak(jax_grad)
    np.testing.assert_allclose(np.asarray(grad), np.asarray(jax_grad), rtol=1e-6)


def _mixed_program(L, x):
    y = L.add(L.mul(L.sin(x), L.exp(L.tanh(x))), L.integer_pow(x, 3))
    y = L.add(L.cumsum(y, 0), L.cumprod(L.logistic(x), 0))
    z = L.reduce_max(L.pad(y, x.dtype.type(0.1), ((1, 1, 1),)), (0,))
    s = L.sort(y)
    total = L.add(z, L.reduce_sum(L.mul(s, L.rev(x, (0,))), (0,)))
    return L.add(total, L.reduce_prod(L.cos(x), (0,)))


@pytest.mark.parametrize(
    "backend",
    [pytest.param("ref", marks=pytest.mark.slow), "pjrt"],  # the interpreter takes ~10 s here
)
def test_hessian_of_a_mixed_program(backend):
    """Second derivatives through many rules at once (jvp of the linearized
    program, transposes of transposes), under jit on each backend."""
    if backend == "pjrt":
        from tests.helpers.pjrt_helpers import skip_without_pjrt

        skip_without_pjrt()
    x = np.linspace(-1, 1, 5).astype(F32)
    ours = ri.jit(ri.hessian(functools.partial(_mixed_program, rlax)), backend=backend)(x)
    theirs = jax.hessian(functools.partial(_mixed_program, JLAX))(x)
    np.testing.assert_allclose(np.asarray(ours), theirs, rtol=2e-5, atol=2e-5)


COMPLEX_CASES = [c for c in CASES if c[0] in (
    "exp", "log", "sin", "cos", "tanh", "sqrt", "neg", "add", "sub", "mul", "div", "integer_pow",
    "reduce_sum", "reduce_prod", "cumsum", "reshape", "transpose", "pad", "concatenate",
    "dynamic_slice", "dynamic_update_slice", "dot_general",
)]  # fmt: skip


@pytest.mark.parametrize("name,fn,specs", COMPLEX_CASES, ids=[c[0] for c in COMPLEX_CASES])
def test_complex_jvp_and_vjp_match_jax(name, fn, specs, rng):
    """Holomorphic rules on complex64: the transpose is JAX's (no conjugation)."""
    args = [
        (_sample(rng, s, F32, d) + 1j * _sample(rng, s, F32, "unit")).astype(np.complex64)
        for s, d in specs
    ]
    tangents = [(a * (0.5 - 0.25j)).astype(np.complex64) for a in args]
    ours = ri.jvp(functools.partial(fn, rlax), tuple(args), tuple(tangents))
    theirs = jax.jvp(functools.partial(fn, JLAX), tuple(args), tuple(tangents))
    for a, e in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
        assert np.asarray(a).dtype == np.complex64
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=1e-4, atol=1e-5)
    out, pullback = jax.vjp(functools.partial(fn, JLAX), *args)
    ct = (np.ones(np.shape(out)) * (1 - 2j)).astype(np.complex64)
    ours = ri.vjp(functools.partial(fn, rlax), *args)[1](ct)
    for a, e in zip(ours, pullback(ct), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=1e-4, atol=1e-5)


def test_complex_abs_matches_jax(rng):
    z = (rng.normal(size=5) + 1j * rng.normal(size=5)).astype(np.complex64)
    z[0] = 0  # |z| is read as 1 there, as in JAX
    t = (rng.normal(size=5) + 1j * rng.normal(size=5)).astype(np.complex64)
    _, ours = ri.jvp(rlax.abs, (z,), (t,))
    _, theirs = jax.jvp(jax.lax.abs, (z,), (t,))
    np.testing.assert_allclose(np.asarray(ours), theirs, rtol=1e-6, atol=1e-7)
    ct = rng.normal(size=5).astype(F32)
    (ours,) = ri.vjp(rlax.abs, z)[1](ct)
    (theirs,) = jax.vjp(jax.lax.abs, z)[1](ct)
    assert np.asarray(ours).dtype == np.complex64
    np.testing.assert_allclose(np.asarray(ours), theirs, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", [np.complex64, np.float32])
@pytest.mark.parametrize("op", ["neg", "exp", "conj"])
def test_check_grads_of_a_rank0_array(op, dtype):
    # lax_autodiff_test's records with shape (): JAX's check_grads runs them.
    x = np.asarray(0.5 + (0.25j if dtype == np.complex64 else 0), dtype)
    jax.test_util.check_grads(getattr(jax.lax, op), (x,), 2, ["fwd", "rev"])
    check_grads(getattr(rlax, op), (x,), 2, ["fwd", "rev"])


def _wrong_bwd(api):
    """sin whose custom_vjp backward pass is 2 cos (the forward pass is right)."""
    f = api.custom_vjp(lambda x: api.numpy.sin(x))
    f.defvjp(lambda x: (api.numpy.sin(x), x), lambda x, ct: (2 * api.numpy.cos(x) * ct,))
    return f


def _check_grads_outcome(api, check, program, modes, order):
    fun, args = program(api)
    try:
        check(fun, args, order=order, modes=modes)
    except (AssertionError, TypeError) as e:
        return type(e).__name__
    return "ok"


_CHECK_GRADS_PROGRAMS = {
    "tanh_of_product": lambda api: (
        lambda x, y: api.numpy.tanh(x * y),
        (np.linspace(-1, 1, 4), np.float64(0.5)),
    ),
    "loop": lambda api: (
        lambda x: api.lax.fori_loop(0, 3, lambda i, c: api.numpy.sin(c) * x, x),
        (np.linspace(0.1, 1, 3),),
    ),
    "wrong_custom_vjp": lambda api: (_wrong_bwd(api), (np.linspace(0.1, 1, 3),)),
    # (its reverse mode differs: JAX's finite difference of the integer output
    # is not zero, refimpl's is)
    "integer_output": lambda api: (lambda x: (x * 2).astype(np.int32), (np.arange(3.0),)),
}
_MODES = [("fwd", "rev", "lin"), ("lin",), "rev", ("fwd",)]


@pytest.mark.parametrize(
    "program,modes",
    [(p, m) for p in ("loop", "tanh_of_product", "wrong_custom_vjp") for m in _MODES]
    + [("integer_output", ("fwd",)), ("integer_output", "lin")],
    ids=str,
)
def test_check_grads_modes_as_jax(x64, program, modes):
    # JAX 0.10.2's check_grads takes "lin" (the JVP through linearize), a mode's
    # name alone, and asserts the JVP's output and tangent dtypes match (an
    # integer output's float0 tangent fails, as JAX); refimpl refused "lin" and
    # a string, and never compared those dtypes
    prog, order = _CHECK_GRADS_PROGRAMS[program], 1 if program == "integer_output" else 2
    want = _check_grads_outcome(jax, jax.test_util.check_grads, prog, modes, order)
    got = _check_grads_outcome(ri, check_grads, prog, modes, order)
    assert got == want
