# ruff: noqa: B023  (the lambdas are called within their loop iteration)
"""The remaining jax.random samplers (refimpl/random/_discrete.py, _continuous.py)
against jax.random.

Every case runs eagerly (reference backend), under ``ri.jit(backend="ref")``
and under ``ri.jit(backend="pjrt")`` with the parameters as arguments (so
neither JAX nor XLA folds them at compile time), and is compared with JAX's
samples for the same key: bit for bit, except where docs/semantics.md
(section 14.1.1) gives a measured bound in ulps:

* ``chisquare``, ``t``, ``f``, ``generalized_normal``, ``ball`` on the
  reference: ``gamma``'s hardware ``rsqrt`` (the documented gamma bound);
  bit-equal on pjrt;
* ``maxwell``, ``double_sided_maxwell`` on both backends: XLA CPU adds the
  three squares in an order (and with fmas) that depends on the fusion and
  on the shape.

A moment check on 10^4 samples (mean and variance within 5 standard errors of
the analytic values) guards the algorithms where bits are not compared.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import ml_dtypes
import numpy as np
import pytest

import refimpl as ri
import refimpl.random as rr
from tests.helpers.pjrt_helpers import skip_without_pjrt

F32 = np.float32
MODES = ["eager", "ref", "pjrt"]


@pytest.fixture(scope="module", autouse=True)
def _pjrt_available():
    skip_without_pjrt()


def _ulps(x: np.ndarray) -> np.ndarray:
    """Floats mapped to integers monotonically (adjacent floats differ by 1)."""
    width = {2: np.int16, 4: np.int32, 8: np.int64}[x.dtype.itemsize]
    ints = x.view(width).astype(np.int64)
    return np.where(ints < 0, np.iinfo(width).min - ints, ints)


def assert_close_bits(got, want, max_ulps: int = 0, atol: float = 0.0) -> None:
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert_close_bits(g, w, max_ulps, atol)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if got.dtype.kind != "f" and got.dtype != ml_dtypes.bfloat16:
        np.testing.assert_array_equal(got, want)
        return
    both_nan = np.isnan(got.astype(np.float64)) & np.isnan(want.astype(np.float64))
    distance = np.where(both_nan, 0, np.abs(_ulps(got) - _ulps(want)))
    if atol:  # where a sum cancels, its operands' ulps count, not the result's
        near = np.abs(got.astype(np.float64) - want.astype(np.float64)) <= atol
        distance = np.where(near, 0, distance)
    worst = int(distance.max()) if distance.size else 0
    assert worst <= max_ulps, (
        f"{int((distance > 0).sum())} of {distance.size} samples differ, "
        f"up to {worst} ulps (allowed {max_ulps})"
    )


def run(mode: str, fn, key, params):
    if mode == "eager":
        return fn(rr, key, *params)
    return ri.jit(lambda k, *p: fn(rr, k, *p), backend=mode)(key, *params)


# name -> (fn(random_module, key, *params), params, ulps on ref, ulps on pjrt)
CASES = {
    "poisson_knuth": (
        lambda R, k, lam: R.poisson(k, lam, (50, 4)),
        (F32([0.5, 3.0, 9.9, 0.0]),), 0, 0,
    ),
    "poisson_rejection": (
        lambda R, k, lam: R.poisson(k, lam, (50, 4)),
        (F32([10.0, 30.0, 1e3, 1e6]),), 0, 0,
    ),
    "poisson_edges_int8": (
        lambda R, k, lam: R.poisson(k, lam, dtype=np.int8),
        (F32([0.0, 1e10, np.inf, np.nan, -1.0, 3.0, 200.0]),), 0, 0,
    ),
    "poisson_scalar_uint16": (
        lambda R, k, lam: R.poisson(k, lam, (7,), np.uint16),
        (F32(12.5),), 0, 0,
    ),
    "binomial_inversion": (
        lambda R, k, n, p: R.binomial(k, n, p, (50, 2)),
        (F32([5.0, 20.0]), F32([0.3, 0.9])), 0, 0,
    ),
    "binomial_btrs": (
        lambda R, k, n, p: R.binomial(k, n, p, (50, 2)),
        (F32([100.0, 1000.0]), F32([0.3, 0.6])), 0, 0,
    ),
    "binomial_edges": (
        lambda R, k, n, p: R.binomial(k, n, p),
        (F32([np.nan, -1, np.inf, 5, 5, 0, 7.5]), F32([0.5, 0.5, 0.5, np.nan, -0.1, 0.3, 1.0])),
        0, 0,
    ),
    "binomial_f16": (
        lambda R, k, n, p: R.binomial(k, n, p, (20,), np.float16),
        (F32(40.0), F32(0.25)), 0, 0,
    ),
    "multinomial": (
        lambda R, k, n, p: R.multinomial(k, n, p, shape=(10, 2, 3)),
        (F32([20.0, 500.0]), F32([[0.2, 0.3, 0.5], [0.1, 0.6, 0.3]])), 0, 0,
    ),
    "multinomial_dtypes": (
        lambda R, k, n, p: (R.multinomial(k, n, p), R.multinomial(k, n, p, dtype=np.int32)),
        (np.array([10, 20]), np.array([[0.2, 0.8], [0.5, 0.5]], np.float16)), 0, 0,
    ),
    "chisquare": (lambda R, k, df: R.chisquare(k, df, (30, 3)), (F32([0.5, 3.0, 10.0]),), 64, 0),
    "t": (lambda R, k, df: R.t(k, df, (30, 3)), (F32([0.5, 3.0, 10.0]),), 64, 0),
    "f": (lambda R, k, a, b: R.f(k, a, b, (30, 2)), (F32([[1.0, 3.0]] * 30), F32(5.0)), 64, 0),
    "geometric": (lambda R, k, p: R.geometric(k, p, (30, 3)), (F32([0.1, 0.5, 0.9]),), 0, 0),
    "geometric_int8": (lambda R, k, p: R.geometric(k, p, (20,), np.int8), (F32(0.01),), 0, 0),
    "wald": (lambda R, k, m: R.wald(k, m, (30, 3)), (F32([0.3, 1.0, 5.0]),), 0, 0),
    "wald_f16": (lambda R, k, m: R.wald(k, m, (20,), np.float16), (np.float16(2.0),), 0, 0),
    "maxwell": (lambda R, k: R.maxwell(k, (40,)), (), 2, 2),
    "double_sided_maxwell": (
        lambda R, k, loc, scale: R.double_sided_maxwell(k, loc, scale, (20,)),
        (F32(1.0), F32([2.0, 3.0])), 2, 2,
    ),
    "generalized_normal": (lambda R, k, p: R.generalized_normal(k, p, (40,)), (F32(1.5),), 64, 0),
    "triangular": (
        lambda R, k, a, m, b: R.triangular(k, a, m, b, (30, 2)),
        (F32(-1.0), F32([0.0, 0.5]), F32(2.0)), 0, 0,
    ),
    "triangular_bf16": (
        lambda R, k, a, m, b: R.triangular(k, a, m, b, (20,), "bfloat16"),
        (0.0, 0.25, 1.0), 0, 0,
    ),
    "ball": (lambda R, k, p: R.ball(k, 3, p, (20,)), (F32(2.0),), 64, 0),
    "ball_p1": (lambda R, k, p: R.ball(k, 4, p, (10,)), (F32(1.0),), 64, 0),
}  # fmt: skip

# |sign * maxwell * scale + loc| can cancel: maxwell's 2 ulps, scaled, absolutely
ATOL = {"double_sided_maxwell": 2e-5}
# the pjrt compilations of the default suite (each 0.5-5 s): the rest are slow
QUICK_PJRT = {"poisson_rejection", "binomial_btrs", "wald"}
# variants checked eagerly only in the default suite (JAX's compilations add up)
EAGER_ONLY = {"binomial_f16", "wald_f16", "multinomial", "multinomial_dtypes"}
SLOW_ONLY = {"ball_p1", "poisson_scalar_uint16"}


def _params():
    for name in CASES:
        for mode in MODES:
            marks = ()
            if (
                (mode == "pjrt" and name not in QUICK_PJRT)
                or (mode != "eager" and name in EAGER_ONLY)
                or name in SLOW_ONLY
            ):
                marks = (pytest.mark.slow,)
            yield pytest.param(name, mode, id=f"{name}-{mode}", marks=marks)


_jax_samples: dict = {}


def jax_samples(name: str, seed: int) -> Any:
    """JAX's samples for a case, computed once: eager JAX, whose sampler is
    one jitted program with the parameters as its arguments (as refimpl's)."""
    if (name, seed) not in _jax_samples:
        fn, params = CASES[name][:2]
        out = fn(jax.random, jax.random.PRNGKey(seed), *params)
        _jax_samples[name, seed] = (
            tuple(map(np.asarray, out)) if isinstance(out, tuple) else (np.asarray(out))
        )
    return _jax_samples[name, seed]


@pytest.mark.parametrize("name,mode", list(_params()))
def test_samples_match_jax(name, mode):
    fn, params, ulps_ref, ulps_pjrt = CASES[name]
    for seed in (0, 7):
        got = run(mode, fn, np.asarray(jax.random.PRNGKey(seed)), params)
        ulps = ulps_pjrt if mode == "pjrt" else ulps_ref
        assert_close_bits(got, jax_samples(name, seed), ulps, ATOL.get(name, 0.0))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["poisson_rejection", "binomial_btrs", "chisquare", "wald"])
