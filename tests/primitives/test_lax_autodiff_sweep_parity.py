"""Derivatives of lax ops as JAX 0.10.2's tests/lax_autodiff_test.py sweeps
them (issue 29): every op of its ``LAX_GRAD_OPS`` over its shapes and dtypes,
and its structural tests (convolutions, dot_general, reductions, windows,
cumulative ops, sort, top_k, gather/scatter, fft, pad, slices, special
values), each through ``jvp``, ``vjp`` and their second order (``jvp`` of
``jvp``, ``vjp`` of ``vjp``), compared with JAX's numbers (values, shapes,
dtypes, weak types; not refimpl's own finite differences), on both backends,
eagerly and under ``jit``."""

from __future__ import annotations

import itertools

import jax
import numpy as np
import pytest

import refimpl as ri
from tests.helpers.parity import assert_same_as_jax

f32, c64 = np.float32, np.complex64


def _operand(rng, kind, shape, dtype):
    """JAX's rng factories, roughly: default, small, positive, not_small,
    uniform in (0.1, 0.4) and in (-0.9, 0.9)."""

    def real():
        if kind == "default":
            return rng.standard_normal(shape) * 2
        if kind == "small":
            return rng.standard_normal(shape) * 0.3
        if kind == "positive":
            return rng.random(shape) * 3 + 0.2
        if kind == "not_small":
            return (rng.random(shape) * 3 + 1) * rng.choice([-1, 1], shape)
        low, high = {"low": (0.1, 0.4), "unit": (-0.9, 0.9)}[kind]
        return rng.uniform(low, high, shape)

    value = real() + 1j * real() if np.dtype(dtype).kind == "c" else real()
    return np.asarray(value).astype(dtype)


F, C, FC = [f32], [c64], [f32, c64]
# (op name, number of operands, operand kind, dtypes), as LAX_GRAD_OPS
GRAD_OPS = [
    ("neg", 1, "default", FC), ("floor", 1, "low", F), ("ceil", 1, "low", F),
    ("round", 1, "low", F), ("exp", 1, "small", FC), ("exp2", 1, "small", FC),
    ("expm1", 1, "default", FC), ("log", 1, "positive", FC), ("log1p", 1, "positive", FC),
    ("sinh", 1, "default", FC), ("cosh", 1, "default", FC), ("tanh", 1, "default", FC),
    ("sin", 1, "default", FC), ("cos", 1, "default", FC), ("tan", 1, "unit", FC),
    ("asin", 1, "unit", F), ("acos", 1, "unit", F), ("atan2", 2, "default", F),
    ("erf", 1, "small", F), ("erfc", 1, "small", F), ("erf_inv", 1, "small", F),
    ("bessel_i0e", 1, "default", F), ("bessel_i1e", 1, "default", F), ("real", 1, "default", C),
    ("imag", 1, "default", C), ("complex", 2, "default", F), ("conj", 1, "default", FC),
    ("abs", 1, "positive", FC), ("pow", 2, "positive", FC), ("sqrt", 1, "positive", F),
    ("sqrt", 1, "default", C), ("rsqrt", 1, "positive", F), ("rsqrt", 1, "default", C),
    ("cbrt", 1, "not_small", F), ("logistic", 1, "default", FC), ("add", 2, "default", FC),
    ("sub", 2, "default", FC), ("mul", 2, "default", FC), ("div", 2, "not_small", FC),
    ("max", 2, "default", F), ("min", 2, "default", F), ("atan", 1, "default", F),
    ("asinh", 1, "default", FC), ("acosh", 1, "positive", F), ("atanh", 1, "unit", F),
    ("lgamma", 1, "positive", F), ("digamma", 1, "positive", F),
]  # fmt: skip
SHAPE_GROUPS = [[(3,)], [(), (3, 4), (3, 1)], [(2, 1, 4)]]  # a subset of the test file's

GRAD_CASES = [
    (name, shapes, np.dtype(dtype).name, kind)
    for name, nargs, kind, dts in GRAD_OPS
    for group in SHAPE_GROUPS
    for shapes in itertools.combinations_with_replacement(group, nargs)
    for dtype in dts
]


