"""jax.numpy behaviours of JAX 0.10.2 found by JAX's own lax_numpy tests
(issue 29, class 5), each compared with JAX itself."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from tests.helpers.parity import assert_same_as_jax

_SHAPES = [(4,), (3, 5), (2, 1, 3), (1,)]
_WIDTHS = [0, 2, (1, 3), ((0, 4),), "per_axis", 7]


def _pad_width(width, ndim):
    if width == "per_axis":
        return tuple((i % 3, (2 * i + 1) % 4) for i in range(ndim))
    return width


def _same(got, want, rtol=1e-6):
    assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=1e-6)


@pytest.mark.parametrize(
    "mode,kwargs",
    [
        ("edge", {}), ("wrap", {}), ("reflect", {}), ("symmetric", {}),
        ("reflect", {"reflect_type": "odd"}), ("symmetric", {"reflect_type": "odd"}),
        ("linear_ramp", {}), ("linear_ramp", {"end_values": (1, -2)}),
        ("maximum", {}), ("minimum", {}), ("mean", {}), ("median", {}),
        ("mean", {"stat_length": 2}), ("maximum", {"stat_length": ((1, 2),)}),
        ("median", {"stat_length": 3}), ("constant", {"constant_values": 3}),
    ],
)  # fmt: skip
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_pad_modes(mode, kwargs, dtype):
    if mode == "linear_ramp" and dtype == np.int32:
        pytest.skip("integer ramps inherit rnp.linspace's float rounding (a ulp from JAX's)")
    rng = np.random.default_rng(0)
    for shape in _SHAPES:
        x = rng.integers(-9, 9, shape).astype(dtype)
        for width in _WIDTHS:
            pw = _pad_width(width, len(shape))
            want = jnp.pad(x, pw, mode=mode, **kwargs)
            _same(rnp.pad(x, pw, mode=mode, **kwargs), want)


def test_pad_jit_grad_and_empty(backend):
    x = np.arange(12, dtype=np.float32).reshape(3, 4) ** 1.5
    for mode in ["reflect", "edge", "wrap", "mean", "linear_ramp", "maximum"]:
        _same(ri.jit(lambda x, m=mode: rnp.pad(x, 2, mode=m))(x), jnp.pad(x, 2, mode=mode))
        _same(
            ri.grad(lambda x, m=mode: (rnp.pad(x, 2, mode=m) ** 2).sum())(x),
            jax.grad(lambda x, m=mode: (jnp.pad(x, 2, mode=m) ** 2).sum())(x),
            rtol=1e-5,
        )
    assert rnp.pad(x, 1, mode="empty").shape == jnp.pad(x, 1, mode="empty").shape
    with pytest.raises(NotImplementedError):  # jnp's class (NumPy: ValueError)
        rnp.pad(x, 1, mode="nonsense")
    with pytest.raises(ValueError):
        rnp.pad(x, 1, mode="edge", constant_values=1)


@pytest.mark.parametrize("k", [2**40, -(2**40), 3, -3, 10, 2**31])
def test_eye_any_k(k):
    _same(rnp.eye(3, k=k), jnp.eye(3, k=k))
    _same(rnp.eye(3, 5, k=k), jnp.eye(3, 5, k=k))


def test_roll_array_shifts(backend):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    cases = [
        (lambda m: lambda x: m.roll(x, m.asarray(1), 1)),
        (lambda m: lambda x: m.roll(x, np.array([1, 2]), (0, 1))),
        (lambda m: lambda x: m.roll(x, np.array([1, -5]), 0)),
        (lambda m: lambda x: m.roll(x, 1, (0, 1))),
        (lambda m: lambda x: m.roll(x, [1], (0, 1))),
        (lambda m: lambda x: m.roll(x, np.array([3]), None)),
    ]
    for case in cases:
        _same(case(rnp)(x), case(jnp)(x))
    jf = jax.jit(lambda x, s: jnp.roll(x, s, (0, 1)))
    rf = ri.jit(lambda x, s: rnp.roll(x, s, (0, 1)))
    _same(rf(x, np.array([1, 2])), jf(x, np.array([1, 2])))


_Z = np.array([1.5 + 0.5j, -3 + 1e-3j, 1e-8 - 1e-8j, 0.5j, -1.5 - 2j, 2 + 3.1j], np.complex64)
_W = np.array([0.3 - 1j, 1 + 3.5j, 1 + 3j, 1.5 + 0.5j, 2 - 1j, 2 + 3.1j], np.complex64)


@pytest.mark.parametrize(
    "name,fn",
    [
        ("logaddexp", lambda m: lambda z: m.logaddexp(z, _W)),
        ("logaddexp2", lambda m: lambda z: m.logaddexp2(_W, z)),
        ("arcsinh", lambda m: m.arcsinh),
        ("round", lambda m: m.round),
        ("rint", lambda m: lambda z: m.rint(z * 3.3)),
        ("round1", lambda m: lambda z: m.round(z * 7, 1)),
        ("corrcoef", lambda m: lambda z: m.corrcoef(m.reshape(z, (2, 3)) ** 2).ravel()),
    ],
)
def test_complex_values_and_derivatives(backend, name, fn):
    """Complex inputs: the value, jvp, vjp and holomorphic jacobian as JAX's,
    eagerly and under jit."""
    rf, jf = fn(rnp), fn(jnp)
    tangent = (np.arange(6) - 2.5j).astype(np.complex64)
    _same(ri.jit(rf)(_Z), jf(_Z), rtol=1e-5)
    _same(rf(_Z), jf(_Z), rtol=1e-5)
    _same(
        ri.jit(lambda z, t: ri.jvp(rf, (z,), (t,))[1])(_Z, tangent),
        jax.jvp(jf, (_Z,), (tangent,))[1],
        rtol=2e-5,
    )
    out_shape = np.shape(jf(_Z))
    ct = (np.arange(np.prod(out_shape)) + 1j).astype(np.complex64).reshape(out_shape)
    _same(ri.jit(lambda z, c: ri.vjp(rf, z)[1](c)[0])(_Z, ct), jax.vjp(jf, _Z)[1](ct)[0], rtol=2e-5)
    _same(ri.jacfwd(rf, holomorphic=True)(_Z), jax.jacfwd(jf, holomorphic=True)(_Z), rtol=2e-5)
    scalar = lambda f: lambda z: f(z * _Z)[1]  # noqa: E731
    _same(
        ri.grad(scalar(rf), holomorphic=True)(np.complex64(1.1 - 0.2j)),
        jax.grad(scalar(jf), holomorphic=True)(np.complex64(1.1 - 0.2j)),
        rtol=2e-5,
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_frexp_derivative(backend, dtype):
    """frexp's mantissa has derivative 2**-e (JAX's custom_jvp: e is locally
    constant), the exponent a float0 tangent; jit and vmap alike."""
    x = np.array([3.0, -0.3, 0.0, 1024.0, 5.5, 7e-3], dtype)
    t = np.arange(1, 7).astype(dtype)
    (m, e), (dm, de) = ri.jit(lambda x, t: ri.jvp(rnp.frexp, (x,), (t,)))(x, t)
    (jm, je), (jdm, jde) = jax.jvp(jnp.frexp, (x,), (t,))
    _same(m, jm)
    _same(e, je)
    _same(dm, jdm)
    assert de.dtype == jde.dtype == jax.dtypes.float0 and de.shape == jde.shape
    assert (
        float(ri.grad(lambda x: rnp.frexp(x)[0])(3.0))
        == float(jax.grad(lambda x: jnp.frexp(x)[0])(3.0))
        == 0.25
    )
    both = lambda m: lambda x: m.frexp(x)[0] * m.frexp(x)[1]  # noqa: E731
    _same(ri.vmap(ri.grad(both(rnp)))(x), jax.vmap(jax.grad(both(jnp)))(x))


@pytest.mark.parametrize("mode", ["one_hot", "promise_in_bounds", "clip", "fill"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_, np.float16])
@pytest.mark.parametrize("wrap", [None, False])
def test_take_along_axis_modes(backend, mode, dtype, wrap):
    """Every mode JAX takes; one_hot's out-of-range index reads 0 and a NaN
    along the axis reaches the whole row (JAX's einsum)."""
    a = (np.arange(12).reshape(3, 4) * 1.5).astype(dtype)
    if dtype == np.float32:
        a[0, 2] = np.nan
    i = np.array([[0, -1], [5, 1], [2, -7]])
    want = jnp.take_along_axis(a, i, axis=1, mode=mode, wrap_negative_indices=wrap)
    for got in [
        rnp.take_along_axis(a, i, axis=1, mode=mode, wrap_negative_indices=wrap),
        ri.jit(lambda a, i: rnp.take_along_axis(a, i, -1, mode, wrap_negative_indices=wrap))(a, i),
    ]:
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_take_along_axis_one_hot_grad_and_errors(backend):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    i = np.array([[[1, 0, 2, 1]]])
    for axis, idx in [(1, i), (2, np.array([[[3], [0], [9]]]))]:

        def f(m, ax=axis, ix=idx):
            return lambda x: (m.take_along_axis(x, ix, ax, "one_hot") ** 2).sum()

        _same(ri.jit(ri.grad(f(rnp)))(a), jax.grad(f(jnp))(a))
    with pytest.raises(ValueError, match="take_along_axis: mode"):
        rnp.take_along_axis(a, i, 1, mode="nearest")


_XP = np.array([0.0, 90, 180, 270], np.float32)
_FP = np.array([0.0, 1, 2, 3], np.float32)
_XI = np.array([-10.0, 45, 300, 370, 725, 90], np.float32)


@pytest.mark.parametrize(
    "case",
    [
        lambda m, p: m.interp(_XI, _XP, _FP, period=p),
        lambda m, p: m.interp(_XI, _XP[::-1].copy(), _FP, period=-p),
        lambda m, p: m.interp(_XI, np.array([350.0, 10, 200]), np.array([1.0, 2, 3]), period=p),
        lambda m, p: m.interp(_XI, _XP, _FP.astype(np.complex64), period=p),
        lambda m, p: m.interp(_XI, _XP, _FP, left="extrapolate", right=-1.0),
        lambda m, p: m.interp(_XI, _XP, _FP.astype(np.complex64)),
        lambda m, p: m.interp(_XI, _XP, _FP.astype(np.float16)),
        lambda m, p: m.interp(_XI.astype(np.float16), _XP.astype(np.float16), _FP),
        lambda m, p: m.interp(_XI, np.array([0.0, 0.0, 1.0]), np.array([1.0, 2.0, 3.0])),
    ],
)
def test_interp_period_extrapolate_and_types(backend, case):
    """interp(period=) as JAX's (modulo, sorted, closed one period each way);
    "extrapolate"; complex fp; x/xp promoted apart from fp (also with a traced
    period)."""
    want = case(jnp, 360)
    _same(case(rnp, 360), want, rtol=1e-5)
    _same(ri.jit(lambda p: case(rnp, p))(np.float32(360)), want, rtol=1e-5)
    fj = lambda m: lambda x: m.interp(x, _XP, _FP, period=360).sum()  # noqa: E731
    _same(ri.jit(ri.grad(fj(rnp)))(_XI), jax.grad(fj(jnp))(_XI))


def test_interp_errors():
    for bad, match in [
        (dict(left="x"), "valid string value of `left` is 'extrapolate'"),
        (dict(period=np.array([1.0, 2.0])), "period must be a scalar"),
    ]:
        with pytest.raises(ValueError, match=match):
            rnp.interp(_XI, _XP, _FP, **bad)
    with pytest.raises(ValueError, match="equal size"):
        rnp.interp(_XI, _XP, _FP[:2])
    with pytest.raises(ValueError, match="complex x"):
        rnp.interp(_XI.astype(np.complex64), _XP, _FP)


@pytest.mark.parametrize(
    "repeats,axis,length",
    [
        (np.array([1, 2, 3, 0, 1, 2]), None, 9),
        (np.array([1, 2, 3, 0, 1, 2]), None, 4),
        (np.array([1, 2, 3, 0, 1, 2]), None, 20),
        (np.array([1, 2, 1]), 1, 5),
        (np.array([1, 0, 0]), 1, 5),
        (np.array([0, 3]), 0, 1),
        (np.array([2]), None, 11),
        (2, 1, 8),
        (np.array([1, 2, 1]), 1, 0),
    ],
)
def test_repeat_total_repeat_length(backend, repeats, axis, length):
    """With total_repeat_length the repeats may be traced; the result has that
    length (cut short, or padded with the last element), as JAX's."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    want = jax.jit(lambda x, r: jnp.repeat(x, r, axis, total_repeat_length=length))(x, repeats)
    _same(ri.jit(lambda x, r: rnp.repeat(x, r, axis, total_repeat_length=length))(x, repeats), want)
    _same(rnp.repeat(x, repeats, axis, total_repeat_length=length), want)
    f = lambda m: lambda x: (m.repeat(x, repeats, axis, total_repeat_length=length) ** 2).sum()  # noqa: E731
    _same(ri.grad(f(rnp))(x), jax.grad(f(jnp))(x))


def test_repeat_traced_needs_total_repeat_length():
    x = np.arange(3, dtype=np.float32)
    with pytest.raises(ri.errors.ConcretizationTypeError, match="total_repeat_length"):
        ri.jit(lambda x, r: rnp.repeat(x, r))(x, np.array([1, 2, 3]))
    with pytest.raises(ValueError, match="repeat: got 2 repeats for an axis of size 3"):
        rnp.repeat(x, np.array([1, 2]), total_repeat_length=3)
    with pytest.raises(TypeError, match="repeat: repeats must be integers"):
        rnp.repeat(x, np.array([1.0, 2, 3]), total_repeat_length=3)


@pytest.mark.parametrize(
    "case",
    [
        lambda m: m.zeros(np.array(3)),
        lambda m: m.full(np.array(2), 3.0),
        lambda m: m.ones((np.array(2), np.int64(3)), np.int32),
        lambda m: m.broadcast_to(1.0, np.array(3)),
        lambda m: m.full_like(np.ones(2, np.float32), 1.0, shape=np.array(3)),
        lambda m: m.reshape(np.arange(4, dtype=np.float32), np.array(4)),
        lambda m: m.expand_dims(np.ones((2, 3)), np.array(1)),
        lambda m: m.expand_dims(np.ones((2, 3)), (np.array(0), 2)),
        lambda m: m.split(np.ones((4, 2)), np.array(2), np.array(0))[1],
        lambda m: m.array_split(np.ones((5, 2)), np.array(2))[0],
        lambda m: m.sum(np.ones((2, 3)), np.array(1)),
        lambda m: m.flip(np.arange(6.0).reshape(2, 3), np.array(1)),
    ],
)
def test_zero_d_arrays_as_axis_or_shape(backend, case):
    """A 0-d NumPy integer array is one axis or one dimension, as in JAX."""
    want = case(jnp)
    _same(case(rnp), want)
    _same(ri.jit(lambda: case(rnp))(), want)


@pytest.mark.parametrize("name", ["all", "any", "min", "max", "mean", "sum", "prod", "std", "var"])
def test_out_argument_none_accepted_other_rejected(name):
    """NumPy's protocol argument: out=None is accepted (as the method and the
    function), any other out raises NotImplementedError naming the function."""
    x = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    _same(getattr(rnp.asarray(x), name)(out=None), getattr(jnp.asarray(x), name)(out=None))
    _same(getattr(rnp, name)(x, axis=1, out=None), getattr(jnp, name)(x, axis=1, out=None))
    with pytest.raises(NotImplementedError, match=name):
        getattr(rnp, name)(x, out=np.zeros(()))


def _padder(vector, widths, axis, kwargs):
    vector = vector.at[: widths[0]].set(kwargs.get("fill", 10) + axis)
    return vector.at[vector.shape[0] - widths[1] :].set(-1.0) if widths[1] else vector


@pytest.mark.parametrize("width", [1, ((1, 2), (0, 3)), 0])
@pytest.mark.parametrize("kwargs", [{}, {"fill": 7}])
def test_pad_callable_mode(backend, width, kwargs):
    """A callable mode is NumPy's protocol as JAX runs it: zeros around the
    array, then func(vector, (before, after), axis, kwargs) per axis in order."""
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    want = jnp.pad(a, width, mode=_padder, **kwargs)
    _same(rnp.pad(a, width, mode=_padder, **kwargs), want)
    _same(ri.jit(lambda a: rnp.pad(a, width, mode=_padder, **kwargs))(a), want)
    square = lambda v, w, i, k: v * v  # noqa: E731
    _same(
        ri.grad(lambda a: rnp.pad(a, width, mode=square).sum())(a),
        jax.grad(lambda a: jnp.pad(a, width, mode=square).sum())(a),
    )


def test_arccosh_complex(backend):
    """Complex arccosh: JAX's values; the derivative of that principal branch,
    1 / (sqrt(z - 1) sqrt(z + 1)), which JAX's jvp rule negates where Re z < 0
    (conformance/known.py), so it is checked against finite differences."""
    z = np.array([1.5 + 0.5j, 0.4 - 1.2j, -0.3 + 0.2j, -10 - 0.1j, 30 + 40j], np.complex64)
    _same(rnp.arccosh(z), jnp.arccosh(z), rtol=1e-5)
    _same(ri.jit(rnp.arccosh)(z), jnp.arccosh(z), rtol=1e-5)
    z64, h = z.astype(np.complex128), 1e-6
    slope = (np.arccosh(z64 + h) - np.arccosh(z64 - h)) / (2 * h)
    t = np.ones_like(z)
    got = ri.jit(lambda z, t: ri.jvp(rnp.arccosh, (z,), (t,))[1])(z, t)
    np.testing.assert_allclose(np.asarray(got), slope, rtol=1e-4)
    right = z[:2]  # Re z > 0: JAX's rule agrees
    _same(
        ri.vmap(ri.grad(rnp.arccosh, holomorphic=True))(right),
        jax.vmap(jax.grad(jnp.arccosh, holomorphic=True))(right),
        rtol=1e-5,
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"fweights": np.array([1, 2, 1, 3, 1])},
        {"aweights": np.array([0.5, 1.0, 2.0, 0.1, 1.0], np.float32)},
        {"fweights": np.array([1, 2, 1, 3, 1]), "aweights": np.array([0.5, 1, 2, 0.1, 1])},
        {"fweights": np.array([1, 2, 1, 3, 1]), "ddof": 0},
        {"aweights": np.array([0.5, 1.0, 2.0, 0.1, 1.0], np.float32), "ddof": 2},
        {"fweights": -np.array([1, 2, 1, 3, 1]), "bias": True},
        {"dtype": np.float16},
    ],
)
def test_cov_weights(backend, kwargs):
    """fweights/aweights weight the observations as JAX's (and NumPy's);
    negative weights count by absolute value as in JAX."""
    x = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    want = jnp.cov(x, **kwargs)
    rtol = 2e-3 if kwargs.get("dtype") == np.float16 else 1e-5
    _same(rnp.cov(x, **kwargs), want, rtol=rtol)
    _same(ri.jit(lambda x: rnp.cov(x, rowvar=False, **kwargs))(x.T), want, rtol=rtol)
    if "dtype" not in kwargs:
        f = lambda m: lambda x: m.cov(x, **kwargs).sum()  # noqa: E731
        _same(ri.grad(f(rnp))(x), jax.grad(f(jnp))(x), rtol=1e-4)


def test_cov_weight_errors():
    x = np.ones((3, 5), np.float32)
    with pytest.raises(TypeError, match="cov: fweights must be integer"):
        rnp.cov(x, fweights=np.ones(5, np.float32))
    with pytest.raises(RuntimeError, match="cov: incompatible numbers of samples"):
        rnp.cov(x, aweights=np.ones(3))
    with pytest.raises(RuntimeError, match="cov: cannot handle multidimensional fweights"):
        rnp.cov(x, fweights=np.ones((5, 2), np.int32))


@pytest.mark.parametrize("fn", ["sum", "prod"])
def test_sum_prod_promote_integers(backend, fn):
    """promote_integers=False keeps an integer dtype (bool still counts in
    int32), as the function and the array method."""
    x = np.arange(1, 7, dtype=np.int8)
    for arg, kw in [(x, {}), (x.astype(np.uint8), {}), (x > 3, {}), (x, {"dtype": np.int16})]:
        want = getattr(jnp, fn)(arg, promote_integers=False, **kw)
        _same(getattr(rnp, fn)(arg, promote_integers=False, **kw), want)
        _same(
            ri.jit(lambda a, k=kw: getattr(rnp.asarray(a), fn)(promote_integers=False, **k))(arg),
            want,
        )
        _same(getattr(rnp, fn)(arg, **kw), getattr(jnp, fn)(arg, **kw))


_SET_A = np.array([5, 1, 3, 3, 7, 1])
_SET_B = np.array([3, 9, 1, 1, 8])


@pytest.mark.parametrize(
    "x,y,kwargs",
    [
        (_SET_A, _SET_B, {}),
        (_SET_A, _SET_B, {"size": 4}),
        (_SET_A, _SET_B, {"size": 4, "fill_value": -1}),
        (_SET_A, _SET_B, {"size": 1}),
        (_SET_A, np.array([2, 4]), {"size": 2}),
        (_SET_A.reshape(2, 3), _SET_B.astype(np.float32), {}),
        (np.array([1.5, np.nan, 2.0, 1.5], np.float32), np.array([np.nan, 1.5, 0.0]), {"size": 3}),
    ],
)
def test_intersect1d_return_indices(backend, x, y, kwargs):
    """Each value's first position in each flattened input; padding (with
    size) gets the input's length; an empty intersection pads with 0."""
    want = jnp.intersect1d(x, y, return_indices=True, **kwargs)
    got = rnp.intersect1d(x, y, return_indices=True, **kwargs)
    for g, w in zip(got, want, strict=True):
        _same(g, w)
    if "size" in kwargs:
        jitted = ri.jit(lambda x, y: rnp.intersect1d(x, y, return_indices=True, **kwargs))(x, y)
        for g, w in zip(jitted, want, strict=True):
            _same(g, w)


