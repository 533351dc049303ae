# ruff: noqa: B023  (the lambdas are called within their loop iteration)
"""refimpl.nn against jax.nn: activations on random inputs (several dtypes,
edge values), softmax/log_softmax/logsumexp/standardize/one_hot/glu, and the
initializers bit for bit given the same key. Eagerly and under jit on both
backends."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import refimpl as ri
from refimpl import nn
from tests.helpers.pjrt_helpers import skip_without_pjrt

EDGES = np.array([0.0, -0.0, 1.0, -1.0, 6.0, 30.0, -30.0, 100.0, -100.0, 1e-8], np.float32)
TOL = {np.dtype(np.float32): 2e-6, np.dtype(np.float16): 2e-3, np.dtype(ml_dtypes.bfloat16): 2e-2}

UNARY = [
    "relu", "relu6", "sigmoid", "silu", "swish", "softplus", "log_sigmoid", "elu", "celu",
    "selu", "leaky_relu", "hard_tanh", "soft_sign", "hard_sigmoid", "hard_silu", "hard_swish",
    "mish", "squareplus", "sparse_plus", "sparse_sigmoid",
]  # fmt: skip


def runners():
    yield "eager", lambda f: f
    yield "ref", lambda f: ri.jit(f, backend="ref")
    skip_without_pjrt()
    yield "pjrt", lambda f: ri.jit(f, backend="pjrt")


def close(got, want, dtype=np.float32, scale_atol=True):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.dtype, want.dtype)
    tol = TOL[np.dtype(dtype)]
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


NARROW = [pytest.param(d, marks=pytest.mark.slow) for d in (np.float16, ml_dtypes.bfloat16)]


@pytest.mark.parametrize("dtype", [np.float32, *NARROW])
@pytest.mark.parametrize("name", UNARY + ["gelu_tanh", "gelu_erf"])
def test_activations(name, dtype, rng):
    x = np.concatenate([rng.normal(scale=3, size=40).astype(np.float32), EDGES]).astype(dtype)
    if name.startswith("gelu"):
        approximate = name == "gelu_tanh"
        ours = lambda v: nn.gelu(v, approximate=approximate)  # noqa: E731
        want = jax.nn.gelu(x, approximate=approximate)
    else:
        ours = getattr(nn, name)
        want = getattr(jax.nn, name)(x)
    for _, wrap in runners():
        close(wrap(ours)(x), want, dtype)


def test_activation_parameters(rng):
    x = rng.normal(size=20).astype(np.float32)
    close(nn.elu(x, 0.3), jax.nn.elu(x, 0.3))
    close(nn.celu(x, 2.0), jax.nn.celu(x, 2.0))
    close(nn.leaky_relu(x, 0.2), jax.nn.leaky_relu(x, 0.2))
    close(nn.relu(np.arange(-3, 3)), jax.nn.relu(np.arange(-3, 3)))  # ints stay ints


@pytest.mark.parametrize("axis", [-1, 0, (0, 1)])
def test_softmax_family(axis, rng):
    x = (rng.normal(size=(3, 4, 5)) * 4).astype(np.float32)
    x[0, 0, 0] = -np.inf
    for _, wrap in runners():
        close(wrap(lambda v: nn.softmax(v, axis=axis))(x), jax.nn.softmax(x, axis=axis))
        close(wrap(lambda v: nn.log_softmax(v, axis=axis))(x), jax.nn.log_softmax(x, axis=axis))
        close(wrap(lambda v: nn.logsumexp(v, axis=axis))(x), jax.nn.logsumexp(x, axis=axis))


def test_standardize_one_hot_glu(rng):
    x = rng.normal(size=(4, 6)).astype(np.float32) * 3 + 1
    for _, wrap in runners():
        close(wrap(nn.standardize)(x), jax.nn.standardize(x))
        close(wrap(lambda v: nn.standardize(v, axis=0, algorithm="stable"))(x),
              jax.nn.standardize(x, axis=0, algorithm="stable"))  # fmt: skip
        close(wrap(nn.glu)(x), jax.nn.glu(x))
    labels = np.array([[0, 2], [3, -1]], np.int32)
    for axis in [-1, 0, 1]:
        got = nn.one_hot(labels, 3, axis=axis)
        want = jax.nn.one_hot(labels, 3, axis=axis)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        assert np.asarray(got).dtype == want.dtype
    got = ri.jit(lambda v: nn.one_hot(v, 4, dtype=jnp.int8))(labels)
    np.testing.assert_array_equal(np.asarray(got), jax.nn.one_hot(labels, 4, dtype=jnp.int8))


def test_softplus_gradient_at_zero():
    """softplus' derivative is sigmoid, also at 0 where its formula has kinks."""
    x = np.array([0.0, 1.0, -20.0, 20.0], np.float32)
    got = ri.grad(lambda v: ri.numpy.sum(nn.softplus(v)))(x)
    want = jax.grad(lambda v: jnp.sum(jax.nn.softplus(v)))(x)
    close(got, want)


