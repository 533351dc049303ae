"""``refimpl.random``: JAX's default PRNG (threefry2x32), bit for bit.

A key is two uint32 words ``(k1, k2)``. ``PRNGKey(seed)`` returns them as a
raw ``uint32[2]`` array; ``key(seed)`` wraps them in a :class:`PRNGKeyArray`
whose dtype prints as ``key<fry>`` (a key array of shape ``s`` holds
``uint32[*s, 2]`` key data). Every function takes either kind; ``split`` and
``fold_in`` return the kind they were given.

The derivations, as in JAX 0.10.2 with ``jax_threefry_partitionable=True``
(its default); ``H(k1, k2, x1, x2)`` is the Threefry-2x32 hash
(``refimpl.lax.threefry2x32``):

* seed: ``(k1, k2) = (seed >> 32, seed & 0xFFFFFFFF)`` of the seed as a
  64-bit integer; with x64 disabled a Python int seed is first wrapped to
  int32 (as JAX does), so ``k1 = 0`` and ``k2 = seed mod 2**32``;
* counters: element ``i`` (row-major) of an output of shape ``s`` is
  hashed with the counter pair ``(i >> 32, i & 0xFFFFFFFF)``;
* ``split(key, s)``: key ``i`` is ``H(k1, k2, i_hi, i_lo)`` (both words);
* ``fold_in(key, d)``: ``H(k1, k2, 0, uint32(d))``;
* ``bits(key, s, uint32)``: ``y1 ^ y2`` of ``H(k1, k2, i_hi, i_lo)``;
  uint64 is ``(y1 << 32) | y2``; uint8/uint16 truncate ``y1 ^ y2``;
* ``uniform``: random mantissa bits under the exponent of 1.0, giving
  ``f`` in ``[1, 2)``; then ``max(minval, (f - 1) * (maxval - minval) + minval)``;
* ``normal``: ``sqrt(2) * erf_inv(u)`` with ``u`` uniform in
  ``[nextafter(-1, 0), 1)``;
* the other samplers are the transformations documented on each function.

The ``rbg`` and ``unsafe_rbg`` implementations (``key(seed, impl="rbg")``,
dtype ``key<rbg>``/``key<urbg>``, ``uint32[*s, 4]`` key data) are JAX's too:
the seed's two threefry words twice; ``bits`` are
``lax.rng_bit_generator(key, s, uintN)`` (XLA's CPU Philox); rbg splits and
folds in each threefry half, unsafe_rbg splits into every tenth of
``10 * n`` key-sized draws and folds ``d`` in as the key xor the last of ten
draws from the rbg key seeded with ``d``. The samplers are the same
transformations of those bits (gamma loops over its keys, as JAX, since
``vmap`` of ``rng_bit_generator`` draws from the first key only).

``threefry4x32``, ``philox2x32`` and ``philox4x32`` (``key<fry4>``,
``key<phx2>``, ``key<phx4>``; 4, 1 and 2 key words) are JAX 0.10.2's
Random123 hashes of the counters, as its ``jax._src.random`` modules of
those names (``_keys._threefry4x32``, ``_philox2x32``, ``_philox4x32``).

Everything is written with ``refimpl.lax`` and ``refimpl.numpy``, so it runs
eagerly and under ``jit`` on both backends. As in JAX, every public function
that computes (``split``, ``fold_in``, ``bits`` and the samplers) is one
jitted program (:func:`_run`): an eager call on a PJRT key compiles and runs
one XLA program, an eager call on other arrays runs the reference interpreter
on it, and under a trace it is one ``jit`` equation. The integer parts are
exact on both backends; samplers that apply transcendental functions equal
JAX bit for bit on both (the reference's float32 ``log``, ``erf_inv``, ... are
XLA CPU's approximations, ``refimpl.primitives.xla_math``), except where
docs/semantics.md ("Exactness") lists a measured bound (``pow``).

The samplers live by family in this package's modules: ``_keys`` (typed
keys, seeding, splitting, the one-program-per-call runner), ``_basic``
(bits, uniform, normal, integers), ``_permutations``, ``_transformed``
(distributions that transform the basic samplers), ``_gamma`` (and what is
built on it), ``_discrete`` (poisson, binomial, multinomial, geometric) and
``_continuous`` (chisquare, t, f, wald, triangular, maxwell, generalized
normal, ball).
"""

import functools
import inspect
from typing import Any

from refimpl import sharding as _sharding
from refimpl.random import (
    _basic,
    _continuous,
    _discrete,
    _gamma,
    _impls,  # noqa: F401  (fills _keys' implementation objects)
    _keys,
    _permutations,
    _transformed,
)
from refimpl.random._basic import *  # noqa: F403
from refimpl.random._continuous import *  # noqa: F403
from refimpl.random._discrete import *  # noqa: F403
from refimpl.random._gamma import *  # noqa: F403
from refimpl.random._keys import *  # noqa: F403
from refimpl.random._permutations import *  # noqa: F403
from refimpl.random._transformed import *  # noqa: F403

__all__ = [
    *_keys.__all__,
    *_basic.__all__,
    *_permutations.__all__,
    *_transformed.__all__,
    *_gamma.__all__,
    *_discrete.__all__,
    *_continuous.__all__,
]


# JAX 0.10.2's samplers that take ``out_sharding=`` (keyword only): the
# result laid out as that sharding (a NamedSharding, or a PartitionSpec of the
# mesh set by ``set_mesh``). With ``jax_threefry_partitionable`` (the default)
# the values do not depend on the layout, so the sample is drawn as without
# the keyword and then resharded (refimpl.reshard), eagerly and under a trace.
_OUT_SHARDING = (
    "ball", "bernoulli", "beta", "bits", "categorical", "cauchy", "chisquare", "dirichlet",
    "exponential", "f", "gamma", "generalized_normal", "geometric", "gumbel", "laplace",
    "loggamma", "logistic", "lognormal", "maxwell", "multivariate_normal", "normal",
    "orthogonal", "pareto", "permutation", "poisson", "rademacher", "randint", "rayleigh",
    "t", "triangular", "truncated_normal", "uniform", "wald",
)  # fmt: skip


def _no_layout(out_sharding: Any) -> bool:
    """None, or the sharding of an unsharded array's type (``jax.typeof(x).sharding``,
    over the empty abstract mesh), which JAX's samplers take as no layout (optax's
    ``tree_random_like`` passes it) where ``reshard`` itself refuses it."""
    if out_sharding is None:
        return True
    mesh = getattr(out_sharding, "mesh", None)
    return isinstance(out_sharding, _sharding.NamedSharding) and bool(getattr(mesh, "empty", False))


def _accepts_out_sharding(sampler: Any) -> Any:
    @functools.wraps(sampler)
    def laid_out(*args: Any, out_sharding: Any = None, **kwargs: Any) -> Any:
        sample = sampler(*args, **kwargs)
        return sample if _no_layout(out_sharding) else _sharding.reshard(sample, out_sharding)

    signature = inspect.signature(sampler)
    keyword = inspect.Parameter("out_sharding", inspect.Parameter.KEYWORD_ONLY, default=None)
    laid_out.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*signature.parameters.values(), keyword]
    )
    return laid_out


for _name in _OUT_SHARDING:
    globals()[_name] = _accepts_out_sharding(globals()[_name])
