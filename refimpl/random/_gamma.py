"""``gamma`` (Marsaglia and Tsang's rejection, with its implicit
reparameterization gradient) and what is built on it: ``loggamma``, ``beta``,
``dirichlet``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from refimpl import lax, tracing
from refimpl import numpy as rnp
from refimpl.custom_batching import custom_vmap
from refimpl.custom_derivatives import custom_jvp
from refimpl.numpy._shape import reshape as _reshape  # arrays, also of NumPy data
from refimpl.random import _keys
from refimpl.random._basic import _check_broadcast, _float_dtype, _normal, _strong, _uniform
from refimpl.random._keys import _as_shape, _key_data_of, _run, _split_data
from refimpl.random._transformed import _param_shape
from refimpl.scipy.special._logarithmic import _softmax
from refimpl.transforms.batching import vmap

# --- gamma and what is built on it ----------------------------------------------------


def _gamma_one(data: Any, alpha: Any, log_space: bool) -> Any:
    """One Gamma(alpha) sample by Marsaglia and Tsang's method (JAX's loop,
    key for key): propose ``v = (1 + c x)^3`` with ``x`` normal until ``v > 0``,
    accept when ``u < 1 - 0.0331 x^4`` or ``log u < x^2/2 + d (1 - v + log v)``,
    with ``d = alpha - 1/3``, ``c = 1 / (3 sqrt(d))``; ``alpha < 1`` is boosted
    to ``alpha + 1`` and the sample scaled by ``u^(1/alpha)``.

    The products added to something are ``mul_add`` (one rounding) where XLA
    CPU contracts them into fmas (``1 - 0.0331 x^4``, ``x^2/2 + d (...)``,
    ``1 + x c``). Not modelled: XLA rewrites ``(1/3) / sqrt(d)`` into
    ``(1/3) * rsqrt(d)`` and computes ``rsqrt`` from the CPU's ``rsqrtss``
    estimate and two Newton steps, so ``c`` can differ by an ulp on ref, and
    with it some samples (docs/semantics.md, "Exactness")."""
    dtype = np.dtype(tracing.get_aval(alpha, "gamma", 1).dtype)

    def const(value: float) -> Any:
        return np.asarray(value, dtype)

    boost_mask = lax.ge(alpha, const(1))
    alpha_orig = alpha
    alpha = lax.select(boost_mask, alpha, lax.add(alpha, const(1)))
    d = lax.sub(alpha, const(1.0 / 3.0))
    c = lax.div(const(1.0 / 3.0), lax.sqrt(d))

    def reject(state):
        _, x2, v, u = state
        squeeze = lax.ge(u, lax.mul_add(const(-0.0331), lax.mul(x2, x2), const(1)))
        bound = lax.mul_add(x2, const(0.5), lax.mul(d, lax.add(lax.sub(const(1), v), lax.log(v))))
        return lax.bitwise_and(squeeze, lax.ge(lax.log(u), bound))

    def propose(state):
        keys = _split_data(state[0], (3,))
        key, x_key, u_key = keys[0], keys[1], keys[2]

        def next_x(kxv):
            pair = _split_data(kxv[0], (2,))
            x = _normal(pair[1], (), dtype)
            return pair[0], x, lax.mul_add(x, c, const(1))

        _, x, v = lax.while_loop(
            lambda kxv: lax.le(kxv[2], const(0)), next_x, (x_key, const(0), const(-1))
        )
        u = _uniform(u_key, (), dtype, 0.0, 1.0)
        return key, lax.mul(x, x), lax.mul(lax.mul(v, v), v), u

    pair = _split_data(data, (2,))
    key, subkey = pair[0], pair[1]
    _, _, v, _ = lax.while_loop(reject, propose, (key, const(0), const(1), const(2)))
    if log_space:
        u = _uniform(subkey, (), dtype, 0.0, 1.0)
        log_samples = lax.neg(lax.neg(lax.log1p(lax.neg(u))))
        scaled = lax.mul(log_samples, lax.div(const(1), alpha_orig))
        keep = lax.bitwise_or(boost_mask, lax.eq(log_samples, const(0)))
        log_boost = lax.select(keep, const(0), scaled)
        return lax.add(lax.add(lax.log(d), lax.log(v)), log_boost)
    samples = lax.sub(const(1), _uniform(subkey, (), dtype, 0.0, 1.0))
    boost = lax.select(boost_mask, const(1), lax.pow(samples, lax.div(const(1), alpha_orig)))
    return lax.mul(lax.mul(d, v), boost)


def _gamma(data: Any, a: Any, shape: tuple[int, ...], dtype: np.dtype, log_space: bool) -> Any:
    a = rnp.broadcast_to(_strong(a, dtype), shape)
    count = math.prod(shape)
    if count == 0:
        return rnp.zeros(shape, dtype)
    alphas = _reshape(a, (count,))
    if _keys._state.active != "threefry2x32":
        # the rbg keys are split in the loop's program (JAX splits them in
        # random_gamma_p's, so under vmap it splits the batch's keys at once)
        return _reshape(_gamma_samples()(data, alphas, log_space), shape)
    keys = _split_data(data, (count,))
    samples = _gamma_samples()(keys, alphas, log_space)
    return _reshape(samples, shape)


def _gamma_flat(keys: Any, alphas: Any, log_space: bool) -> Any:
    """One sample per alpha: from ``keys`` (one per alpha) for threefry; for
    the rbg implementations ``keys`` is the one key they are split from."""
    if _keys._state.active != "threefry2x32":
        # as JAX: a loop for the rbg keys, whose bits vmap would draw from the first key
        # only (rng_bit_generator's batching rule)
        return _gamma_loop(log_space)(keys, alphas)
    return vmap(lambda k, al: _gamma_one(k, al, log_space))(keys, alphas)


_gamma_loops: dict[bool, Any] = {}


def _batched_first(axis_size: int, in_batched: list, *args: Any) -> list:
    """``args`` each with the batch axis first (broadcast where unbatched)."""
    return [
        a if batched else rnp.broadcast_to(a, (axis_size, *np.shape(a)))
        for a, batched in zip(args, in_batched, strict=True)
    ]


def _gamma_loop(log_space: bool) -> Any:
    """The samples of the keys split from ``data`` and of ``alphas`` (one each
    per sample) by a loop over them, which ``vmap`` does not batch: as JAX's
    ``random_gamma_p``, whose batching rule runs its loop over the batch's
    samples too (after splitting the batch's keys under vmap), so under
    ``vmap`` each batch element draws what it would alone (batching the loop
    would batch its ``rng_bit_generator``, which draws every row from the
    first key). A nested vmap of unsafe_rbg keys still differs: JAX splits the
    flattened batch's keys under one vmap, refimpl under one per level."""
    if log_space not in _gamma_loops:

        @custom_vmap
        def samples(keys: Any, alphas: Any) -> Any:
            return lax.map(lambda ka: _gamma_one(ka[0], ka[1], log_space), (keys, alphas))

        @samples.def_vmap
        def _samples_rule(axis_size: int, in_batched: list, keys: Any, alphas: Any) -> tuple:
            # an enclosing vmap of the rule below: its batch joins the loop too
            keys, alphas = _batched_first(axis_size, in_batched, keys, alphas)
            count = np.shape(alphas)[1]
            flat = samples(
                _reshape(keys, (axis_size * count, np.shape(keys)[-1])),
                _reshape(alphas, (axis_size * count,)),
            )
            return _reshape(flat, (axis_size, count)), True

        @custom_vmap
        def loop(data: Any, alphas: Any) -> Any:
            return samples(_split_data(data, (np.shape(alphas)[0],)), alphas)

        @loop.def_vmap
        def _rule(axis_size: int, in_batched: list, data: Any, alphas: Any) -> tuple:
            data, alphas = _batched_first(axis_size, in_batched, data, alphas)
            count = np.shape(alphas)[1]
            # JAX's order: each batch key split under vmap, then one loop
            keys = vmap(lambda d: _split_data(d, (count,)))(data)
            flat = samples(
                _reshape(keys, (axis_size * count, np.shape(keys)[-1])),
                _reshape(alphas, (axis_size * count,)),
            )
            return _reshape(flat, (axis_size, count)), True

        _gamma_loops[log_space] = loop
    return _gamma_loops[log_space]


_gamma_with_jvp: list = []


def _gamma_samples() -> Any:
    """``_gamma_flat`` with JAX's derivative in ``alphas`` (implicit
    reparameterization): the tangent of a sample ``x`` is
    ``t * random_gamma_grad(alpha, x)``; in log space ``d log x = dx / x``,
    with ``x = exp(log x)`` raised to the smallest normal float where it
    underflows to 0 (as JAX). The keys get no tangent."""
    if not _gamma_with_jvp:
        samples_fn = custom_jvp(_gamma_flat, nondiff_argnums=(2,))

        @samples_fn.defjvp
        def _gamma_jvp(log_space, primals, tangents):
            keys, alphas = primals
            t = tangents[1]
            samples = samples_fn(keys, alphas, log_space)
            dtype = np.dtype(tracing.get_aval(alphas, "gamma", 1).dtype)
            if log_space:
                x = rnp.exp(samples)
                x = rnp.where(x == 0, np.asarray(np.finfo(dtype).tiny, dtype), x)
                slope = rnp.divide(lax.random_gamma_grad(alphas, x), x)
            else:
                slope = lax.random_gamma_grad(alphas, samples)
            return samples, rnp.multiply(t, slope)

        _gamma_with_jvp.append(samples_fn)
    return _gamma_with_jvp[0]


def gamma(key: Any, a: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Gamma(a, 1) samples (``_gamma_one`` per element, one split key each).
    Not differentiable (JAX's implicit-reparametrization derivative is not
    implemented)."""
    data, _ = _key_data_of("gamma", key)
    dtype = _float_dtype("gamma", dtype)
    return _run("gamma", _gamma_of, (_param_shape("gamma", shape, a), dtype, False), data, a)


def _gamma_of(data: Any, shape: tuple[int, ...], dtype: np.dtype, log_space: bool, a: Any):
    return _gamma(data, a, shape, dtype, log_space)


def loggamma(key: Any, a: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """``log`` of Gamma(a, 1) samples, computed in log space (accurate for small ``a``)."""
    data, _ = _key_data_of("loggamma", key)
    dtype = _float_dtype("loggamma", dtype)
    static = (_param_shape("loggamma", shape, a), dtype, True)
    return _run("loggamma", _gamma_of, static, data, a)


def beta(key: Any, a: Any, b: Any, shape: Sequence[int] | None = None, dtype: Any = None):
    """Beta(a, b) samples: ``G_a / (G_a + G_b)`` from two log-gamma samples."""
    data, _ = _key_data_of("beta", key)
    dtype = _float_dtype("beta", dtype)
    shape = _param_shape("beta", shape, a, b)
    return _run("beta", _beta, (shape, dtype), data, a, b)


def _beta(data: Any, shape: tuple[int, ...], dtype: np.dtype, a: Any, b: Any) -> Any:
    keys = _split_data(data, (2,))
    log_a = _gamma(keys[0], a, shape, dtype, True)
    log_b = _gamma(keys[1], b, shape, dtype, True)
    log_max = rnp.maximum(log_a, log_b)
    scaled_a = rnp.exp(rnp.subtract(log_a, log_max))
    scaled_b = rnp.exp(rnp.subtract(log_b, log_max))
    return rnp.divide(scaled_a, rnp.add(scaled_a, scaled_b))


def dirichlet(key: Any, alpha: Any, shape: Sequence[int] | None = None, dtype: Any = None):
    """Dirichlet(alpha) samples: ``softmax`` of log-gamma samples along the last axis."""
    data, _ = _key_data_of("dirichlet", key)
    dtype = _float_dtype("dirichlet", dtype)
    if np.ndim(alpha) < 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {np.ndim(alpha)}")
    batch = tuple(np.shape(alpha)[:-1])
    if shape is None:
        shape = batch
    else:
        shape = _as_shape("dirichlet", shape)
        _check_broadcast("dirichlet", shape, np.empty(batch))
    return _run("dirichlet", _dirichlet, (shape, dtype), data, alpha)


def _dirichlet(data: Any, shape: tuple[int, ...], dtype: np.dtype, alpha: Any) -> Any:
    log_gamma = _gamma(data, alpha, (*shape, np.shape(alpha)[-1]), dtype, True)
    return _softmax(log_gamma, -1, None)


__all__ = [
    "beta",
    "dirichlet",
    "gamma",
    "loggamma",
]
