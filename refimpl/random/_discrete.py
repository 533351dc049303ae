"""Discrete samplers, key for key JAX 0.10.2's algorithms (docs/semantics.md,
"The remaining samplers"):

* ``poisson(lam)``: integers; float32 arithmetic whatever ``dtype``. Knuth's
  product of uniforms where ``lam < 10`` or NaN, Hormann's transformed
  rejection (PTRS) elsewhere, both as loops over the whole output that run
  until every element is done (so an element's value depends on how many
  rounds its neighbours need, as in JAX); ``lam == 0`` gives 0, NaN and
  negative ``lam`` give -1, ``+inf`` gives 0 and values beyond the dtype
  saturate (the float-to-integer conversion clamps).
* ``binomial(n, p)``: floats; inversion by a sum of geometric variates where
  ``n q <= 10`` (``q = min(p, 1 - p)``), Hormann's BTRS rejection elsewhere;
  NaN for NaN/negative ``n`` or NaN/negative ``q``, ``inf`` for ``n = inf``.
* ``multinomial(n, p)``: a ``scan`` over the categories drawing
  ``binomial(remaining, p_i / sum(p_i..))``, one split key per category.
* ``geometric(p) = floor(log u / log1p(-p)) + 1`` (``u = 0`` read as 1).

Each public function checks its arguments as JAX does, then runs one jitted
program (``_run``) whose body repeats JAX's sequence of operations: the same
key splits, the same draws, the same arithmetic in the same order and dtypes,
so the same key gives JAX's samples.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from refimpl import dtypes, lax, tracing
from refimpl import numpy as rnp
from refimpl.random._argument_checks import (
    _as_inexact,
    _broadcast_shape,
    _check_arraylike,
    _const,
    _float_out,
    _int_out,
)
from refimpl.random._basic import _uniform
from refimpl.random._keys import _as_shape, _key_data_of, _run, _split_data

_F32 = np.dtype(np.float32)


# --- poisson ---------------------------------------------------------------------------


def poisson(key: Any, lam: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Poisson(lam) samples of an integer ``dtype`` (default int32; int64 with
    x64), computed in float32 (see the module docstring)."""
    data, _ = _key_data_of("poisson", key)
    _check_arraylike("poisson", lam=lam)
    dtype = _int_out("poisson", dtype)
    shape = tuple(np.shape(lam)) if shape is None else _as_shape("poisson", shape)
    try:
        np.broadcast_to(np.empty(np.shape(lam), np.bool_), shape)
    except ValueError:
        raise ValueError(
            f"poisson: incompatible shapes for broadcasting: lam of shape "
            f"{tuple(np.shape(lam))} to the requested shape {shape}"
        ) from None
    return _run("poisson", _poisson, (shape, dtype), data, lam)


def _poisson(data: Any, shape: tuple[int, ...], dtype: np.dtype, lam: Any) -> Any:
    lam = lax.convert_element_type(rnp.broadcast_to(lam, shape), _F32)
    use_knuth = lax.bitwise_or(lax.ne(lam, lam), lax.lt(lam, _const(10, _F32)))
    lam_knuth = lax.select(use_knuth, lam, rnp.zeros(shape, _F32))
    # the rejection sampler's acceptance rate tends to 89%: any big rate will do
    lam_rejection = lax.select(use_knuth, rnp.full(shape, 1e5, _F32), lam)
    # JAX's bound on the rounds ("insanely conservative"), beyond int32 unreachable
    max_iters = min(int(dtypes.iinfo(dtype).max), 2**31 - 1)
    knuth = _poisson_knuth(data, lam_knuth, shape, dtype, max_iters)
    rejection = _poisson_rejection(data, lam_rejection, shape, dtype, max_iters)
    result = lax.select(use_knuth, knuth, rejection)
    return lax.select(lax.eq(lam, _const(0, _F32)), rnp.zeros(shape, dtype), result)