def _derivatives(ns, op, args, tangents, jit):
    """The primal, jvp, vjp and both second orders of ``op`` at ``args``,
    from ``ns`` (jax or refimpl)."""

    def run(*xs):
        primal, tangent = ns.jvp(op, xs, tangents)
        out, pull = ns.vjp(op, *xs)
        ct = ns.tree_util.tree_map(lambda o: ns.numpy.ones_like(o) * 0.7, out)
        second_fwd = ns.jvp(lambda *a: ns.jvp(op, a, tangents)[1], xs, tangents)[1]
        rev = lambda *a: ns.vjp(op, *a)[1](ct)  # noqa: E731
        rev_out, rev_pull = ns.vjp(rev, *xs)
        return primal, tangent, pull(ct), second_fwd, rev_pull(rev_out)

    return (ns.jit(run) if jit else run)(*args)


def _assert_derivatives_as_jax(op_of, args, tol):
    rng = np.random.default_rng(1)
    tangents = tuple(_operand(rng, "default", np.shape(a), np.asarray(a).dtype) for a in args)
    want = _derivatives(jax, op_of(jax), args, tangents, jit=False)
    for jit in (False, True):
        got = _derivatives(ri, op_of(ri), args, tangents, jit)
        assert_same_as_jax(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("name,shapes,dtype,kind", GRAD_CASES, ids=str)
def test_op_derivatives_as_jax(backend, name, shapes, dtype, kind):
    rng = np.random.default_rng(0)
    args = [_operand(rng, kind, s, dtype) for s in shapes]
    _assert_derivatives_as_jax(lambda ns: getattr(ns.lax, name), args, tol=2e-3)


_R = np.random.default_rng(2)
_A = _R.standard_normal((3, 4)).astype(f32)
_IMG = (_R.standard_normal((2, 3, 3, 4)) * 0.3).astype(f32)
_KER = (_R.standard_normal((3, 3, 1, 2)) * 0.3).astype(f32)
_GN = jax.lax.GatherDimensionNumbers  # the same fields in refimpl
_ROWS = dict(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))

