"""Each primitive's jvp and transpose rule applied directly (eagerly, on NumPy
values), against JAX: ``jax.jvp`` of the matching ``jax.lax`` function for
jvp rules, ``jax.vjp`` (the transpose of a linear map is its VJP) for
transpose rules. The rules are reached through ``Primitive.jvp_rule`` /
``transpose_rule`` only, so these tests need no AD machinery around them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax import lax as jlax

from refimpl import dtypes
from refimpl.core import ShapedArray
from refimpl.primitives import elementwise as E
from refimpl.primitives import indexing as I
from refimpl.primitives import linalg as L
from refimpl.primitives import reductions as R
from refimpl.primitives import structural as S
from refimpl.transforms.ad_util import UndefinedPrimal, Zero
from refimpl.transforms.jit import make_program

F32 = np.dtype(np.float32)
TOL = {
    np.dtype(np.float32): dict(rtol=2e-5, atol=2e-6),
    np.dtype(np.float64): dict(rtol=1e-12, atol=1e-13),
    np.dtype(np.float16): dict(rtol=2e-2, atol=2e-3),
    np.dtype(ml_dtypes.bfloat16): dict(rtol=5e-2, atol=1e-2),
}


def _aval(x) -> ShapedArray:
    x = np.asarray(x)
    return ShapedArray(x.shape, x.dtype)


def _values(x, aval=None):
    """A rule output as a NumPy array (a symbolic Zero as zeros of its type)."""
    if isinstance(x, Zero):
        return np.zeros(x.aval.shape, x.aval.dtype)
    return np.asarray(x)


def _assert_close(actual, expected, dtype, what=""):
    actual, expected = _values(actual), np.asarray(expected)
    assert actual.shape == expected.shape, (what, actual.shape, expected.shape)
    if expected.dtype == jax.dtypes.float0:
        assert actual.dtype == dtypes.float0, (what, actual.dtype)
        return
    assert actual.dtype == expected.dtype, (what, actual.dtype, expected.dtype)
    np.testing.assert_allclose(
        actual.astype(np.float64), expected.astype(np.float64), err_msg=what, **TOL[dtype]
    )


def sample(rng, shape, dtype, domain="any"):
    if domain == "pos":
        x = rng.uniform(0.5, 2.0, shape)
    elif domain == "unit":
        x = rng.uniform(-0.9, 0.9, shape)
    elif domain == "away":  # |x| in [0.5, 2], either sign
        x = rng.uniform(0.5, 2.0, shape) * rng.choice([-1, 1], shape)
    else:
        x = rng.normal(size=shape)
    return np.asarray(x).astype(dtype)


def check_jvp(prim, primals, tangents, jax_fn, dtype, **params):
    out, tangent = prim.jvp_rule(list(primals), list(tangents), **params)
    jax_out, jax_tangent = jax.jvp(jax_fn, tuple(primals), tuple(tangents))
    if prim.multiple_results:
        for o, t, jo, jt in zip(out, tangent, jax_out, jax_tangent, strict=True):
            _assert_close(o, jo, dtype, f"{prim.name} primal")
            _assert_close(t, jt, dtype, f"{prim.name} tangent")
    else:
        _assert_close(out, jax_out, dtype, f"{prim.name} primal")
        _assert_close(tangent, jax_tangent, dtype, f"{prim.name} tangent")
    return tangent


def check_transpose(prim, args, linear, jax_fn, ct, dtype, **params):
    """The rule's cotangents of the ``linear`` operand positions against
    ``jax.vjp`` of ``jax_fn`` as a function of those operands alone."""
    operands = [UndefinedPrimal(_aval(a)) if i in linear else a for i, a in enumerate(args)]
    cts = prim.transpose_rule(ct, *operands, **params)
    assert len(cts) == len(args)

    def f(*lin):
        full = list(args)
        for i, v in zip(linear, lin, strict=True):
            full[i] = v
        return jax_fn(*full)

    _, vjp = jax.vjp(f, *[args[i] for i in linear])
    expected = vjp(ct)
    for i, exp in zip(linear, expected, strict=True):
        _assert_close(cts[i], exp, dtype, f"{prim.name} cotangent {i}")
    for i in range(len(args)):
        if i not in linear:
            assert cts[i] is None


# --- elementwise jvp -----------------------------------------------------------------

UNARY = [
    (E.neg_p, jlax.neg, "any"),
    (E.exp_p, jlax.exp, "any"),
    (E.log_p, jlax.log, "pos"),
    (E.log1p_p, jlax.log1p, "pos"),
    (E.expm1_p, jlax.expm1, "any"),
    (E.tanh_p, jlax.tanh, "any"),
    (E.sin_p, jlax.sin, "any"),
    (E.cos_p, jlax.cos, "any"),
    (E.tan_p, jlax.tan, "unit"),
    (E.asin_p, jlax.asin, "unit"),
    (E.acos_p, jlax.acos, "unit"),
    (E.atan_p, jlax.atan, "any"),
    (E.sinh_p, jlax.sinh, "any"),
    (E.cosh_p, jlax.cosh, "any"),
    (E.sqrt_p, jlax.sqrt, "pos"),
    (E.rsqrt_p, jlax.rsqrt, "pos"),
    (E.cbrt_p, jlax.cbrt, "away"),
    (E.logistic_p, jlax.logistic, "any"),
    (E.erf_p, jlax.erf, "any"),
    (E.abs_p, jlax.abs, "any"),
    (E.copy_p, lambda x: x, "any"),
    (E.sign_p, jlax.sign, "any"),
    (E.floor_p, jlax.floor, "away"),
    (E.ceil_p, jlax.ceil, "away"),
]
FLOAT_DTYPES = [
    np.float32,
    pytest.param(np.float16, marks=pytest.mark.slow),
    pytest.param(ml_dtypes.bfloat16, marks=pytest.mark.slow),
]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("prim,jax_fn,domain", UNARY, ids=[p.name for p, _, _ in UNARY])
def test_unary_jvp(prim, jax_fn, domain, dtype, rng):
    dtype = np.dtype(dtype)
    x = sample(rng, (3, 4), dtype, domain)
    t = sample(rng, (3, 4), dtype)
    check_jvp(prim, [x], [t], jax_fn, dtype)


@pytest.mark.parametrize("prim,jax_fn,domain", UNARY, ids=[p.name for p, _, _ in UNARY])
def test_unary_jvp_f64(prim, jax_fn, domain, rng, x64):
    x = sample(rng, (5,), np.float64, domain)
    t = sample(rng, (5,), np.float64)
    check_jvp(prim, [x], [t], jax_fn, np.dtype(np.float64))


def test_round_and_integer_pow(rng):
    x, t = sample(rng, (6,), F32, "away"), sample(rng, (6,), F32)
    check_jvp(E.round_p, [x], [t], lambda v: jlax.round(v, 0), F32, rounding_method=0)
    for y in (0, 1, 2, 3, -2):
        check_jvp(E.integer_pow_p, [x], [t], lambda v, y=y: jlax.integer_pow(v, y), F32, y=y)


def test_abs_at_zero_is_plus_one():
    _, t = E.abs_p.jvp_rule([np.zeros(2, F32)], [np.ones(2, F32)])
    _, jt = jax.jvp(jlax.abs, (np.zeros(2, F32),), (np.ones(2, F32),))
    np.testing.assert_array_equal(np.asarray(t), jt)


BINARY = [
    (E.add_p, jlax.add, "any", "any"),
    (E.sub_p, jlax.sub, "any", "any"),
    (E.mul_p, jlax.mul, "any", "any"),
    (E.div_p, jlax.div, "any", "away"),
    (E.rem_p, jlax.rem, "any", "away"),
    (E.pow_p, jlax.pow, "pos", "any"),
    (E.max_p, jlax.max, "any", "any"),
    (E.min_p, jlax.min, "any", "any"),
    (E.atan2_p, jlax.atan2, "any", "any"),
]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("prim,jax_fn,dx,dy", BINARY, ids=[b[0].name for b in BINARY])
def test_binary_jvp(prim, jax_fn, dx, dy, dtype, rng):
    dtype = np.dtype(dtype)
    x, y = sample(rng, (3, 4), dtype, dx), sample(rng, (3, 4), dtype, dy)
    tx, ty = sample(rng, (3, 4), dtype), sample(rng, (3, 4), dtype)
    check_jvp(prim, [x, y], [tx, ty], jax_fn, dtype)
    # one tangent symbolically zero
    _, t = prim.jvp_rule([x, y], [Zero(_aval(x)), ty])
    _, jt = jax.jvp(lambda b: jax_fn(x, b), (y,), (ty,))
    _assert_close(t, jt, dtype)


@pytest.mark.parametrize("prim,jax_fn,dx,dy", BINARY, ids=[b[0].name for b in BINARY])
def test_binary_jvp_rank0_operand(prim, jax_fn, dx, dy, rng):
    x, y = sample(rng, (4,), F32, dx), sample(rng, (), F32, dy)
    tx, ty = sample(rng, (4,), F32), sample(rng, (), F32)
    check_jvp(prim, [x, y], [tx, ty], jax_fn, F32)
    check_jvp(prim, [y, x], [ty, tx], jax_fn, F32) if dx == dy else None
    # only the rank-0 operand has a tangent: it is broadcast to the result
    _, t = prim.jvp_rule([x, y], [Zero(_aval(x)), ty])
    _, jt = jax.jvp(lambda b: jax_fn(x, b), (y,), (ty,))
    _assert_close(t, jt, F32)


@pytest.mark.parametrize("prim,jax_fn", [(E.max_p, jlax.max), (E.min_p, jlax.min)])
def test_max_min_ties_share_equally(prim, jax_fn):
    x = np.array([1.0, 2.0, 3.0], F32)
    y = np.array([1.0, 5.0, 3.0], F32)
    tx, ty = np.array([1.0, 1.0, 4.0], F32), np.array([3.0, 1.0, 2.0], F32)
    t = check_jvp(prim, [x, y], [tx, ty], jax_fn, F32)
    assert np.asarray(t)[0] == 2.0  # (1 + 3) / 2


def test_pow_at_zero_base(rng):
    x = np.array([0.0, 1.5, 0.0], F32)
    y = np.array([2.0, 0.5, 3.0], F32)
    t = np.ones(3, F32)
    check_jvp(E.pow_p, [x, y], [t, t], jlax.pow, F32)


ZERO_DERIVATIVE = [
    (E.eq_p, jlax.eq), (E.ne_p, jlax.ne), (E.lt_p, jlax.lt), (E.le_p, jlax.le),
    (E.gt_p, jlax.gt), (E.ge_p, jlax.ge),
]  # fmt: skip


@pytest.mark.parametrize("prim,jax_fn", ZERO_DERIVATIVE, ids=[p.name for p, _ in ZERO_DERIVATIVE])
def test_comparisons_have_float0_tangents(prim, jax_fn, rng):
    x, y = sample(rng, (4,), F32), sample(rng, (4,), F32)
    out, t = prim.jvp_rule([x, y], [x, y])
    assert isinstance(t, Zero) and t.aval.dtype == dtypes.float0 and t.aval.shape == (4,)
    np.testing.assert_array_equal(np.asarray(out), jax_fn(x, y))


@pytest.mark.parametrize(
    "prim", [E.and_p, E.or_p, E.xor_p, E.shift_left_p, E.shift_right_logical_p, E.not_p]
)
def test_integer_primitives_have_float0_tangents(prim):
    x = np.array([1, 2, 3], np.int32)
    float0 = np.zeros(3, dtypes.float0)
    operands = [x] if prim is E.not_p else [x, x]
    out, t = prim.jvp_rule(operands, [float0] * len(operands))
    assert isinstance(t, Zero) and t.aval.dtype == dtypes.float0
    assert np.asarray(out).dtype == np.int32


def test_integer_arithmetic_has_float0_tangent():
    x = np.array([1, 2, 3], np.int32)
    float0 = np.zeros(3, dtypes.float0)
    for prim in (E.add_p, E.mul_p, E.div_p, E.max_p):
        _, t = prim.jvp_rule([x, x], [float0, Zero(ShapedArray((3,), dtypes.float0))])
        assert isinstance(t, Zero) and t.aval.dtype == dtypes.float0, prim


def test_select_n_and_clamp_jvp(rng):
    which = rng.integers(0, 3, (5,)).astype(np.int32)
    cases = [sample(rng, (5,), F32) for _ in range(3)]
    tangents = [sample(rng, (5,), F32) for _ in range(3)]
    float0 = np.zeros(5, dtypes.float0)
    out, t = E.select_n_p.jvp_rule([which, *cases], [float0, *tangents])
    _, jt = jax.jvp(lambda *c: jlax.select_n(which, *c), tuple(cases), tuple(tangents))
    _assert_close(t, jt, F32)
    pred = which == 1
    _, t = E.select_n_p.jvp_rule([pred, *cases[:2]], [float0, Zero(_aval(cases[0])), tangents[1]])
    _, jt = jax.jvp(lambda b: jlax.select_n(pred, cases[0], b), (cases[1],), (tangents[1],))
    _assert_close(t, jt, F32)
    # clamp with array and rank-0 bounds, every operand differentiated
    x = np.linspace(-2, 2, 9).astype(F32)
    lo, hi = np.full(9, -1.0, F32), np.float32(1.0)
    lo[0] = 3.0  # lo > hi there
    tangents = [sample(rng, (9,), F32), sample(rng, (9,), F32), np.float32(0.5)]

    def jax_clamp(a, b, c):  # JAX's own clamp jvp fails for a rank-0 bound's tangent
        return jlax.clamp(jnp.broadcast_to(a, b.shape), b, jnp.broadcast_to(c, b.shape))

    check_jvp(E.clamp_p, [lo, x, hi], tangents, jax_clamp, F32)
    check_jvp(E.clamp_p, [np.float32(-1), x, hi], [np.float32(2), tangents[1], np.float32(3)],
              jax_clamp, F32)  # fmt: skip


def test_clamp_jvp_at_ties_gives_no_side_the_tangent():
    # x < lo, x == lo, inside, x == hi, x > hi, lo == x == hi, x < lo == hi, x > lo == hi,
    # lo > hi; distinct tangents per operand, so a tie given to any side (ge for gt, le
    # for lt) shows
    lo = np.array([0, 0, 0, 0, 0, 1, 1, 1, 2], F32)
    x = np.array([-1, 0, 0.5, 1, 2, 1, 0, 2, 1.5], F32)
    hi = np.ones(9, F32)
    t = np.arange(1, 10, dtype=F32)
    tangents = [t, t * 10, t * 100]
    _, ours = E.clamp_p.jvp_rule([lo, x, hi], tangents)
    _, theirs = jax.jvp(jlax.clamp, (lo, x, hi), tuple(tangents))
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    np.testing.assert_array_equal(np.asarray(theirs), [1, 0, 30, 0, 500, 0, 0, 800, 900])


def test_convert_element_type_jvp(rng, x64):
    x, t = sample(rng, (4,), F32), sample(rng, (4,), F32)
    for new in (np.float64, np.float16):
        check_jvp(
            E.convert_element_type_p,
            [x],
            [t],
            lambda v, new=new: jlax.convert_element_type(v, new),
            np.dtype(np.float16),
            new_dtype=np.dtype(new),
            weak_type=False,
        )
    _, tangent = E.convert_element_type_p.jvp_rule(
        [x], [t], new_dtype=np.dtype(np.int32), weak_type=False
    )
    assert isinstance(tangent, Zero) and tangent.aval.dtype == dtypes.float0


# --- elementwise transposes ------------------------------------------------------------


def test_elementwise_transposes(rng):
    x, y, ct = (sample(rng, (3, 4), F32) for _ in range(3))
    s = np.float32(1.5)
    check_transpose(E.add_p, [x, y], [0, 1], jlax.add, ct, F32)
    check_transpose(E.add_p, [x, s], [1], jlax.add, ct, F32)  # rank-0 operand sums
    check_transpose(E.sub_p, [x, y], [0, 1], jlax.sub, ct, F32)
    check_transpose(E.sub_p, [s, y], [0, 1], jlax.sub, ct, F32)
    check_transpose(E.neg_p, [x], [0], jlax.neg, ct, F32)
    check_transpose(E.copy_p, [x], [0], lambda v: v, ct, F32)
    check_transpose(E.mul_p, [x, y], [0], jlax.mul, ct, F32)
    check_transpose(E.mul_p, [x, y], [1], jlax.mul, ct, F32)
    check_transpose(E.mul_p, [s, y], [0], jlax.mul, ct, F32)
    check_transpose(E.div_p, [x, y], [0], jlax.div, ct, F32)
    check_transpose(E.div_p, [s, y], [0], jlax.div, ct, F32)
    which = rng.integers(0, 3, (3, 4)).astype(np.int32)

    def jax_select(w, *cases):  # jax.lax.select_n does not broadcast rank-0 cases
        return jlax.select_n(w, *[jnp.broadcast_to(c, w.shape) for c in cases])

    check_transpose(E.select_n_p, [which, x, y, s], [1, 2, 3], jax_select, ct, F32)
    check_transpose(
        E.select_n_p, [which > 0, x, y], [2], lambda p, a, b: jlax.select_n(p, a, b), ct, F32
    )


def test_zero_cotangents_stay_symbolic():
    aval = ShapedArray((3,), F32)
    ct = Zero(aval)
    for prim, n in ((E.add_p, 2), (E.neg_p, 1), (S.reshape_p, 1)):
        params = {"new_sizes": (3,)} if prim is S.reshape_p else {}
        cts = prim.transpose_rule(ct, *[UndefinedPrimal(aval)] * n, **params)
        assert all(isinstance(c, Zero) for c in cts)


def test_convert_element_type_transpose(rng, x64):
    x = sample(rng, (4,), F32)
    for new in (np.float64, np.float16):
        ct = sample(rng, (4,), new)
        check_transpose(
            E.convert_element_type_p,
            [x],
            [0],
            lambda v, new=new: jlax.convert_element_type(v, new),
            ct,
            np.dtype(np.float16),
            new_dtype=np.dtype(new),
            weak_type=False,
        )


def test_weak_cotangent_of_weak_operand():
    weak = ShapedArray((3,), F32, weak_type=True)
    (ct,) = E.convert_element_type_p.transpose_rule(
        np.ones(3, np.float64), UndefinedPrimal(weak), new_dtype=np.dtype(np.float64),
        weak_type=False,
    )  # fmt: skip
    from refimpl import tracing

    aval = tracing.get_aval(ct, "test", 0)
    assert aval.dtype == F32 and aval.weak_type


# --- structural --------------------------------------------------------------------------

STRUCTURAL = [
    ("broadcast_in_dim", S.broadcast_in_dim_p, (3, 1),
     dict(shape=(2, 3, 4), broadcast_dimensions=(1, 2)),
     lambda x: jlax.broadcast_in_dim(x, (2, 3, 4), (1, 2))),
    ("reshape", S.reshape_p, (3, 4), dict(new_sizes=(2, 6)), lambda x: jlax.reshape(x, (2, 6))),
    ("squeeze", S.squeeze_p, (3, 1, 4), dict(dimensions=(1,)), lambda x: jlax.squeeze(x, (1,))),
    ("transpose", S.transpose_p, (2, 3, 4), dict(permutation=(2, 0, 1)),
     lambda x: jlax.transpose(x, (2, 0, 1))),
    ("rev", S.rev_p, (3, 4), dict(dimensions=(1,)), lambda x: jlax.rev(x, (1,))),
    ("slice", S.slice_p, (7, 5), dict(start_indices=(1, 0), limit_indices=(7, 4), strides=(2, 3)),
     lambda x: jlax.slice(x, (1, 0), (7, 4), (2, 3))),
    ("slice_nostride", S.slice_p, (7, 5),
     dict(start_indices=(1, 2), limit_indices=(3, 5), strides=None),
     lambda x: jlax.slice(x, (1, 2), (3, 5))),
    ("slice_empty", S.slice_p, (7, 5),
     dict(start_indices=(1, 2), limit_indices=(1, 5), strides=None),
     lambda x: jlax.slice(x, (1, 2), (1, 5))),
    ("cumsum", R.cumsum_p, (4, 5), dict(axis=1, reverse=False), lambda x: jlax.cumsum(x, 1)),
    ("cumsum_rev", R.cumsum_p, (4, 5), dict(axis=0, reverse=True),
     lambda x: jlax.cumsum(x, 0, reverse=True)),
    ("reduce_sum", R.reduce_sum_p, (3, 4, 5), dict(axes=(0, 2)),
     lambda x: jlax.reduce_sum_p.bind(x, axes=(0, 2), out_sharding=None)),
]  # fmt: skip


@pytest.mark.parametrize(
    "name,prim,shape,params,jax_fn", STRUCTURAL, ids=[s[0] for s in STRUCTURAL]
)
def test_structural_jvp_and_transpose(name, prim, shape, params, jax_fn, rng):
    x, t = sample(rng, shape, F32), sample(rng, shape, F32)
    check_jvp(prim, [x], [t], jax_fn, F32, **params)
    ct = sample(rng, np.shape(jax_fn(x)), F32)
    check_transpose(prim, [x], [0], jax_fn, ct, F32, **params)


@pytest.mark.parametrize(
    "config",
    [((1, 2, 0), (0, 1, 1)), ((-1, 2, 1), (2, -2, 0)), ((0, 0, 2), (-1, -1, 1))],
    ids=str,
)
def test_pad(config, rng):
    x, pv = sample(rng, (4, 5), F32), np.float32(0.25)
    tx, tpv = sample(rng, (4, 5), F32), np.float32(-1.5)

    def jax_fn(a, b):
        return jlax.pad(a, b, config)

    check_jvp(S.pad_p, [x, pv], [tx, tpv], jax_fn, F32, padding_config=config)
    ct = sample(rng, np.shape(jax_fn(x, pv)), F32)
    check_transpose(S.pad_p, [x, pv], [0, 1], jax_fn, ct, F32, padding_config=config)
    check_transpose(S.pad_p, [x, pv], [0], jax_fn, ct, F32, padding_config=config)


def test_concatenate(rng):
    xs = [sample(rng, (2, n), F32) for n in (1, 3, 2)]
    ts = [sample(rng, (2, n), F32) for n in (1, 3, 2)]

    def jax_fn(*a):
        return jlax.concatenate(a, 1)

    check_jvp(S.concatenate_p, xs, ts, jax_fn, F32, dimension=1)
    ct = sample(rng, (2, 6), F32)
    check_transpose(S.concatenate_p, xs, [0, 2], jax_fn, ct, F32, dimension=1)
    _, t = S.concatenate_p.jvp_rule(
        xs, [Zero(_aval(xs[0])), ts[1], Zero(_aval(xs[2]))], dimension=1
    )
    _, jt = jax.jvp(lambda b: jax_fn(xs[0], b, xs[2]), (xs[1],), (ts[1],))
    _assert_close(t, jt, F32)


def test_iota_and_integer_structural():
    out, t = S.iota_p.jvp_rule([], [], dtype=np.dtype(np.int32), shape=(3,), dimension=0)
    assert isinstance(t, Zero) and t.aval.dtype == dtypes.float0
    x = np.arange(6, dtype=np.int32)
    _, t = S.reshape_p.jvp_rule([x], [np.zeros(6, dtypes.float0)], new_sizes=(2, 3))
    assert isinstance(t, Zero) and t.aval.shape == (2, 3) and t.aval.dtype == dtypes.float0


# --- reductions ---------------------------------------------------------------------------


def _jax_reduce(prim_name, axes):
    fn = {"reduce_prod": jnp.prod, "reduce_max": jnp.max, "reduce_min": jnp.min}[prim_name]
    return lambda x: fn(x, axis=axes)


@pytest.mark.parametrize("axes", [(1,), (0, 2), (0, 1, 2)], ids=str)
@pytest.mark.parametrize("name", ["reduce_prod", "reduce_max", "reduce_min"])
def test_reductions_jvp(name, axes, rng):
    prim = getattr(R, f"{name}_p")
    x, t = sample(rng, (3, 4, 2), F32, "away"), sample(rng, (3, 4, 2), F32)
    check_jvp(prim, [x], [t], _jax_reduce(name, axes), F32, axes=axes)


def test_reduce_prod_with_zeros(rng):
    x = np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 1.5], [1.0, 2.0, 4.0]], F32)
    t = sample(rng, (3, 3), F32)
    check_jvp(R.reduce_prod_p, [x], [t], _jax_reduce("reduce_prod", (1,)), F32, axes=(1,))


def test_reduce_max_ties_mean(rng):
    x = np.array([[1.0, 3.0, 3.0, 2.0], [5.0, 5.0, 5.0, 5.0]], F32)
    t = sample(rng, (2, 4), F32)
    for name in ("reduce_max", "reduce_min"):
        check_jvp(getattr(R, f"{name}_p"), [x], [t], _jax_reduce(name, (1,)), F32, axes=(1,))


def test_arg_reductions_and_logical_reductions():
    x = np.array([[1.0, 3.0], [2.0, 0.5]], F32)
    out, t = R.argmax_p.jvp_rule([x], [x], axes=(1,), index_dtype=np.dtype(np.int32))
    assert isinstance(t, Zero) and t.aval.dtype == dtypes.float0 and t.aval.shape == (2,)
    np.testing.assert_array_equal(np.asarray(out), [1, 0])
    b = np.array([True, False])
    _, t = R.reduce_or_p.jvp_rule([b], [np.zeros(2, dtypes.float0)], axes=(0,))
    assert isinstance(t, Zero) and t.aval.dtype == dtypes.float0


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("name", ["cumprod", "cummax", "cummin", "cumsum"])
def test_cumulative_jvp(name, reverse, rng):
    x, t = sample(rng, (3, 7), F32, "away"), sample(rng, (3, 7), F32)
    prim = getattr(R, f"{name}_p")
    jax_fn = getattr(jlax, name)
    check_jvp(prim, [x], [t], lambda v: jax_fn(v, 1, reverse=reverse), F32, axis=1, reverse=reverse)


def test_cumprod_with_zero(rng):
    x = np.array([1.5, 0.0, 2.0, -1.0, 0.0, 3.0], F32)
    t = sample(rng, (6,), F32)
    check_jvp(R.cumprod_p, [x], [t], lambda v: jlax.cumprod(v, 0), F32, axis=0, reverse=False)


@pytest.mark.parametrize("dimension", [0, 1])
def test_sort_jvp(dimension, rng):
    keys = sample(rng, (4, 5), F32)
    values = sample(rng, (4, 5), F32)
    tk, tv = sample(rng, (4, 5), F32), sample(rng, (4, 5), F32)
    params = dict(dimension=dimension, is_stable=True, num_keys=1)
    check_jvp(R.sort_p, [keys], [tk], lambda k: (jlax.sort(k, dimension),), F32, **params)
    check_jvp(
        R.sort_p,
        [keys, values],
        [tk, tv],
        lambda k, v: jlax.sort((k, v), dimension=dimension, num_keys=1),
        F32,
        **params,
    )
    # an integer key with a float value: only the value has a tangent
    ikeys = rng.integers(0, 3, (4, 5)).astype(np.int32)
    outs, ts = R.sort_p.jvp_rule([ikeys, values], [np.zeros((4, 5), dtypes.float0), tv], **params)
    assert isinstance(ts[0], Zero) and ts[0].aval.dtype == dtypes.float0
    _, (_, jt) = jax.jvp(
        lambda v: jlax.sort((ikeys, v), dimension=dimension, num_keys=1), (values,), (tv,)
    )
    _assert_close(ts[1], jt, F32)


# --- indexing -----------------------------------------------------------------------------


@pytest.mark.parametrize("starts", [(1, 2), (5, 9), (0, 0)], ids=str)
def test_dynamic_slice(starts, rng):
    x, t = sample(rng, (5, 6), F32), sample(rng, (5, 6), F32)
    idx = [np.int32(s) for s in starts]
    float0 = np.zeros((), dtypes.float0)

    def jax_fn(a):
        return jlax.dynamic_slice(a, idx, (3, 4), allow_negative_indices=False)

    _, tangent = I.dynamic_slice_p.jvp_rule([x, *idx], [t, float0, float0], slice_sizes=(3, 4))
    _assert_close(tangent, jax.jvp(jax_fn, (x,), (t,))[1], F32)
    ct = sample(rng, (3, 4), F32)
    check_transpose(I.dynamic_slice_p, [x, *idx], [0], lambda a, *_: jax_fn(a), ct, F32,
                    slice_sizes=(3, 4))  # fmt: skip


@pytest.mark.parametrize("starts", [(1, 2), (4, 9)], ids=str)
def test_dynamic_update_slice(starts, rng):
    x, u = sample(rng, (5, 6), F32), sample(rng, (2, 3), F32)
    tx, tu = sample(rng, (5, 6), F32), sample(rng, (2, 3), F32)
    idx = [np.int32(s) for s in starts]
    float0 = np.zeros((), dtypes.float0)

    def jax_fn(a, b):
        return jlax.dynamic_update_slice(a, b, idx, allow_negative_indices=False)

    _, tangent = I.dynamic_update_slice_p.jvp_rule([x, u, *idx], [tx, tu, float0, float0])
    _assert_close(tangent, jax.jvp(jax_fn, (x, u), (tx, tu))[1], F32)
    _, tangent = I.dynamic_update_slice_p.jvp_rule(
        [x, u, *idx], [Zero(_aval(x)), tu, float0, float0]
    )
    _assert_close(tangent, jax.jvp(lambda b: jax_fn(x, b), (u,), (tu,))[1], F32)
    ct = sample(rng, (5, 6), F32)
    check_transpose(I.dynamic_update_slice_p, [x, u, *idx], [0, 1],
                    lambda a, b, *_: jax_fn(a, b), ct, F32)  # fmt: skip


@pytest.mark.parametrize("mode", ["clip", "fill"])
@pytest.mark.parametrize("axis", [0, 1])
def test_gather(mode, axis, rng):
    x, t = sample(rng, (4, 5), F32), sample(rng, (4, 5), F32)
    indices = np.array([[0, 3], [3, 7], [1, 1]], np.int32)  # repeats and out of range
    params = dict(axis=axis, mode=mode, fill_value=None)

    def jax_fn(a):
        return jnp.take(a, indices, axis=axis, mode=mode)

    out, tangent = I.gather_along_axis_p.jvp_rule(
        [x, indices], [t, np.zeros((3, 2), dtypes.float0)], **params
    )
    jout, jt = jax.jvp(jax_fn, (x,), (t,))
    _assert_close(out, jout, F32)
    _assert_close(tangent, jt, F32)
    ct = sample(rng, np.shape(jout), F32)
    check_transpose(
        I.gather_along_axis_p, [x, indices], [0], lambda a, _: jax_fn(a), ct, F32, **params
    )


def _jax_scatter(x, indices, updates, axis, mode, add):
    where = (slice(None),) * axis + (indices,)
    ref = x.at[where]
    return ref.add(updates, mode=mode) if add else ref.set(updates, mode=mode)


@pytest.mark.parametrize("mode", ["drop", "clip"])
@pytest.mark.parametrize("add", [True, False], ids=["scatter_add", "scatter"])
def test_scatter(add, mode, rng):
    prim = I.scatter_add_p if add else I.scatter_p
    axis = 1
    x = sample(rng, (3, 6), F32)
    indices = np.array([4, 0, 9, 2], np.int32)  # unique after clipping; 9 out of range
    u = sample(rng, (3, 4), F32)
    tx, tu = sample(rng, (3, 6), F32), sample(rng, (3, 4), F32)
    float0 = np.zeros(4, dtypes.float0)
    params = dict(axis=axis, mode=mode)

    def jax_fn(a, b):
        return _jax_scatter(a, indices, b, axis, mode, add)

    out, tangent = prim.jvp_rule([x, indices, u], [tx, float0, tu], **params)
    jout, jt = jax.jvp(jax_fn, (x, u), (tx, tu))
    _assert_close(out, jout, F32)
    _assert_close(tangent, jt, F32)
    ct = sample(rng, (3, 6), F32)
    check_transpose(prim, [x, indices, u], [0, 2], lambda a, _, b: jax_fn(a, b), ct, F32, **params)


def test_scatter_transpose_repeated_indices(rng):
    """With repeated indices only the winning (last) update gets a cotangent;
    checked against the scatter's own definition with NumPy."""
    x = sample(rng, (5,), F32)
    indices = np.array([1, 3, 1, 1, 7], np.int32)
    u = sample(rng, (5,), F32)
    ct = sample(rng, (5,), F32)
    ct_x, _, ct_u = I.scatter_p.transpose_rule(
        ct, UndefinedPrimal(_aval(x)), indices, UndefinedPrimal(_aval(u)), axis=0, mode="drop"
    )
    expected_x = ct.copy()
    expected_x[[1, 3]] = 0
    np.testing.assert_array_equal(np.asarray(ct_x), expected_x)
    np.testing.assert_array_equal(np.asarray(ct_u), [0, ct[3], 0, ct[1], 0])