def _poisson_knuth(data: Any, lam: Any, shape: tuple, dtype: np.dtype, max_iters: int) -> Any:
    """Knuth: count the uniforms whose running product stays above exp(-lam)
    (in log space), all elements in lock step."""
    neg_lam = lax.neg(lam)

    def cond(carry):
        i, _, _, log_prod = carry
        going = rnp.any(lax.gt(log_prod, neg_lam))
        return lax.bitwise_and(going, lax.lt(i, np.int32(max_iters)))

    def body(carry):
        i, k, rng, log_prod = carry
        keys = _split_data(rng, (2,))
        rng, subkey = keys[0], keys[1]
        k = lax.select(lax.gt(log_prod, neg_lam), lax.add(k, _const(1, dtype)), k)
        u = _uniform(subkey, shape, _F32, 0.0, 1.0)
        return lax.add(i, np.int32(1)), k, rng, lax.add(log_prod, lax.log(u))

    init = (np.int32(0), rnp.zeros(shape, dtype), data, rnp.zeros(shape, _F32))
    k = lax.while_loop(cond, body, init)[1]
    return lax.sub(k, _const(1, dtype))


def _poisson_rejection(data: Any, lam: Any, shape: tuple, dtype: np.dtype, max_iters: int) -> Any:
    """Hormann's PTRS; a later round's accepted value replaces an earlier one
    (JAX keeps ``select(accept, k, k_out)``, not the first acceptance)."""

    def c(value: float) -> Any:
        return _const(value, _F32)

    log_lam = lax.log(lam)
    b = lax.mul_add(c(2.53), lax.sqrt(lam), c(0.931))
    a = lax.mul_add(c(0.02483), b, c(-0.059))
    inv_alpha = lax.add(c(1.1239), lax.div(c(1.1328), lax.sub(b, c(3.4))))
    v_r = lax.sub(c(0.9277), lax.div(c(3.6224), lax.sub(b, c(2))))

    def cond(carry):
        i, _, accepted, _ = carry
        pending = rnp.any(lax.bitwise_not(accepted))
        return lax.bitwise_and(pending, lax.lt(i, np.int32(max_iters)))

    def body(carry):
        i, k_out, accepted, key = carry
        keys = _split_data(key, (3,))
        key, sub0, sub1 = keys[0], keys[1], keys[2]
        u = lax.sub(_uniform(sub0, shape, _F32, 0.0, 1.0), c(0.5))
        v = _uniform(sub1, shape, _F32, 0.0, 1.0)
        u_shifted = lax.sub(c(0.5), lax.abs(u))
        slope = lax.add(lax.div(lax.mul(c(2), a), u_shifted), b)
        k = lax.floor(lax.add(lax.mul_add(slope, u, lam), c(0.43)))
        hat = lax.add(lax.div(a, lax.mul(u_shifted, u_shifted)), b)
        s = lax.log(lax.div(lax.mul(v, inv_alpha), hat))
        t = lax.sub(lax.mul_add(k, log_lam, lax.neg(lam)), _lgamma_f32(lax.add(k, c(1))))
        accept1 = lax.bitwise_and(lax.ge(u_shifted, c(0.07)), lax.le(v, v_r))
        reject = lax.bitwise_or(
            lax.lt(k, c(0)), lax.bitwise_and(lax.lt(u_shifted, c(0.013)), lax.gt(v, u_shifted))
        )
        accept = lax.bitwise_or(accept1, lax.bitwise_and(lax.bitwise_not(reject), lax.le(s, t)))
        k_out = lax.select(accept, k, k_out)
        return lax.add(i, np.int32(1)), k_out, lax.bitwise_or(accepted, accept), key

    init = (np.int32(0), rnp.full(shape, -1.0, _F32), rnp.zeros(shape, np.bool_), data)
    k = lax.while_loop(cond, body, init)[1]
    return lax.convert_element_type(k, dtype)


_LANCZOS = (
    676.520386,
    -1259.13916,
    771.323425,
    -176.615036,
    12.5073433,
    -0.138571098,
    9.98436917e-06,
    1.50563267e-07,
)