def test_more_keys_on_pjrt(name):
    fn, params, _, ulps_pjrt = CASES[name]
    jitted = ri.jit(lambda k, *p: fn(rr, k, *p), backend="pjrt")
    for seed in range(2, 8):
        key = np.asarray(jax.random.PRNGKey(seed))
        assert_close_bits(jitted(key, *params), jax_samples(name, seed), ulps_pjrt)


def test_typed_keys_and_python_scalars():
    key = jax.random.key(3)
    mine = rr.wrap_key_data(np.asarray(jax.random.key_data(key)))
    assert_close_bits(rr.poisson(mine, 4.0, (10,)), jax.random.poisson(key, 4.0, (10,)))
    assert_close_bits(rr.geometric(mine, 0.3, (10,)), jax.random.geometric(key, 0.3, (10,)))


@pytest.mark.parametrize("backend", ["ref", pytest.param("pjrt", marks=pytest.mark.slow)])
def test_vmap_over_keys(backend):
    keys = jax.random.split(jax.random.PRNGKey(5), 4)
    lam = F32([2.0, 50.0, 7.0])

    def body(R, k, lam):
        return R.poisson(k, lam), R.binomial(k, 30.0, 0.4, (3,))

    # the rates are an argument: as a constant XLA would fold what depends on it
    want = jax.jit(jax.vmap(lambda k, lam: body(jax.random, k, lam), (0, None)))(keys, lam)
    mine = ri.vmap(lambda k, lam: body(rr, k, lam), (0, None))
    got = ri.jit(mine, backend=backend)(np.asarray(keys), lam)
    for g, w in zip(got, want, strict=True):
        assert_close_bits(g, w)