INITS = [
    ("glorot_uniform", {}), ("glorot_normal", {}), ("xavier_uniform", {}),
    ("lecun_uniform", {}), ("lecun_normal", {}), ("he_uniform", {}), ("he_normal", {}),
    ("kaiming_normal", {}), ("normal", {"stddev": 0.3}), ("uniform", {"scale": 2.0}),
    ("truncated_normal", {"stddev": 0.5}),
]  # fmt: skip


@pytest.mark.parametrize("name,kwargs", INITS)
@pytest.mark.parametrize("shape", [(5, 7), pytest.param((3, 3, 4, 8), marks=pytest.mark.slow)])
def test_initializers_bit_equal(name, kwargs, shape):
    jinit = getattr(jax.nn.initializers, name)(**kwargs)
    rinit = getattr(nn.initializers, name)(**kwargs)
    for seed in [0, 3] if len(shape) > 2 else [0]:
        want = np.asarray(jax.jit(lambda k: jinit(k, shape))(jax.random.key(seed)))
        for mode, wrap in runners():
            key = ri.random.key(seed)
            got = np.asarray(wrap(lambda k: rinit(k, shape))(key))
            if mode == "pjrt" or "normal" not in name:
                np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
            else:  # erf_inv's log1p: NumPy's vs XLA's, a few ulps apart
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_variance_scaling_modes_and_constants():
    key = jax.random.key(1)
    combos = [("fan_in", "uniform"), ("fan_out", "normal"), ("fan_avg", "truncated_normal"),
              ("fan_geo_avg", "uniform")]  # fmt: skip
    for mode, dist in combos:
        if True:
            init = nn.initializers.variance_scaling(0.7, mode, dist, in_axis=0, out_axis=2)
            jinit = jax.nn.initializers.variance_scaling(0.7, mode, dist, in_axis=0, out_axis=2)
            got = np.asarray(ri.jit(lambda k: init(k, (3, 2, 4)), backend="pjrt")(ri.random.key(1)))
            want = np.asarray(jax.jit(lambda k: jinit(k, (3, 2, 4)))(key))
            np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(nn.initializers.zeros(None, (2, 3)), np.zeros((2, 3)))
    np.testing.assert_array_equal(nn.initializers.constant(2.5)(None, (2,)), [2.5, 2.5])
    with pytest.raises(ValueError, match="invalid mode"):
        nn.initializers.variance_scaling(1.0, "fan_x", "normal")
    with pytest.raises(ValueError, match="Can't compute input and output sizes"):
        nn.initializers.glorot_normal()(ri.random.key(0), (3,))


@pytest.mark.parametrize("shape,column_axis", [((4, 6), -1), ((6, 4), -1), ((2, 3, 5), 1)])
def test_orthogonal_initializer(shape, column_axis):
    """Equal to JAX's up to rounding (one QR factorization, evaluated by
    different LAPACK paths), and orthonormal."""
    want = jax.nn.initializers.orthogonal(scale=2.0, column_axis=column_axis)(
        jax.random.key(1), shape
    )
    init = nn.initializers.orthogonal(scale=2.0, column_axis=column_axis)
    for _, wrap in runners():
        got = np.asarray(wrap(lambda k: init(k, shape))(ri.random.key(1)))
        np.testing.assert_allclose(got, np.asarray(want), atol=2e-6)
    flat = np.moveaxis(got, column_axis, -1).reshape(-1, shape[column_axis]) / 2
    small = min(flat.shape)
    gram = flat.T @ flat if flat.shape[0] >= flat.shape[1] else flat @ flat.T
    np.testing.assert_allclose(gram, np.eye(small), atol=1e-5)
    got = np.asarray(ri.random.orthogonal(ri.random.key(2), 3, (2,)))
    np.testing.assert_allclose(got, jax.random.orthogonal(jax.random.key(2), 3, (2,)), atol=2e-6)