def _lgamma_f32(x: Any) -> Any:
    """float32 ``lgamma`` as the operations XLA expands ``chlo.lgamma`` into
    (a Lanczos approximation, g = 7, with reflection below 1/2), written out
    so that the reference computes XLA's bits: its ``lgamma`` primitive is
    the correctly rounded value, which differs from XLA's in the last bits
    for about 40% of inputs, enough to flip PTRS's ``s <= t`` test. Two
    rewrites XLA makes are part of it: the division by the constant 7.5 is a
    product with its rounded reciprocal, and ``(z + 1/2 - q) * r + c`` is
    one fused multiply-add. On pjrt these operations compile to what JAX's
    ``lgamma`` compiles to."""

    def c(value: float | np.floating[Any]) -> Any:
        return _const(value, _F32)

    reflect = lax.lt(x, c(0.5))
    z = lax.select(reflect, lax.neg(x), lax.sub(x, c(1)))
    series = lax.add(lax.div(c(_LANCZOS[0]), lax.add(z, c(1))), c(1))
    for i, coefficient in enumerate(_LANCZOS[1:], start=2):
        series = lax.add(series, lax.div(c(coefficient), lax.add(z, c(i))))
    t_plus = lax.add(z, c(7.5))
    log_t = lax.add(lax.log1p(lax.mul(z, c(np.float32(1) / np.float32(7.5)))), c(2.01490307))
    ratio = lax.div(t_plus, log_t)
    log_y = lax.mul_add(lax.sub(lax.add(z, c(0.5)), ratio), log_t, c(0.918938518))
    log_y = lax.add(log_y, lax.log(series))
    # the reflection: log(pi) - log|sin(pi frac)| - lgamma(1 - x)
    abs_x = lax.abs(x)
    frac = lax.sub(abs_x, lax.floor(abs_x))
    frac = lax.select(lax.lt(c(0.5), frac), lax.sub(c(1), frac), frac)
    log_sin = lax.log(lax.sin(lax.mul(frac, c(np.pi))))
    reflected = lax.select(
        lax.is_finite(log_sin), lax.sub(lax.sub(c(1.14472985), log_sin), log_y), lax.neg(log_sin)
    )
    out = lax.select(reflect, reflected, log_y)
    return lax.select(lax.eq(lax.abs(x), c(np.inf)), rnp.full_like(x, np.inf), out)


# --- binomial and multinomial ------------------------------------------------------------

# log(k!) - [(k + 1/2) log(k + 1) - (k + 1) + log(2 pi)/2], k = 0..9 (JAX's table)
_STIRLING_TAIL = (
    0.0810614667953272,
    0.0413406959554092,
    0.0276779256849983,
    0.02079067210376509,
    0.0166446911898211,
    0.0138761288230707,
    0.0118967099458917,
    0.0104112652619720,
    0.00925546218271273,
    0.00833056343336287,
)


def binomial(
    key: Any, n: Any, p: Any, shape: Sequence[int] | None = None, dtype: Any = None
) -> Any:
    """Binomial(n, p) samples as floats of ``dtype``, computed in ``p``'s
    inexact dtype (see the module docstring)."""
    data, _ = _key_data_of("binomial", key)
    _check_arraylike("binomial", n=n, p=p)
    for position, value in ((1, n), (2, p)):
        tracing.get_aval(value, "binomial", position)  # a clear TypeError for non-arrays
    dtype = _float_out("binomial", dtype)
    shape = _broadcast_shape("binomial", shape, n, p)
    return _run("binomial", _binomial, (shape, dtype), data, n, p)


def _stirling_tail(k: Any) -> Any:
    """JAX's ``_stirling_approx_tail``: the table for ``k <= 9``, else the
    series ``(1/12 - (1/360 - 1/1260/(k+1)^2)/(k+1)^2)/(k+1)`` -- evaluated,
    as in JAX, at ``k`` clamped to [0, 9]."""
    dtype = np.dtype(tracing.get_aval(k, "binomial", 0).dtype)

    def c(value: float) -> Any:
        return _const(value, dtype)

    use_table = lax.le(k, c(9))
    k = lax.clamp(c(0), k, c(9))
    k1 = lax.add(k, c(1))
    kp1sq = lax.mul(k1, k1)
    inner = lax.div(lax.sub(c(1.0 / 360), lax.div(c(1.0 / 1260), kp1sq)), kp1sq)
    approx = lax.div(lax.sub(c(1.0 / 12), inner), k1)
    table = np.asarray(_STIRLING_TAIL, dtype)
    index = lax.convert_element_type(lax.floor(k), np.int32)
    return lax.select(use_table, rnp.take(table, index), approx)