@pytest.mark.slow
def test_vmap_eager_multinomial():
    keys = jax.random.split(jax.random.PRNGKey(9), 3)
    p = F32([0.5, 0.25, 0.25])
    want = jax.vmap(lambda k: jax.random.multinomial(k, 12.0, p))(keys)
    got = ri.vmap(lambda k: rr.multinomial(k, 12.0, p))(np.asarray(keys))
    assert_close_bits(got, want)


def test_key_dtype():
    assert rr.key_dtype() == rr.key(0).dtype
    assert str(rr.key_dtype("threefry2x32")) == str(jax.random.key_dtype("threefry2x32"))
    assert str(rr.key_dtype("rbg")) == str(jax.random.key_dtype("rbg"))
    with pytest.raises(ValueError, match="key_dtype"):
        rr.key_dtype("philox")


# --- errors, as JAX's ----------------------------------------------------------------

ERRORS = [
    ("poisson", lambda R, k: R.poisson(k, np.ones(3, F32), (2,)), ValueError),
    ("poisson", lambda R, k: R.poisson(k, 3.0, (2,), np.float32), ValueError),
    ("binomial", lambda R, k: R.binomial(k, 3.0, 0.5, (3,), np.int32), ValueError),
    ("binomial", lambda R, k: R.binomial(k, np.ones(3, F32), 0.5, (2,)), ValueError),
    ("geometric", lambda R, k: R.geometric(k, 0.5, (3,), np.float32), ValueError),
    ("geometric", lambda R, k: R.geometric(k, np.ones(3, F32), (2,)), ValueError),
    ("t", lambda R, k: R.t(k, np.ones(3, F32), (2,)), ValueError),
    ("t", lambda R, k: R.t(k, np.ones(3, F32), (3,), np.float16), ValueError),
    ("chisquare", lambda R, k: R.chisquare(k, 2.0, (3,), np.int32), ValueError),
    ("f", lambda R, k: R.f(k, np.ones(3, F32), 1.0, (2,)), ValueError),
    ("wald", lambda R, k: R.wald(k, np.ones(2, np.float64), (2,), np.float16), ValueError),
    ("maxwell", lambda R, k: R.maxwell(k, (3,), np.int32), ValueError),
    ("gamma", lambda R, k: R.generalized_normal(k, 2.0, (3,), np.int32), ValueError),
    ("triangular", lambda R, k: R.triangular(k, 0.0, np.ones(3, F32), 1.0, (2,)), ValueError),
    ("multinomial", lambda R, k: R.multinomial(k, np.ones(2, F32), np.full(3, 0.5, F32)),
     ValueError),
    ("ball", lambda R, k: R.ball(k, 2.5), TypeError),
    ("poisson", lambda R, k: R.poisson(np.zeros((2, 2), np.uint32), 3.0), ValueError),
    ("poisson", lambda R, k: R.poisson(k, [1.0, 2.0]), TypeError),
    ("multinomial", lambda R, k: R.multinomial(k, 10.0, [0.2, 0.8]), TypeError),
    ("geometric", lambda R, k: R.geometric(k, [0.2, 0.3]), TypeError),
]  # fmt: skip