# --- contractions ---------------------------------------------------------------------------

DOTS = [
    ("matmul", (3, 4), (4, 5), (((1,), (0,)), ((), ()))),
    ("vecdot", (4,), (4,), (((0,), (0,)), ((), ()))),
    ("outer", (3,), (2,), (((), ()), ((), ()))),
    ("batched", (2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,)))),
    ("mixed", (4, 2, 3, 5), (5, 3, 6, 2), (((2, 0), (1, 4)), ((1,), (3,)))),
    ("batch_last", (3, 4, 2), (4, 2), (((1,), (0,)), ((2,), (1,)))),
]


@pytest.mark.parametrize("name,ls,rs,dims", DOTS, ids=[d[0] for d in DOTS])
def test_dot_general(name, ls, rs, dims, rng):
    if name == "mixed":  # contracting (2, 0) of lhs with (1, 4) of rhs
        rs = (5, 3, 6, 2, 4)
    lhs, rhs = sample(rng, ls, F32), sample(rng, rs, F32)
    tl, tr = sample(rng, ls, F32), sample(rng, rs, F32)
    params = dict(dimension_numbers=dims, precision=None, preferred_element_type=None)

    def jax_fn(a, b):
        return jlax.dot_general(a, b, dims, precision=jlax.Precision.HIGHEST)

    check_jvp(L.dot_general_p, [lhs, rhs], [tl, tr], jax_fn, F32, **params)
    ct = sample(rng, np.shape(jax_fn(lhs, rhs)), F32)
    check_transpose(L.dot_general_p, [lhs, rhs], [0], jax_fn, ct, F32, **params)
    check_transpose(L.dot_general_p, [lhs, rhs], [1], jax_fn, ct, F32, **params)