def _binomial_inversion(
    data: Any, count: Any, prob: Any, shape: tuple, max_iters: Any, dtype: np.dtype
) -> Any:
    """Count geometric(prob) waiting times until their sum exceeds ``count``."""
    pdtype = np.dtype(tracing.get_aval(prob, "binomial", 0).dtype)
    log1minusprob = lax.log1p(lax.neg(prob))

    def cond(carry):
        i, _, geom_sum, _ = carry
        going = rnp.any(lax.le(geom_sum, count))
        return lax.bitwise_and(going, _below(i, max_iters))

    def body(carry):
        i, num_geom, geom_sum, key = carry
        keys = _split_data(key, (2,))
        subkey, key = keys[0], keys[1]
        more = lax.le(geom_sum, count)
        num_geom = lax.select(more, lax.add(num_geom, _const(1, pdtype)), num_geom)
        u = _uniform(subkey, shape, pdtype, 0.0, 1.0)
        geom = lax.ceil(lax.div(lax.log(u), log1minusprob))
        return lax.add(i, np.int32(1)), num_geom, lax.add(geom_sum, geom), key

    zeros = rnp.zeros(shape, pdtype)
    k = lax.while_loop(cond, body, (np.int32(0), zeros, zeros, data))[1]
    return lax.convert_element_type(lax.sub(k, _const(1, pdtype)), dtype)


def _below(i: Any, max_iters: Any) -> Any:
    """``i < max_iters`` with the round counter converted to ``max_iters``'s
    float dtype, as JAX's weakly typed counter is."""
    return lax.lt(lax.convert_element_type(i, max_iters.dtype), max_iters)


def _btrs(data: Any, count: Any, prob: Any, shape: tuple, max_iters: Any, dtype: np.dtype):
    """Hormann's BTRS (transformed rejection with squeeze), all elements in lock step."""
    pdtype = np.dtype(tracing.get_aval(prob, "binomial", 0).dtype)

    def c(value: float) -> Any:
        return _const(value, pdtype)

    one_minus = lax.sub(c(1), prob)
    stddev = lax.sqrt(lax.mul(lax.mul(count, prob), one_minus))
    b = lax.mul_add(c(2.53), stddev, c(1.15))
    a = lax.mul_add(c(0.01), prob, lax.mul_add(c(0.0248), b, c(-0.0873)))
    cc = lax.mul_add(count, prob, c(0.5))
    v_r = lax.sub(c(0.92), lax.div(c(4.2), b))
    r = lax.div(prob, one_minus)
    alpha = lax.mul(lax.add(c(2.83), lax.div(c(5.1), b)), stddev)
    m = lax.floor(lax.mul(lax.add(count, c(1)), prob))
    count_m1 = lax.add(lax.sub(count, m), c(1))
    term_m = lax.mul(lax.add(m, c(0.5)), lax.log(lax.div(lax.add(m, c(1)), lax.mul(r, count_m1))))

    def cond(carry):
        i, _, accepted, _ = carry
        pending = rnp.any(lax.bitwise_not(accepted))
        return lax.bitwise_and(pending, _below(i, max_iters))

    def body(carry):
        i, k_out, accepted, key = carry
        keys = _split_data(key, (3,))
        key, sub0, sub1 = keys[0], keys[1], keys[2]
        u = _uniform(sub0, shape, pdtype, 0.0, 1.0)
        v = _uniform(sub1, shape, pdtype, 0.0, 1.0)
        u = lax.sub(u, c(0.5))
        us = lax.sub(c(0.5), lax.abs(u))
        accept1 = lax.bitwise_and(lax.ge(us, c(0.07)), lax.le(v, v_r))
        slope = lax.add(lax.div(lax.mul(c(2), a), us), b)
        k = lax.floor(lax.mul_add(slope, u, cc))
        reject = lax.bitwise_or(lax.lt(k, c(0)), lax.gt(k, count))
        hat = lax.add(lax.div(a, lax.mul(us, us)), b)
        v = lax.log(lax.div(lax.mul(v, alpha), hat))
        count_k1 = lax.add(lax.sub(count, k), c(1))
        term_n = lax.mul(lax.add(count, c(1)), lax.log(lax.div(count_m1, count_k1)))
        ratio_k = lax.div(lax.mul(r, count_k1), lax.add(k, c(1)))
        term_k = lax.mul(lax.add(k, c(0.5)), lax.log(ratio_k))
        ub = lax.add(lax.add(term_m, term_n), term_k)
        ub = lax.add(lax.add(ub, _stirling_tail(m)), _stirling_tail(lax.sub(count, m)))
        ub = lax.sub(lax.sub(ub, _stirling_tail(k)), _stirling_tail(lax.sub(count, k)))
        accept = lax.bitwise_or(accept1, lax.bitwise_and(lax.bitwise_not(reject), lax.le(v, ub)))
        k_out = lax.select(accept, k, k_out)
        return lax.add(i, np.int32(1)), k_out, lax.bitwise_or(accepted, accept), key

    init = (np.int32(0), rnp.full(shape, -1.0, pdtype), rnp.zeros(shape, np.bool_), data)
    k = lax.while_loop(cond, body, init)[1]
    return lax.convert_element_type(k, dtype)