@pytest.mark.parametrize("size", [2, 6])
def test_setdiff1d_fill_and_dtype(size):
    """setdiff1d pads with 0 by default and keeps ar1's dtype, as JAX."""
    a, b = np.array([5, 1, 3, 3], np.uint8), np.array([3, 9, -2])
    _same(rnp.setdiff1d(a, b, size=size), jnp.setdiff1d(a, b, size=size))
    _same(rnp.setdiff1d(a, a, size=size), jnp.setdiff1d(a, a, size=size))
    _same(rnp.intersect1d(a, a + 10, size=size), jnp.intersect1d(a, a + 10, size=size))


@pytest.mark.parametrize(
    "arr",
    [
        np.array([[1, 2], [0, 5], [1, 2], [0, 1], [1, 2]]),
        np.array([[1.0, np.nan], [0, 5], [1, np.nan], [0, 1], [np.nan, 2]], np.float32),
        np.arange(24).reshape(2, 3, 4) % 3,
    ],
)
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"return_index": True, "return_inverse": True, "return_counts": True},
        {"size": 6, "return_counts": True, "return_index": True},
        {"size": 2},
        {"size": 6, "fill_value": -1, "return_inverse": True},
        {"equal_nan": False, "return_counts": True},
    ],
)
def test_unique_axis(backend, arr, kwargs):
    """unique along an axis: distinct slices in lexicographic order, as JAX's."""
    for axis in range(-1, arr.ndim):
        want = jnp.unique(arr, axis=axis, **kwargs)
        got = rnp.unique(arr, axis=axis, **kwargs)
        if "size" in kwargs:
            got = ri.jit(lambda a, ax=axis: rnp.unique(a, axis=ax, **kwargs))(arr)
        for g, w in zip(*(v if isinstance(v, tuple) else (v,) for v in (got, want)), strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


_VIEW_SOURCES = [
    np.array([[1.0, -2.5, 3e-8, np.inf]], np.float32),
    np.arange(8, dtype=np.uint8).reshape(2, 4) * 37,
    np.array([[1, -1, 300, -40000]], np.int32),
    np.array([True, False, True, True]),
    np.array([1 + 2j, -3.5 - 0.5j], np.complex64),
    np.array([[1, -3], [250, 7]], np.int16),
]


@pytest.mark.parametrize("source", _VIEW_SOURCES, ids=lambda x: x.dtype.name)
@pytest.mark.parametrize(
    "dtype", [None, np.float32, np.int32, np.uint8, np.int16, np.float16, np.complex64, np.bool_]
)
def test_array_view(backend, source, dtype):
    """x.view(dtype): the bits read as dtype, little-endian, the last axis
    resized for a change of width, as jax.Array.view."""
    try:
        want = jnp.asarray(source).view(dtype)
    except ValueError:
        with pytest.raises(ValueError, match="view"):
            rnp.asarray(source).view(dtype)
        return
    for got in [rnp.asarray(source).view(dtype), ri.jit(lambda x: x.view(dtype))(source)]:
        assert got.shape == want.shape and got.dtype == want.dtype
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes()


def test_array_protocol_methods(backend):
    """divmod(), choose, argpartition and __array_namespace__ as jax.Array's."""
    x = rnp.arange(5)
    for got, want in zip(divmod(x, 3), divmod(jnp.arange(5), 3), strict=True):
        _same(got, want)
    for got, want in zip(divmod(7, x + 1), divmod(7, jnp.arange(5) + 1), strict=True):
        _same(got, want)
    pick, choices = np.array([0, 1, 0]), [np.arange(3), np.arange(3) + 10]
    _same(rnp.asarray(pick).choose(choices), jnp.asarray(pick).choose(choices))
    v = np.array([3, 1, 2, 0])
    _same(rnp.asarray(v).argpartition(1), jnp.asarray(v).argpartition(1))
    assert x.__array_namespace__() is rnp
    with pytest.raises(ValueError, match="api_version"):
        x.__array_namespace__(api_version="2023.12")


# --- einsum's interleaved operand/sublist form ---------------------------------------------------


def _einsum_interleaved_cases():
    a = _RNG_EINSUM.randn(3, 4).astype(np.float32)
    b = _RNG_EINSUM.randn(4, 5).astype(np.float32)
    c = _RNG_EINSUM.randn(2, 3, 4).astype(np.float32)
    sq = _RNG_EINSUM.randn(3, 3).astype(np.float32)
    return [
        (a, [0, 1], b, [1, 2], [0, 2]),
        (a, [0, 1], b, [1, 2]),
        (sq, [0, 0]),
        (sq, [0, 0], [0]),
        (c, [Ellipsis, 0, 1], b, [1, 2], [Ellipsis, 0, 2]),
        (a, [0, 1], []),
        (a, [26, 51], b, [51, 1], [26, 1]),
    ]


_RNG_EINSUM = np.random.RandomState(11)


@pytest.mark.parametrize("case", range(7))
def test_einsum_interleaved_sublists_as_jax(backend, case):
    args = _einsum_interleaved_cases()[case]
    want = jnp.einsum(*args)
    assert_same_as_jax(rnp.einsum(*args), want, rtol=1e-5, atol=1e-5)
    arrays = [x for x in args if isinstance(x, np.ndarray)]
    sublists = [x for x in args if not isinstance(x, np.ndarray)]

    def interleave(*xs):
        out = []
        for x, s in zip(xs, sublists, strict=False):
            out += [x, s]
        return [*out, *sublists[len(xs) :]]

    got = ri.jit(lambda *xs: rnp.einsum(*interleave(*xs)))(*arrays)
    assert_same_as_jax(got, want, rtol=1e-5, atol=1e-5)


def test_einsum_path_interleaved():
    a, b = np.ones((3, 4), np.float32), np.ones((4, 5), np.float32)
    assert rnp.einsum_path(a, [0, 1], b, [1, 2], [0, 2])[0] == rnp.einsum_path("ab,bc->ac", a, b)[0]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.complex64])
def test_log10_is_log_times_log10_e_as_jax(backend, dtype):
    """JAX 0.10.2's log10 is ``log(x) * log10(e)`` (the constant in x's real
    dtype), not ``log(x) / log(10)``: the two differ in the last bit (float32
    log10(2): 0.30103 vs 0.30102998). Where refimpl's and JAX's log agree
    bit for bit (they may not on every CPU: NumPy's and XLA's own kernels),
    log10 must too; most of these points must be such points."""
    x = np.array([2, 4, 7, 32, 1e-3, 3e5, 0.5, 1000, 12345.678], dtype)
    same_log = np.asarray(rnp.log(x)) == np.asarray(jnp.log(x))
    assert same_log.sum() >= 6, "too few points where the logs agree to judge log10"
    got, want = np.asarray(rnp.log10(x)), np.asarray(jnp.log10(x))
    np.testing.assert_array_equal(got[same_log], want[same_log])
    np.testing.assert_array_equal(np.asarray(ri.jit(rnp.log10)(x)).dtype, want.dtype)