@pytest.mark.parametrize("name,fn,exc", ERRORS, ids=[f"{e[0]}-{i}" for i, e in enumerate(ERRORS)])
def test_errors_as_jax(name, fn, exc):
    with pytest.raises(exc):
        fn(jax.random, jax.random.PRNGKey(0))
    with pytest.raises(exc, match=name):
        fn(rr, np.asarray(jax.random.PRNGKey(0)))


# --- moments: a wrong algorithm fails even where bits are not compared -------------------

N = 10_000


def _check_moments(samples, mean: float, var: float, name: str) -> None:
    x = np.asarray(samples, np.float64).reshape(N, -1)
    for col in range(x.shape[1]):
        xs = x[:, col]
        m = xs.mean()
        v = xs.var()
        mu4 = ((xs - m) ** 4).mean()
        m_sigma = math.sqrt(var / N)
        v_sigma = math.sqrt(max(mu4 - v * v, 1e-300) / N)
        assert abs(m - mean) <= 5 * m_sigma, (name, col, m, mean, m_sigma)
        assert abs(v - var) <= 5 * v_sigma, (name, col, v, var, v_sigma)


def _gamma_fn(x: float) -> float:
    return math.gamma(x)


MOMENTS = {
    "poisson_3": (lambda k: rr.poisson(k, 3.0, (N,)), 3.0, 3.0),
    "poisson_40": (lambda k: rr.poisson(k, 40.0, (N,)), 40.0, 40.0),
    "binomial_inv": (lambda k: rr.binomial(k, 20.0, 0.3, (N,)), 6.0, 4.2),
    "binomial_btrs": (lambda k: rr.binomial(k, 200.0, 0.7, (N,)), 140.0, 42.0),
    "multinomial": (
        lambda k: rr.multinomial(k, 30.0, F32([0.2, 0.8]), shape=(N, 2))[:, 0],
        6.0,
        4.8,
    ),
    "chisquare": (lambda k: rr.chisquare(k, 5.0, (N,)), 5.0, 10.0),
    "t": (lambda k: rr.t(k, 9.0, (N,)), 0.0, 9.0 / 7.0),
    "f": (lambda k: rr.f(k, 6.0, 20.0, (N,)), 20.0 / 18.0, 2 * 400 * 24 / (6 * 18**2 * 16)),
    "geometric": (lambda k: rr.geometric(k, 0.25, (N,)), 4.0, 12.0),
    "wald": (lambda k: rr.wald(k, 1.5, (N,)), 1.5, 1.5**3),
    "maxwell": (lambda k: rr.maxwell(k, (N,)), 2 * math.sqrt(2 / math.pi), 3 - 8 / math.pi),
    "double_sided_maxwell": (
        lambda k: rr.double_sided_maxwell(k, 1.0, 2.0, (N,)),
        1.0,
        12.0,
    ),
    "generalized_normal": (
        lambda k: rr.generalized_normal(k, 3.0, (N,)),
        0.0,
        _gamma_fn(1.0) / _gamma_fn(1 / 3),
    ),
    "triangular": (lambda k: rr.triangular(k, 0.0, 1.0, 4.0, (N,)), 5 / 3, (0 + 1 + 16 - 4) / 18),
    "ball_r2": (
        lambda k: np.sum(np.asarray(rr.ball(k, 3, 2.0, (N,))) ** 2, -1),
        3 / 5,
        3 / 7 - 9 / 25,
    ),
}