def _binomial(data: Any, shape: tuple[int, ...], dtype: np.dtype, n: Any, p: Any) -> Any:
    prob = _as_inexact("binomial", p)
    pdtype = np.dtype(tracing.get_aval(prob, "binomial", 1).dtype)
    count = rnp.broadcast_to(lax.convert_element_type(n, pdtype), shape)
    prob = rnp.broadcast_to(lax.convert_element_type(prob, pdtype), shape)

    def c(value: float) -> Any:
        return _const(value, pdtype)

    p_lt_half = lax.lt(prob, c(0.5))
    q = lax.select(p_lt_half, prob, lax.sub(c(1), prob))
    count_nan_or_neg = lax.bitwise_or(lax.ne(count, count), lax.lt(count, c(0)))
    count_inf = lax.eq(lax.abs(count), c(np.inf))
    q_is_nan = lax.ne(q, q)
    q_l_0 = lax.lt(q, c(0))
    q = lax.select(lax.bitwise_or(q_is_nan, q_l_0), rnp.full(shape, 0.01, pdtype), q)
    use_inversion = lax.bitwise_or(count_nan_or_neg, lax.le(lax.mul(count, q), c(10)))
    count = lax.floor(count)
    count_inv = lax.select(use_inversion, count, rnp.zeros(shape, pdtype))
    count_btrs = lax.select(use_inversion, rnp.full(shape, 1e4, pdtype), count)
    q_btrs = lax.select(use_inversion, rnp.full(shape, 0.5, pdtype), q)
    max_iters = _const(dtypes.finfo(dtype).max, dtype)
    inversion = _binomial_inversion(data, count_inv, q, shape, max_iters, dtype)
    btrs = _btrs(data, count_btrs, q_btrs, shape, max_iters, dtype)
    samples = lax.select(use_inversion, inversion, btrs)
    invalid = lax.bitwise_or(lax.bitwise_or(q_l_0, q_is_nan), count_nan_or_neg)
    samples = lax.select(invalid, rnp.full(shape, np.nan, dtype), samples)
    infinite = lax.bitwise_and(count_inf, lax.bitwise_not(invalid))
    samples = lax.select(infinite, rnp.full(shape, np.inf, dtype), samples)
    keep = lax.bitwise_or(
        lax.bitwise_or(p_lt_half, count_nan_or_neg), lax.bitwise_or(q_is_nan, count_inf)
    )
    return lax.select(keep, samples, lax.sub(lax.convert_element_type(count, dtype), samples))