# name -> (op of a namespace, operands)
STRUCTURAL = {
    "clamp": (lambda ns: ns.lax.clamp, [_A - 10, _A, _A + 10]),
    "concatenate": (lambda ns: lambda *a: ns.lax.concatenate(a, 1), [_A, _A[:, :1], _A]),
    "split": (lambda ns: lambda x: ns.lax.split(x, (1, 3), 1), [_A]),
    "conv_same_strided": (
        lambda ns: lambda lhs, rhs: ns.lax.conv(lhs, rhs, (1, 2), "SAME", precision="highest"),
        [_IMG, _KER],
    ),
    "conv_dilated_padded": (
        lambda ns: lambda lhs, rhs: ns.lax.conv_general_dilated(
            lhs, rhs, (1, 2), [(-1, 0), (0, -1)], (2, 1), (1, 2), precision="highest"
        ),
        [_IMG, _KER],
    ),
    "conv_feature_groups": (
        lambda ns: lambda lhs, rhs: ns.lax.conv_general_dilated(
            lhs, rhs, (1, 1), "SAME", feature_group_count=3, precision="highest"
        ),
        [_IMG, _KER[:, :1]],
    ),
    "dot_general_batch": (
        lambda ns: lambda a, b: ns.lax.dot_general(
            a, b, (((2,), (1,)), ((0,), (0,))), precision="highest"
        ),
        [_IMG[0], np.swapaxes(_IMG[1], 1, 2)],
    ),
    "dot_general_complex": (
        lambda ns: lambda a, b: ns.lax.dot_general(a, b, (((1,), (0,)), ((), ()))),
        [(_A + 1j * _A[::-1]).astype(c64), (_A.T - 2j).astype(c64)],
    ),
    "broadcast_in_dim": (lambda ns: lambda x: ns.lax.broadcast_in_dim(x, (2, 3, 4), (0, 2)),
                         [_A[:2, :1]]),
    "reshape_dims": (lambda ns: lambda x: ns.lax.reshape(x, (4, 6), (2, 0, 1)), [_IMG[0, :2]]),
    "pad_negative_interior": (
        lambda ns: lambda x, v: ns.lax.pad(x, v, [(1, -1, 1), (-2, 1, 2)]),
        [_A, np.float32(0.3)],
    ),
    "select_n": (lambda ns: lambda a, b, c: ns.lax.select_n(np.int32(2), a, b, c), [_A, _A, _A]),
    "slice_strided": (lambda ns: lambda x: ns.lax.slice(x, (1, 0), (3, 4), (1, 2)), [_A]),
    "dynamic_slice_clamped": (lambda ns: lambda x: ns.lax.dynamic_slice(x, (1, 3), (2, 3)), [_A]),
    "dynamic_update_slice": (
        lambda ns: lambda x, u: ns.lax.dynamic_update_slice(x, u, (3, 1)),
        [_A, _A[:2, :2]],
    ),
    "reduce_max_ties": (lambda ns: lambda x: ns.lax.reduce_max(x, (1,)),
                        [np.array([[1, 3, 3], [2, 2, 0]], f32)]),
    "reduce_prod": (lambda ns: lambda x: ns.lax.reduce_prod(x, (0,)), [_A]),
    "reduce_window_max": (
        lambda ns: lambda x: ns.lax.reduce_window(x, -np.inf, ns.lax.max, (2, 2), (1, 1), "SAME"),
        [_A],
    ),
    "reduce_window_add_dilated": (
        lambda ns: lambda x: ns.lax.reduce_window(
            x, 0.0, ns.lax.add, (2, 2), (1, 1), "VALID", base_dilation=(2, 1),
            window_dilation=(1, 2),
        ),
        [_A],
    ),
    "cumprod_reverse": (lambda ns: lambda x: ns.lax.cumprod(x, 1, True), [_A]),
    "cummax": (lambda ns: lambda x: ns.lax.cummax(x, 0), [_A]),
    "cumlogsumexp": (lambda ns: lambda x: ns.lax.cumlogsumexp(x, 1), [_A]),
    "sort_key_value": (lambda ns: lambda k, v: ns.lax.sort((k, v), dimension=1, num_keys=1),
                       [_A, _A * 2]),
    "top_k": (lambda ns: lambda x: ns.lax.top_k(x, 2)[0], [_A]),
    "gather_fill": (
        lambda ns: lambda x: ns.lax.gather(
            x, np.array([[0], [7], [2]], np.int32),
            _GN(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)), (1, 4),
            mode="fill",
        ),
        [_A],
    ),
    "scatter_mul_repeated": (lambda ns: lambda x: x.at[np.array([1, 1, 2])].mul(_A[1, :3]),
                             [_A[0]]),
    "scatter_unique": (
        lambda ns: lambda x, u: ns.lax.scatter(
            x, np.array([[1], [0]], np.int32), u, ns.lax.ScatterDimensionNumbers(**_ROWS),
            unique_indices=True,
        ),
        [_A, _A[:2] * 3],
    ),
    "irfft_2d": (lambda ns: lambda x: ns.lax.fft(x, ns.lax.FftType.IRFFT, (3, 6)),
                 [(_A + 1j * _A[::-1]).astype(c64)]),
    "rfft": (lambda ns: lambda x: ns.lax.fft(x, ns.lax.FftType.RFFT, (4,)), [_A]),
    "tanh_special": (lambda ns: ns.lax.tanh, [np.array([0.0, 1000.0], f32)]),
    "sin_special": (lambda ns: ns.lax.sin, [np.array([0, np.pi, np.pi / 2, np.pi / 4], f32)]),
    "erfc_special": (lambda ns: ns.lax.erfc, [np.array([0.0, 10.0], f32)]),
    "igamma_in_x": (lambda ns: lambda x: ns.lax.igamma(np.float32(2), x),
                    [np.array([0.5, 1.5, 3.0], f32)]),
    "igammac_in_x": (lambda ns: lambda x: ns.lax.igammac(np.float32(0.7), x),
                     [np.array([0.5, 1.5, 3.0], f32)]),
}  # fmt: skip


@pytest.mark.parametrize("name", list(STRUCTURAL))
def test_structural_derivatives_as_jax(backend, name):
    op_of, args = STRUCTURAL[name]
    _assert_derivatives_as_jax(op_of, args, tol=2e-3)