CONVS = [
    dict(name="plain", lhs=(2, 3, 7), rhs=(4, 3, 3), strides=(1,), padding=((0, 0),)),
    dict(name="stride_pad", lhs=(2, 3, 9, 8), rhs=(4, 3, 3, 2), strides=(2, 3),
         padding=((1, 2), (0, 1))),
    dict(name="dilations", lhs=(1, 2, 8, 7), rhs=(3, 2, 2, 3), strides=(1, 2),
         padding=((2, 1), (1, 1)), lhs_dilation=(2, 1), rhs_dilation=(1, 2)),
    dict(name="neg_pad", lhs=(2, 2, 9), rhs=(2, 2, 2), strides=(2,), padding=((-1, -2),)),
    dict(name="feature_groups", lhs=(2, 4, 6), rhs=(6, 2, 3), strides=(1,),
         padding=((1, 1),), feature_group_count=2),
    dict(name="batch_groups", lhs=(4, 3, 6), rhs=(4, 3, 3), strides=(2,),
         padding=((1, 0),), batch_group_count=2),
    dict(name="nhwc", lhs=(2, 6, 5, 3), rhs=(3, 2, 3, 4), strides=(1, 2),
         padding=((1, 1), (0, 2)), dimension_numbers=("NHWC", "HWIO", "NHWC")),
]  # fmt: skip