def multinomial(
    key: Any,
    n: Any,
    p: Any,
    *,
    shape: Sequence[int] | None = None,
    dtype: Any = None,
    unroll: int | bool = 1,
) -> Any:
    """Multinomial(n, p) counts over ``p``'s last axis (floats of ``dtype``):
    category ``i`` draws ``binomial(remaining, p_i / (p_i + ... + p_last))``
    with the ``i``-th of ``split(key, len(p))``."""
    data, _ = _key_data_of("multinomial", key)
    _check_arraylike("multinomial", n=n, p=p)
    if dtype is not None:  # any dtype: JAX converts the float counts with astype
        dtype = dtypes.canonicalize_dtype(dtype)
    if np.ndim(p) < 1:
        raise ValueError(f"multinomial: p must have at least one axis, got shape {np.shape(p)}")
    shape = tuple(np.shape(p)) if shape is None else _as_shape("multinomial", shape)
    if not shape:
        raise ValueError("multinomial: shape must have at least one axis (the categories)")
    for name, value, target in (("n", n, shape[:-1]), ("p", p, shape)):
        try:
            np.broadcast_to(np.empty(np.shape(value), np.bool_), target)
        except ValueError:
            raise ValueError(
                f"multinomial: cannot broadcast {name} of shape {tuple(np.shape(value))} "
                f"to shape {target}"
            ) from None
    return _run("multinomial", _multinomial, (shape, dtype, unroll), data, n, p)


def _multinomial(data: Any, shape: tuple, dtype: Any, unroll: Any, n: Any, p: Any) -> Any:
    # JAX's promote_dtypes_inexact(n, p): their common dtype, made inexact
    common, _ = dtypes.result_type(n, p)
    if not dtypes.is_inexact(common):
        common = dtypes.canonicalize_dtype(float)
    n = rnp.broadcast_to(lax.convert_element_type(n, common), shape[:-1])
    p = rnp.broadcast_to(lax.convert_element_type(p, common), shape)
    p = rnp.moveaxis(p, -1, 0)
    remaining = lax.cumsum(p, 0, reverse=True)
    safe = lax.select(lax.eq(remaining, _const(0, common)), rnp.ones_like(remaining), remaining)
    ratios = lax.div(p, safe)
    keys = _split_data(data, (shape[-1],))

    def step(remainder, ratio_key):
        ratio, key = ratio_key
        ratio = lax.clamp(_const(0, common), ratio, _const(1, common))
        count = _binomial(key, shape[:-1], common, remainder, ratio)
        return lax.sub(remainder, count), count

    _, counts = lax.scan(step, n, (ratios, keys), unroll=unroll)
    counts = rnp.moveaxis(counts, 0, -1)
    # JAX ends with counts.astype(dtype), and astype(None) is the default float dtype
    out_dtype = dtypes.canonicalize_dtype(float) if dtype is None else dtype
    return lax.convert_element_type(counts, out_dtype)


# --- geometric, wald, triangular --------------------------------------------------------


def geometric(key: Any, p: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Geometric(p) samples (trials to the first success, from 1), integers of
    ``dtype``: ``floor(log u / log1p(-p)) + 1`` with ``u`` uniform in ``(0, 1]``
    (JAX maps a drawn 0 to 1)."""
    data, _ = _key_data_of("geometric", key)
    _check_arraylike("geometric", p=p)
    dtype = _int_out("geometric", dtype)
    shape = _broadcast_shape("geometric", shape, p)
    return _run("geometric", _geometric, (shape, dtype), data, p)


def _geometric(data: Any, shape: tuple, dtype: np.dtype, p: Any) -> Any:
    p = _as_inexact("geometric", p)
    pdtype = np.dtype(tracing.get_aval(p, "geometric", 1).dtype)
    u = _uniform(data, shape, pdtype, 0.0, 1.0)
    u = rnp.where(rnp.equal(u, 0), 1, u)
    log_one_minus_p = rnp.broadcast_to(lax.log1p(lax.neg(p)), shape)
    g = rnp.add(lax.floor(lax.div(lax.log(u), log_one_minus_p)), 1)
    return rnp.astype(g, dtype)


__all__ = [
    "binomial",
    "geometric",
    "multinomial",
    "poisson",
]