# Integer, bool and Python-scalar arguments: JAX writes most activations directly
# in jnp/lax operations, so their result dtypes (and weak types, and TypeErrors)
# are those operations' promotion, not a promotion to float first.
_INT_ARGS = {
    "int32": np.array([-3, -1, 0, 1, 2, 7], np.int32),
    "bool": np.array([True, False, True, False]),
    "uint8": np.array([0, 1, 2, 9], np.uint8),
    "int64": np.array([-2, 0, 1, 3], np.int64),
    "py_int": 2,
    "py_bool": True,
    "py_float": -0.5,
}
_INT_FNS = UNARY + ["gelu", "glu", "softmax", "log_softmax", "log1mexp", "identity", "tanh"]


def _outcome(fn, arg, jit):
    try:
        out = (jit(fn) if jit else fn)(arg)
    except TypeError:
        return "TypeError", None
    return f"{out.dtype}{'-weak' if getattr(out, 'weak_type', False) else ''}", np.asarray(out)


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("arg", sorted(_INT_ARGS))
@pytest.mark.parametrize("name", _INT_FNS)
def test_integer_bool_and_scalar_arguments_as_jax(backend, x64_mode, name, arg, jitted):
    x = _INT_ARGS[arg]
    if name in ("glu", "softmax", "log_softmax") and np.ndim(x) == 0:
        pytest.skip("needs an axis")
    if arg == "py_float" and name == "log1mexp":
        pytest.skip("NaN below 0 in both")
    want, want_value = _outcome(getattr(jax.nn, name), x, jax.jit if jitted else None)
    got, got_value = _outcome(getattr(nn, name), x, ri.jit if jitted else None)
    assert got == want, (name, arg, got, want)
    if want_value is not None:
        np.testing.assert_allclose(
            got_value.astype(np.float64), want_value.astype(np.float64), rtol=2e-6, atol=1e-6
        )


# JAX computes x - max(x) (softmax, log_softmax), -x (log1mexp) and x * x
# (standardize's variance) in an integer x's own dtype: they wrap around
_WRAP_ARGS = {
    "uint8": np.array([0, 1, 2, 9], np.uint8),
    "uint8_2d": np.array([[3, 200], [255, 0]], np.uint8),
    "int8": np.array([-128, 127, 0], np.int8),
    "int32": np.array([-(2**31), 2**31 - 1, 0], np.int32),
    "uint32": np.array([0, 2**32 - 1, 5], np.uint32),
    "uint16": np.array([1, 60000], np.uint16),
}
_WRAP_FNS = {
    "softmax": lambda n, s, x: n.softmax(x),
    "log_softmax": lambda n, s, x: n.log_softmax(x, axis=0),
    "softmax_where": lambda n, s, x: n.softmax(x, where=np.arange(x.size).reshape(x.shape) != 1),
    "log_softmax_where": lambda n, s, x: n.log_softmax(
        x, where=np.arange(x.size).reshape(x.shape) != 1
    ),
    "log1mexp": lambda n, s, x: n.log1mexp(x),
    "standardize": lambda n, s, x: n.standardize(x),
    "special_softmax": lambda n, s, x: s.softmax(x),
    "special_log_softmax": lambda n, s, x: s.log_softmax(x, axis=-1),
}


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("arg", sorted(_WRAP_ARGS))
@pytest.mark.parametrize("name", sorted(_WRAP_FNS))
def test_integer_arguments_wrap_around_as_jax(backend, x64_mode, name, arg, jitted):
    x, program = _WRAP_ARGS[arg], _WRAP_FNS[name]
    want = (jax.jit if jitted else lambda f: f)(lambda a: program(jax.nn, jax.scipy.special, a))(x)
    got = (ri.jit if jitted else lambda f: f)(lambda a: program(nn, ri.scipy.special, a))(x)
    assert got.dtype == want.dtype, (name, arg, got.dtype, want.dtype)
    np.testing.assert_allclose(
        np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=2e-6, atol=1e-6
    )