@pytest.mark.parametrize("case", CONVS, ids=[c["name"] for c in CONVS])
def test_conv_general_dilated(case, rng):
    case = dict(case)
    case.pop("name")
    lhs_shape, rhs_shape = case.pop("lhs"), case.pop("rhs")
    lhs, rhs = sample(rng, lhs_shape, F32), sample(rng, rhs_shape, F32)
    tl, tr = sample(rng, lhs_shape, F32), sample(rng, rhs_shape, F32)
    kwargs = dict(
        window_strides=case.pop("strides"),
        padding=case.pop("padding"),
        lhs_dilation=case.pop("lhs_dilation", None),
        rhs_dilation=case.pop("rhs_dilation", None),
        dimension_numbers=case.pop("dimension_numbers", None),
        feature_group_count=case.pop("feature_group_count", 1),
        batch_group_count=case.pop("batch_group_count", 1),
    )
    assert not case

    def jax_fn(a, b):
        return jlax.conv_general_dilated(a, b, precision=jlax.Precision.HIGHEST, **kwargs)

    # the primitive's params, as the public function resolves them
    program = make_program(lambda a, b: L.conv_general_dilated(a, b, **kwargs))(lhs, rhs)
    (eqn,) = program.eqns
    builder_params = eqn.params
    check_jvp(L.conv_general_dilated_p, [lhs, rhs], [tl, tr], jax_fn, F32, **builder_params)
    ct = sample(rng, np.shape(jax_fn(lhs, rhs)), F32)
    check_transpose(L.conv_general_dilated_p, [lhs, rhs], [0], jax_fn, ct, F32, **builder_params)
    check_transpose(L.conv_general_dilated_p, [lhs, rhs], [1], jax_fn, ct, F32, **builder_params)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cumulative_ties_split_as_jax(name, reverse, rng):
    """Ties resolve in JAX's associative-scan tree: the tangents agree exactly."""
    prim, jax_fn = getattr(R, f"{name}_p"), getattr(jlax, name)
    for n in (2, 5, 8, 11):
        x = np.round(rng.normal(size=(3, n)) * 1.5).astype(F32)  # many ties
        t = sample(rng, (3, n), F32)
        _, tangent = prim.jvp_rule([x], [t], axis=1, reverse=reverse)
        _, expected = jax.jvp(lambda v: jax_fn(v, 1, reverse=reverse), (x,), (t,))
        np.testing.assert_array_equal(np.asarray(tangent), expected)