def _raised(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return type(e).__name__
    return None


@pytest.mark.parametrize("how", ["vjp", "grad", "jit_grad", "linearize"])
def test_generic_reduce_window_is_forward_mode_only_as_jax(backend, how):
    """A reduce_window with a computation other than add/max/min: its jvp
    computes primals and tangents in one reduce_window, so reverse mode and
    linearize fail with JAX's ValueError (refimpl raised NotImplementedError
    from a missing transpose rule); jvp works."""

    def attempt(ns):
        rw = lambda x: ns.lax.reduce_window(x, np.float32(1), ns.lax.mul, (2, 1), (1, 1), "SAME")  # noqa: E731
        loss = lambda x: rw(x).sum()  # noqa: E731
        return {
            "vjp": lambda: ns.vjp(rw, _A)[1](_A),
            "grad": lambda: ns.grad(loss)(_A),
            "jit_grad": lambda: ns.jit(ns.grad(loss))(_A),
            "linearize": lambda: ns.linearize(rw, _A),
        }[how]

    assert _raised(attempt(jax)) == "ValueError"
    assert _raised(attempt(ri)) == "ValueError"


_GA = np.array([0.5, 2.0, 3.0, 0.8], f32)
_GX = np.array([0.3, 1.5, 4.0, 2.5], f32)


def test_random_gamma_grad_forward_mode_as_jax(backend):
    """JAX 0.10.2's ``lax.random_gamma_grad`` is a traced program, so it has
    the program's derivative in forward mode (refimpl's primitive had no jvp:
    NotImplementedError), e.g. the second derivative of a Gamma sample in its
    shape parameter; reverse mode is JAX's while-loop ValueError."""
    tangents = (np.array([1.0, 0.5, -1.0, 2.0], f32), np.array([0.2, 1.0, 1.0, -1.0], f32))

    def forward(ns, jit):
        f = ns.lax.random_gamma_grad
        run = lambda a, x: ns.jvp(f, (a, x), tangents)  # noqa: E731
        return (ns.jit(run) if jit else run)(_GA, _GX)

    want = forward(jax, jit=False)
    for jit in (False, True):
        assert_same_as_jax(forward(ri, jit), want, rtol=1e-4, atol=1e-6)

    def second(ns):  # d2/d(alpha)2 of a Gamma sample
        grad = ns.grad(lambda al: ns.random.gamma(ns.random.key(0), al).sum())
        return ns.jacfwd(grad)(_GA[:2])

    assert_same_as_jax(second(ri), second(jax), rtol=5e-3, atol=1e-5)
    grad = lambda ns: ns.grad(lambda a: ns.lax.random_gamma_grad(a, _GX).sum())  # noqa: E731
    assert _raised(lambda: grad(jax)(_GA)) == "ValueError"
    assert _raised(lambda: grad(ri)(_GA)) == "ValueError"
    assert _raised(lambda: ri.jit(grad(ri))(_GA)) == "ValueError"


def test_random_gamma_grad_linearize_as_jax(backend):
    """JAX 0.10.2 linearizes the inline program (its while loops' partial
    evaluation moves each loop whole into the linear function), so
    ``linearize`` runs, eagerly and under jit, and only a transpose (vjp of
    the linear function, grad of a linearized Gamma sample) is the while-loop
    ValueError (refimpl refused linearize itself)."""
    ones = np.ones(4, f32)

    def linearized(ns, jit):
        def run(a, x):
            primal, f_jvp = ns.linearize(ns.lax.random_gamma_grad, a, x)
            return primal, f_jvp(ones, ones * 0.5), f_jvp(ones * 2, ones * 0)

        return (ns.jit(run) if jit else run)(_GA, _GX)

    want = linearized(jax, jit=False)
    for jit in (False, True):
        assert_same_as_jax(linearized(ri, jit), want, rtol=1e-4, atol=1e-6)

    def sample_tangent(ns):  # linearize of a Gamma sample in its shape (second order inside)
        return ns.linearize(lambda al: ns.random.gamma(ns.random.key(0), al), _GA[:2])[1](
            np.ones(2, f32)
        )

    assert_same_as_jax(sample_tangent(ri), sample_tangent(jax), rtol=1e-4, atol=1e-6)
    transpose = lambda ns: ns.linear_transpose(  # noqa: E731
        ns.linearize(lambda a: ns.lax.random_gamma_grad(a, _GX), _GA)[1], _GA
    )(_GA)
    assert _raised(lambda: transpose(jax)) == "ValueError"
    assert _raised(lambda: transpose(ri)) == "ValueError"