@pytest.mark.parametrize("name", list(MOMENTS))
def test_moments(name):
    fn, mean, var = MOMENTS[name]
    _check_moments(fn(np.asarray(jax.random.PRNGKey(11))), mean, var, name)


def test_poisson_dtype_and_bounds():
    out = rr.poisson(np.asarray(jax.random.PRNGKey(0)), F32([0.0, 2.0, 1e10]))
    assert out.dtype == np.int32
    assert int(out[0]) == 0 and int(out[2]) == np.iinfo(np.int32).max
    assert rr.geometric(np.asarray(jax.random.PRNGKey(0)), 0.5, (3,)).dtype == np.int32
    trials = np.asarray(rr.geometric(np.asarray(jax.random.PRNGKey(1)), 0.5, (50,)))
    assert trials.min() >= 1
    assert np.asarray(rr.ball(np.asarray(jax.random.PRNGKey(0)), 2)).shape == (2,)


@pytest.mark.slow
def test_x64_dtypes_and_bits(x64):
    """With x64: int64 poisson/geometric, float64 binomial, bit-equal on ref
    (float64 wald is not: the reference's float64 mul_add rounds twice)."""
    key = jax.random.PRNGKey(4)
    lam = np.array([0.5, 3.0, 30.0, 1e4])
    cases = [
        (lambda R, k: R.poisson(k, lam, (20, 4))),
        (lambda R, k: R.binomial(k, np.array([10.0, 1000.0]), np.array([0.3, 0.6]), (20, 2))),
        (lambda R, k: R.geometric(k, np.array([0.1, 0.9]), (20, 2))),
    ]
    for fn in cases:
        want = np.asarray(fn(jax.random, key))
        assert want.dtype in (np.int64, np.float64)
        assert_close_bits(fn(rr, np.asarray(key)), want)


@pytest.mark.slow
def test_vmap_over_parameters():
    key = jax.random.PRNGKey(2)
    lams = F32([1.0, 5.0, 20.0, 100.0])
    want = jax.vmap(lambda lam: jax.random.poisson(key, lam, (3,)))(lams)
    got = ri.vmap(lambda lam: rr.poisson(np.asarray(key), lam, (3,)))(lams)
    assert_close_bits(got, want)
    n, p = F32([5, 50, 500]), F32([0.1, 0.5, 0.9])
    want = jax.vmap(lambda n, p: jax.random.binomial(key, n, p, (3,)))(n, p)
    got = ri.vmap(lambda n, p: rr.binomial(np.asarray(key), n, p, (3,)))(n, p)
    assert_close_bits(got, want)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["t", "chisquare", "f"])
def test_grad_in_the_degrees_of_freedom(name):
    """Differentiable through gamma's implicit reparameterization, as JAX's
    (the derivative's own bound: tests/surface/test_random_gamma_grad.py)."""
    key = jax.random.PRNGKey(2)

    def total(R, k, df):
        if name == "f":
            return R.f(k, df, 4.0, (5,)).sum()
        return getattr(R, name)(k, df, (5,)).sum()

    want = float(jax.grad(lambda df: total(jax.random, key, df))(3.0))
    got = float(ri.grad(lambda df: total(rr, np.asarray(key), df))(3.0))
    assert got == pytest.approx(want, rel=1e-4)
