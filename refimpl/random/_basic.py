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
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from refimpl import dtypes, lax, tracing, tree_util
from refimpl import numpy as rnp

__all__ = [
    "KeyDtype",
    "PRNGKeyArray",
    "PRNGKey",
    "bernoulli",
    "beta",
    "bits",
    "categorical",
    "cauchy",
    "choice",
    "clone",
    "dirichlet",
    "exponential",
    "fold_in",
    "gamma",
    "gumbel",
    "key",
    "key_data",
    "key_impl",
    "laplace",
    "loggamma",
    "logistic",
    "lognormal",
    "multivariate_normal",
    "normal",
    "orthogonal",
    "pareto",
    "permutation",
    "rademacher",
    "randint",
    "rayleigh",
    "split",
    "truncated_normal",
    "uniform",
    "weibull_min",
    "wrap_key_data",
]

_U32 = np.dtype(np.uint32)
_UINT_OF_BITS = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: _U32, 64: np.dtype(np.uint64)}


# --- typed keys ----------------------------------------------------------------------


class KeyDtype:
    """The dtype of typed threefry keys; prints as ``key<fry>``."""

    name = "key<fry>"
    impl = "threefry2x32"
    itemsize = 8

    def __repr__(self) -> str:
        return "key<fry>"

    __str__ = __repr__

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, KeyDtype) or other == "key<fry>"

    def __hash__(self) -> int:
        return hash("key<fry>")


KEY_DTYPE = KeyDtype()


class PRNGKeyArray:
    """An array of typed PRNG keys over ``uint32[*shape, 2]`` key data.

    It is a pytree node whose only leaf is the key data, so keys pass through
    ``jit``, ``scan`` and the other transformations as their uint32 data and
    come back as keys. (JAX makes typed keys leaves with an extended dtype;
    here ``tree_leaves(key)`` is ``[key_data(key)]``.)
    """

    __slots__ = ("_data",)

    def __init__(self, data: Any) -> None:
        self._data = data

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(np.shape(self._data))[:-1]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def dtype(self) -> KeyDtype:
        return KEY_DTYPE

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object (a key array of shape ())")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d key array")
        return (self[i] for i in range(self.shape[0]))

    def __getitem__(self, index: Any) -> PRNGKeyArray:
        index = index if isinstance(index, tuple) else (index,)
        # a trailing full slice keeps the key words whatever ``index`` selects
        return PRNGKeyArray(self._data[(*index, slice(None))])

    def reshape(self, *shape: Any) -> PRNGKeyArray:
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return PRNGKeyArray(rnp.reshape(self._data, (*shape, 2)))

    def ravel(self) -> PRNGKeyArray:
        return self.reshape(-1)

    def block_until_ready(self) -> PRNGKeyArray:
        if hasattr(self._data, "block_until_ready"):
            self._data.block_until_ready()
        return self

    def __eq__(self, other: Any) -> Any:
        if not isinstance(other, PRNGKeyArray):
            return NotImplemented
        return rnp.all(rnp.equal(self._data, other._data), axis=-1)

    def __ne__(self, other: Any) -> Any:
        if not isinstance(other, PRNGKeyArray):
            return NotImplemented
        return rnp.logical_not(self == other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        if isinstance(self._data, tracing.Tracer):
            return f"PRNGKeyArray(shape={self.shape}, dtype=key<fry>) over {self._data!r}"
        return f"Array({self.shape}, dtype=key<fry>) overlaying:\n{np.asarray(self._data)}"


tree_util.register_pytree_node(
    PRNGKeyArray, lambda k: ((k._data,), None), lambda _, children: PRNGKeyArray(children[0])
)


def _key_data_of(name: str, key: Any, allow_batched: bool = False) -> tuple[Any, bool]:
    """(uint32[..., 2] key data, whether ``key`` was typed), checking ``key``."""
    if isinstance(key, PRNGKeyArray):
        data, typed = key._data, True
    else:
        try:
            aval = tracing.get_aval(key, name, 0)
        except TypeError:
            raise TypeError(f"{name}: unexpected PRNG key type {type(key).__name__}") from None
        if aval.dtype != _U32 or not aval.shape or aval.shape[-1] != 2:
            raise TypeError(
                f"{name}: a raw PRNG key must be a uint32 array of shape (..., 2), "
                f"got {aval.str_short()}"
            )
        data, typed = key, False
    if not allow_batched and np.ndim(data) != 1:
        shape = tuple(np.shape(data))[:-1]
        raise ValueError(
            f"{name} accepts a single key, but was given a key array of shape {shape} != (). "
            "Use jax.vmap for batching."
        )
    return data, typed


def _wrap(data: Any, typed: bool) -> Any:
    return PRNGKeyArray(data) if typed else data


# --- one jitted program per call, as JAX's jit-decorated samplers ----------------------

# (name, body, backend) -> jit(body) on that backend, made on first use
_programs: dict[tuple[str, Any, str], Any] = {}


def _run(name: str, body: Any, static: tuple, data: Any, *params: Any) -> Any:
    """``body(data, *static, *params)`` as one jitted program named ``name``:
    ``data`` is the key data, ``static`` hashable Python values (shapes,
    dtypes, modes: part of the signature), ``params`` the other arguments
    (arrays; Python scalars become weakly typed arguments, as in JAX).

    Every public sampler runs this way, as every ``jax.random`` sampler is a
    ``jit``-decorated function: under an enclosing trace the call is one
    ``jit`` equation; eagerly it compiles (once per signature) and runs one
    program, on the backend of its device-array operands (a PJRT key: the
    pjrt backend, where XLA compiles the sampler as JAX's one program, not op
    by op; otherwise the reference interpreter). The public function checks
    its arguments first, so errors name it before anything is traced.
    """
    backend = "ref"
    if not tracing._stack.traces:
        from refimpl import backends

        for leaf in tree_util.tree_leaves((data, params)):
            owner = backends.backend_of_array(leaf)
            if owner is not None and owner.name != "ref":
                backend = owner.name
                break
    # a list or tuple argument is one array, not a pytree of scalars
    params = tuple(rnp.asarray(p) if isinstance(p, (list, tuple)) else p for p in params)
    jitted = _programs.get((name, body, backend))
    if jitted is None:
        from refimpl.transforms.jit import jit

        def program(operands: tuple, static: tuple) -> Any:
            return body(operands[0], *static, *operands[1:])

        program.__name__ = program.__qualname__ = name
        jitted = jit(program, static_argnums=1, backend=backend)
        _programs[(name, body, backend)] = jitted
    return jitted((data, *params), static)


def _words(data: Any) -> tuple[Any, Any]:
    """The two key words of a single key, as rank-0 uint32 values."""
    k1 = lax.reshape(lax.slice(data, (0,), (1,)), ())
    k2 = lax.reshape(lax.slice(data, (1,), (2,)), ())
    return k1, k2


# --- seeding, splitting, folding --------------------------------------------------------


def _seed_data(name: str, seed: Any) -> Any:
    if isinstance(seed, PRNGKeyArray):
        raise TypeError(f"{name}: seed must be an integer, got a key array")
    if isinstance(seed, (bool, np.bool_)):
        raise TypeError(f"{name}: seed must be an integer, got {seed!r}")
    if isinstance(seed, int):
        if dtypes.x64_enabled():
            seed = np.int64(np.uint64(seed % 2**64).view(np.int64))
        else:  # JAX wraps a Python int seed to int32 when x64 is disabled
            seed = np.int32(np.uint32(seed % 2**32).view(np.int32))
    aval = tracing.get_aval(seed, name, 0)
    if aval.shape:
        raise TypeError(f"{name}: PRNG key seed must be a scalar; got shape {aval.shape}")
    if not dtypes.is_integer(aval.dtype):
        raise TypeError(f"{name}: PRNG key seed must be an integer; got dtype {aval.dtype.name}")
    if aval.dtype.itemsize == 8:
        unsigned = lax.convert_element_type(seed, np.uint64)
        hi = lax.shift_right_logical(unsigned, np.uint64(32))
        k1 = lax.convert_element_type(hi, _U32)
        k2 = lax.convert_element_type(lax.bitwise_and(unsigned, np.uint64(0xFFFFFFFF)), _U32)
    else:
        k1 = np.uint32(0)
        k2 = lax.convert_element_type(seed, _U32)
    k1 = lax.broadcast_in_dim(k1, (1,), ())
    k2 = lax.broadcast_in_dim(k2, (1,), ())
    return lax.concatenate([k1, k2], 0)


def PRNGKey(seed: Any, *, impl: Any = None) -> Any:  # noqa: N802 (JAX's name)
    """A raw ``uint32[2]`` threefry key from an integer seed (``jax.random.PRNGKey``)."""
    _check_impl("PRNGKey", impl)
    return _seed_data("PRNGKey", seed)


def key(seed: Any, *, impl: Any = None) -> PRNGKeyArray:
    """A typed threefry key (dtype ``key<fry>``) from an integer seed (``jax.random.key``)."""
    _check_impl("key", impl)
    return PRNGKeyArray(_seed_data("key", seed))


def _check_impl(name: str, impl: Any) -> None:
    if impl not in (None, "threefry2x32", "threefry"):
        raise ValueError(f"{name}: only the threefry2x32 PRNG is implemented, got impl={impl!r}")


def _iota_2x32(shape: tuple[int, ...]) -> tuple[Any, Any]:
    """The row-major index of each element of ``shape`` as (high, low) uint32 words."""
    size = math.prod(shape)
    if size > 2**32:
        raise NotImplementedError(f"random arrays of more than 2**32 elements (shape {shape})")
    if not shape:
        return np.uint32(0), np.uint32(0)
    low = None
    stride = 1
    for dim in reversed(range(len(shape))):
        term = lax.broadcasted_iota(_U32, shape, dim)
        if stride != 1:
            term = lax.mul(term, np.uint32(stride % 2**32))
        low = term if low is None else lax.add(low, term)
        stride *= shape[dim]
    return rnp.zeros(shape, _U32), low


def _hash_counters(data: Any, shape: tuple[int, ...]) -> tuple[Any, Any]:
    k1, k2 = _words(data)
    hi, lo = _iota_2x32(shape)
    return lax.threefry2x32(k1, k2, hi, lo)


def _as_shape(name: str, shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        shape = tuple(shape)
    except TypeError:
        raise TypeError(f"{name}: shape must be a sequence of ints, got {shape!r}") from None
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 0:
            raise TypeError(f"{name}: shape must be non-negative ints, got {shape!r}")
    return tuple(int(d) for d in shape)


def split(key: Any, num: int | Sequence[int] = 2) -> Any:
    """``num`` new keys (a leading axis, or the shape ``num``) from one key."""
    data, typed = _key_data_of("split", key)
    shape = _as_shape("split", num)
    return _wrap(_run("split", _split_data, (shape,), data), typed)


def _split_data(data: Any, shape: tuple[int, ...]) -> Any:
    y1, y2 = _hash_counters(data, shape)
    return rnp.stack([y1, y2], axis=len(shape))


def fold_in(key: Any, data: Any) -> Any:
    """A new key from ``key`` and a 32-bit integer ``data``: ``H(k1, k2, 0, data)``."""
    kdata, typed = _key_data_of("fold_in", key)
    if np.ndim(data):
        raise TypeError(
            "fold_in accepts a scalar, but was given an array of "
            f"shape {np.shape(data)} != (). Use jax.vmap for batching."
        )
    if isinstance(data, int) and not isinstance(data, bool):
        data = np.uint32(data % 2**32)
    return _wrap(_run("fold_in", _fold_in, (), kdata, data), typed)


def _fold_in(kdata: Any, data: Any) -> Any:
    k1, k2 = _words(kdata)
    y1, y2 = lax.threefry2x32(k1, k2, np.uint32(0), lax.convert_element_type(data, _U32))
    return lax.concatenate([lax.broadcast_in_dim(y, (1,), ()) for y in (y1, y2)], 0)


def key_data(keys: Any) -> Any:
    """The uint32 key data under typed keys (raw keys are returned as they are)."""
    data, _ = _key_data_of("key_data", keys, allow_batched=True)
    return data


def wrap_key_data(key_bits_array: Any, *, impl: Any = None) -> PRNGKeyArray:
    """Typed keys over ``uint32[..., 2]`` key data."""
    _check_impl("wrap_key_data", impl)
    if isinstance(key_bits_array, PRNGKeyArray):
        raise TypeError("wrap_key_data: the argument is already a key array")
    data, _ = _key_data_of("wrap_key_data", key_bits_array, allow_batched=True)
    return PRNGKeyArray(data)


def key_impl(keys: Any) -> str:
    _key_data_of("key_impl", keys, allow_batched=True)
    return "threefry2x32"


def clone(key: Any) -> Any:
    """The same key (JAX's ``clone`` matters only for its key-reuse checker)."""
    return key


# --- bits ------------------------------------------------------------------------------


def _random_bits(data: Any, bit_width: int, shape: tuple[int, ...]) -> Any:
    y1, y2 = _hash_counters(data, shape)
    if bit_width == 64:
        u64 = _UINT_OF_BITS[64]
        hi = lax.convert_element_type(y1, u64)
        lo = lax.convert_element_type(y2, u64)
        return lax.bitwise_or(lax.shift_left(hi, np.uint64(32)), lo)
    mixed = lax.bitwise_xor(y1, y2)
    if bit_width == 32:
        return mixed
    return lax.convert_element_type(mixed, _UINT_OF_BITS[bit_width])


def bits(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Uniform random bits as unsigned integers (default uint32; uint64 with x64)."""
    data, _ = _key_data_of("bits", key)
    dtype = dtypes.canonicalize_dtype(np.uint64 if dtype is None else dtype)
    if not dtypes.is_unsigned_int(dtype):
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dtype}")
    return _run("bits", _random_bits, (dtype.itemsize * 8, _as_shape("bits", shape)), data)


# --- floats ---------------------------------------------------------------------------


def _float_dtype(name: str, dtype: Any) -> np.dtype:
    dtype = dtypes.canonicalize_dtype(float if dtype is None else dtype)
    if not dtypes.is_floating(dtype):
        raise ValueError(f"dtype argument to `{name}` must be a float dtype, got {dtype}")
    return dtype


def _strong(value: Any, dtype: np.dtype) -> Any:
    """``value`` converted to a strongly typed ``dtype`` (as lax.convert_element_type)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return np.asarray(value, dtype)
    return lax.convert_element_type(value, dtype)


def _check_broadcast(name: str, shape: tuple[int, ...], *others: Any) -> None:
    for other in others:
        other_shape = tuple(np.shape(other))
        try:
            joined = np.broadcast_shapes(shape, other_shape)
        except ValueError:
            joined = None
        if joined != shape:
            raise ValueError(
                f"{name} parameter shapes must be broadcast-compatible with shape argument, "
                f"and the result of broadcasting the shapes must equal the shape argument, "
                f"but got result {joined} for shape argument {shape}."
            )


def _uniform(data: Any, shape: tuple[int, ...], dtype: np.dtype, minval: Any, maxval: Any):
    finfo = dtypes.finfo(dtype)
    nbits, nmant = finfo.bits, finfo.nmant
    if nbits not in (8, 16, 32, 64):
        raise TypeError(f"uniform only accepts 8-, 16-, 32-, or 64-bit dtypes, got {dtype}")
    minval = _strong(minval, dtype)
    maxval = _strong(maxval, dtype)
    _check_broadcast("uniform", shape, minval, maxval)
    rng_bits = 8 if nmant < 8 else nbits
    uint = _UINT_OF_BITS[nbits]
    raw = _random_bits(data, rng_bits, shape)
    if rng_bits != nbits:
        raw = lax.convert_element_type(raw, uint)
    mantissa = lax.shift_right_logical(raw, np.asarray(rng_bits - nmant, uint))
    one_bits = np.array(1.0, dtype).view(uint)
    in_one_two = lax.bitcast_convert_type(lax.bitwise_or(mantissa, one_bits), dtype)
    floats = lax.sub(in_one_two, np.asarray(1.0, dtype))
    width = rnp.subtract(maxval, minval)
    if shape:
        width, low = rnp.broadcast_to(width, shape), rnp.broadcast_to(minval, shape)
    else:
        low = minval
    return rnp.maximum(minval, lax.mul_add(floats, width, low))


def uniform(
    key: Any, shape: Sequence[int] = (), dtype: Any = None, minval: Any = 0.0, maxval: Any = 1.0
) -> Any:
    """Uniform floats in ``[minval, maxval)`` (see the module docstring)."""
    data, _ = _key_data_of("uniform", key)
    dtype = _float_dtype("uniform", dtype)
    shape = _as_shape("uniform", shape)
    _check_broadcast("uniform", shape, minval, maxval)
    return _run("uniform", _uniform, (shape, dtype), data, minval, maxval)


def _normal(data: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype), dtype=dtype)
    u = _uniform(data, shape, dtype, lo, 1.0)
    return lax.mul(np.asarray(np.sqrt(2), dtype), lax.erf_inv(u))


def normal(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Standard normal samples: ``sqrt(2) * erf_inv(u)``, ``u`` uniform in ``(-1, 1)``.

    Complex dtypes: real and imaginary parts from the two halves of
    ``split(key)``, each scaled by ``1/sqrt(2)``.
    """
    data, _ = _key_data_of("normal", key)
    dtype = dtypes.canonicalize_dtype(float if dtype is None else dtype)
    shape = _as_shape("normal", shape)
    if not dtypes.is_floating(dtype) and not dtypes.is_complex(dtype):
        raise ValueError(
            f"dtype argument to `normal` must be a float or complex dtype, got {dtype}"
        )
    return _run("normal", _normal_or_complex, (shape, dtype), data)


def _normal_or_complex(data: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    if not dtypes.is_complex(dtype):
        return _normal(data, shape, dtype)
    real = np.dtype(np.float32 if dtype == np.complex64 else np.float64)
    keys = _split_data(data, (2,))
    re = rnp.astype(_normal(keys[0], shape, real), dtype)
    im = rnp.astype(_normal(keys[1], shape, real), dtype)
    return rnp.divide(rnp.add(re, rnp.multiply(1j, im)), np.asarray(np.sqrt(2), dtype))


def truncated_normal(
    key: Any, lower: Any, upper: Any, shape: Sequence[int] | None = None, dtype: Any = None
) -> Any:
    """Normal samples conditioned on ``lower < x < upper``: ``sqrt(2) erf_inv(u)``
    with ``u`` uniform between ``erf(lower/sqrt2)`` and ``erf(upper/sqrt2)``,
    clipped into the open interval."""
    data, _ = _key_data_of("truncated_normal", key)
    dtype = _float_dtype("truncated_normal", dtype)
    if shape is None:
        shape = tuple(np.broadcast_shapes(np.shape(lower), np.shape(upper)))
    else:
        shape = _as_shape("truncated_normal", shape)
        _check_broadcast("truncated_normal", shape, lower, upper)
    return _run("truncated_normal", _truncated_normal, (shape, dtype), data, lower, upper)


def _truncated_normal(
    data: Any, shape: tuple[int, ...], dtype: np.dtype, lower: Any, upper: Any
) -> Any:
    sqrt2 = np.asarray(np.sqrt(2), dtype)
    lower = _strong(lower, dtype)
    upper = _strong(upper, dtype)
    # XLA rewrites a division by a constant into a product with its rounded
    # reciprocal (JAX's lower / sqrt2 runs as this product): written so here,
    # the reference computes the same bits without modelling that rewrite
    inv_sqrt2 = np.asarray(np.asarray(1, dtype) / sqrt2, dtype)
    a = lax.erf(lax.mul(lower, inv_sqrt2))
    b = lax.erf(lax.mul(upper, inv_sqrt2))
    u = _uniform(data, shape, dtype, a, b)
    out = lax.mul(sqrt2, lax.erf_inv(u))
    low = lax.nextafter(lower, np.asarray(np.inf, dtype))
    high = lax.nextafter(upper, np.asarray(-np.inf, dtype))
    return rnp.clip(out, low, high)


def exponential(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Exponential(1) samples: ``-log1p(-u)``."""
    data, _ = _key_data_of("exponential", key)
    dtype = _float_dtype("exponential", dtype)
    return _run("exponential", _exponential, (_as_shape("exponential", shape), dtype), data)


def _exponential(data: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    u = _uniform(data, shape, dtype, 0.0, 1.0)
    return lax.neg(lax.log1p(lax.neg(u)))


def laplace(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Laplace(0, 1) samples: ``sign(u) * log1p(-|u|)``, ``u`` uniform in ``(-1, 1)``."""
    data, _ = _key_data_of("laplace", key)
    dtype = _float_dtype("laplace", dtype)
    return _run("laplace", _laplace, (_as_shape("laplace", shape), dtype), data)


def _laplace(data: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    lo = -1.0 + float(dtypes.finfo(dtype).epsneg)
    u = _uniform(data, shape, dtype, lo, 1.0)
    return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


def _uniform_from_tiny(data: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """JAX's ``uniform(key, shape, dtype, minval=tiny, maxval=1)`` inside a
    sampler, as XLA compiles it: ``max(tiny, f - 1)`` with ``f`` in ``[1, 2)``
    (:func:`_uniform`'s random mantissa under the exponent of 1.0).

    JAX's samplers pass these bounds as constants of their program, and XLA's
    algebraic simplifier rewrites ``(f - 1) * (1 - tiny) + tiny``: the width
    ``1 - tiny`` folds to 1 (it rounds to 1 in every float dtype), the product
    by 1 goes, and ``(f + -1) + tiny`` is reassociated into ``f + (-1 + tiny)``,
    whose constant also rounds to -1. For float32 and bfloat16 this is the
    value of the unsimplified formula (adding ``tiny = 2**-126`` to a nonzero
    multiple of ``2**-23`` or ``2**-7`` changes nothing); for float16 it is not
    (``tiny = 2**-14`` against multiples of ``2**-10``: 1 sample in 8 differs),
    and JAX's float16 ``gumbel``/``logistic`` are computed from this ``u``
    (checked bit for bit on 10,000 samples per key; the optimized HLO of
    ``jit(lambda k: gumbel(k, (2000,), float16))`` has no addition of tiny).
    """
    tiny = np.asarray(dtypes.finfo(dtype).tiny, dtype)
    one = _uniform(data, shape, dtype, 0.0, 1.0)  # f - 1: width 1, no offset
    return rnp.maximum(tiny, one)


def logistic(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Logistic samples: ``log(u) - log1p(-u)``, ``u`` uniform in ``[tiny, 1)``
    as JAX's compiled program draws it (:func:`_uniform_from_tiny`)."""
    data, _ = _key_data_of("logistic", key)
    dtype = _float_dtype("logistic", dtype)
    return _run("logistic", _logistic, (_as_shape("logistic", shape), dtype), data)


def _logistic(data: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    u = _uniform_from_tiny(data, shape, dtype)
    return lax.sub(lax.log(u), lax.log1p(lax.neg(u)))


def _gumbel_mode(mode: str | None) -> str:
    mode = "low" if mode is None else mode
    if mode not in ("low", "high"):
        raise ValueError(f"gumbel: mode must be 'low' or 'high', got {mode!r}")
    return mode


def _gumbel(data: Any, shape: tuple[int, ...], dtype: np.dtype, mode: str | None) -> Any:
    mode = _gumbel_mode(mode)
    info = dtypes.finfo(dtype)
    if mode == "high":
        both = _uniform(data, (2, *shape), dtype, 0.0, 1.0)
        high, low = both[0], both[1]
        fine = rnp.add(
            rnp.add(high, rnp.multiply(np.asarray(2.0**-info.nmant, dtype), low)),
            np.asarray(info.tiny, dtype),
        )
        x = rnp.where(rnp.greater_equal(high, np.asarray(0.5, dtype)), high, fine)
        return lax.neg(lax.log(lax.neg(lax.log1p(lax.neg(x)))))
    u = _uniform_from_tiny(data, shape, dtype)
    return lax.neg(lax.log(lax.neg(lax.log(u))))


def gumbel(key: Any, shape: Sequence[int] = (), dtype: Any = None, mode: str | None = None):
    """Standard Gumbel samples: ``-log(-log(u))``, ``u`` uniform in ``[tiny, 1)``
    as JAX's compiled program draws it (:func:`_uniform_from_tiny`); ``mode="high"``
    uses two uniforms per sample for a finer ``u`` near 0."""
    data, _ = _key_data_of("gumbel", key)
    dtype = _float_dtype("gumbel", dtype)
    static = (_as_shape("gumbel", shape), dtype, _gumbel_mode(mode))
    return _run("gumbel", _gumbel, static, data)


def bernoulli(key: Any, p: Any = 0.5, shape: Sequence[int] | None = None, mode: str = "low"):
    """Booleans ``uniform(key, shape) < p`` (``mode="high"``: ``u2 * 2**-nmant < p - u1``)."""
    data, _ = _key_data_of("bernoulli", key)
    if mode not in ("high", "low"):
        raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    p_dtype = tracing.get_aval(p, "bernoulli", 1).dtype
    if not dtypes.is_floating(p_dtype):
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {p_dtype}.")
    shape = tuple(np.shape(p)) if shape is None else _as_shape("bernoulli", shape)
    _check_broadcast("bernoulli", shape, p)
    return _run("bernoulli", _bernoulli, (shape, mode), data, p)


def _bernoulli(data: Any, shape: tuple[int, ...], mode: str, p: Any) -> Any:
    p_dtype = tracing.get_aval(p, "bernoulli", 1).dtype
    p = lax.convert_element_type(p, p_dtype)
    if mode == "high":
        both = _uniform(data, (2, *shape), p_dtype, 0.0, 1.0)
        u1 = both[0]
        u2 = rnp.multiply(both[1], np.asarray(2.0 ** -dtypes.finfo(p_dtype).nmant, p_dtype))
        return rnp.less(u2, rnp.subtract(p, u1))
    return rnp.less(_uniform(data, shape, p_dtype, 0.0, 1.0), p)


# --- integers ---------------------------------------------------------------------------


def _clip_convert(value: Any, dtype: np.dtype) -> Any:
    """An integer array converted to ``dtype``, clipped to its range (not wrapped)."""
    src = tracing.get_aval(value, "randint", 0).dtype
    lo = max(int(dtypes.iinfo(dtype).min), int(dtypes.iinfo(src).min))
    hi = min(int(dtypes.iinfo(dtype).max), int(dtypes.iinfo(src).max))
    clipped = rnp.clip(value, np.asarray(lo, src), np.asarray(hi, src))
    return rnp.astype(clipped, dtype)


def randint(key: Any, shape: Sequence[int], minval: Any, maxval: Any, dtype: Any = None) -> Any:
    """Integers in ``[minval, maxval)``: two words of random bits ``hi``, ``lo``
    (from the two keys of ``split(key)``) reduced as ``(hi * 2**nbits + lo) mod span``,
    computed without overflow; ``span`` is 1 when ``maxval <= minval`` (the
    result is then ``minval``). 8- and 16-bit dtypes are sampled as int32."""
    data, _ = _key_data_of("randint", key)
    dtype = dtypes.canonicalize_dtype(int if dtype is None else dtype)
    if not dtypes.is_integer(dtype):
        raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
    shape = _as_shape("randint", shape)
    _check_broadcast("randint", shape, minval, maxval)
    return _run("randint", _randint_of_dtype, (shape, dtype), data, minval, maxval)


def _randint_of_dtype(
    data: Any, shape: tuple[int, ...], dtype: np.dtype, minval: Any, maxval: Any
) -> Any:
    info = dtypes.iinfo(dtype)
    minval = rnp.asarray(minval)
    maxval = rnp.asarray(maxval)
    sampling = dtype
    if info.bits < 32:
        sampling = np.dtype(np.int32)
        minval = rnp.clip(rnp.astype(minval, np.int32), int(info.min), int(info.max))
        maxval = rnp.clip(rnp.astype(maxval, np.int32), int(info.min), int(info.max) + 1)
    out = _randint(data, shape, minval, maxval, sampling)
    return rnp.astype(out, dtype)


def _randint(data: Any, shape: tuple[int, ...], minval: Any, maxval: Any, dtype: np.dtype):
    _check_broadcast("randint", shape, minval, maxval)
    if not dtypes.is_integer(minval.dtype):
        minval = rnp.astype(minval, int)
    if not dtypes.is_integer(maxval.dtype):
        maxval = rnp.astype(maxval, int)
    top = _clip_convert(np.asarray(dtypes.iinfo(dtype).max, dtype), maxval.dtype)
    maxval_out_of_range = rnp.greater(maxval, top)
    minval = _clip_convert(minval, dtype)
    maxval = _clip_convert(maxval, dtype)
    nbits = dtypes.iinfo(dtype).bits
    keys = _split_data(data, (2,))
    higher = _random_bits(keys[0], nbits, shape)
    lower = _random_bits(keys[1], nbits, shape)
    unsigned = _UINT_OF_BITS[nbits]
    span = rnp.astype(rnp.subtract(maxval, minval), unsigned)
    span = rnp.where(rnp.less_equal(maxval, minval), np.asarray(1, unsigned), span)
    # one more when maxval is beyond the dtype; a full-range span wraps to 0,
    # and "mod 0" is the identity in XLA, which is what is wanted there
    widen = rnp.logical_and(maxval_out_of_range, rnp.greater(maxval, minval))
    span = rnp.where(widen, rnp.add(span, np.asarray(1, unsigned)), span)
    span = rnp.broadcast_to(span, shape) if np.shape(span) != shape else span
    # 2**nbits mod span, as ((2**(nbits/2) mod span)**2) mod span
    half = lax.rem(rnp.full_like(span, 2 ** (nbits // 2)), span)
    multiplier = lax.rem(lax.mul(half, half), span)
    offset = lax.add(lax.mul(lax.rem(higher, span), multiplier), lax.rem(lower, span))
    offset = lax.rem(offset, span)
    return rnp.add(minval, rnp.astype(offset, dtype))


# --- permutations and choices ----------------------------------------------------------


def _shuffle(data: Any, x: Any, axis: int) -> Any:
    """Sort by fresh random 32-bit keys, repeated ``ceil(3 ln n / ln(2**32 - 1))``
    times so that ties (which a stable sort resolves by position) are unlikely."""
    size = math.prod(np.shape(x))
    rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(2**32 - 1)))
    for _ in range(rounds):
        keys = _split_data(data, (2,))
        data, sub = keys[0], keys[1]
        sort_keys = _random_bits(sub, 32, tuple(np.shape(x)))
        _, x = lax.sort_key_val(sort_keys, x, axis)
    return x


def permutation(key: Any, x: Any, axis: int = 0, independent: bool = False) -> Any:
    """A random permutation of ``arange(x)`` (int ``x``) or of ``x`` along ``axis``."""
    data, _ = _key_data_of("permutation", key)
    if not np.ndim(x):
        if not dtypes.is_integer(tracing.get_aval(x, "permutation", 1).dtype):
            raise TypeError("x must be an integer or at least 1-dimensional")
        if isinstance(x, tracing.Tracer):
            raise TypeError(
                "permutation: argument x must be concrete (it is the length of the result)"
            )
        return _run("permutation", _permutation_of_range, (int(x),), data)
    ndim = np.ndim(x)
    if not -ndim <= axis < ndim:
        raise ValueError(f"permutation: axis {axis} is out of bounds for rank {ndim}")
    return _run("permutation", _permute, (axis % ndim, bool(independent)), data, x)


def _permutation_of_range(data: Any, n: int) -> Any:
    return _shuffle(data, rnp.arange(n), 0)


def _permute(data: Any, axis: int, independent: bool, x: Any) -> Any:
    x = rnp.asarray(x)
    if independent or x.ndim == 1:
        return _shuffle(data, x, axis)
    order = _shuffle(data, rnp.arange(np.shape(x)[axis]), 0)
    return rnp.take(x, order, axis=axis)


def _top_k_indices(values: Any, k: int) -> Any:
    """Indices of the ``k`` largest entries of a 1-D array, largest first, the
    lower index first among equals (``lax.top_k``'s order)."""
    n = np.shape(values)[0]
    order = lax.sort(
        (lax.neg(values), lax.iota(np.int32, n)), dimension=0, is_stable=True, num_keys=1
    )[1]
    return lax.slice(order, (0,), (k,))


def choice(
    key: Any,
    a: Any,
    shape: Sequence[int] = (),
    replace: bool = True,
    p: Any = None,
    axis: int = 0,
    mode: str | None = None,
) -> Any:
    """Random samples from ``a`` (or ``arange(a)``) along ``axis``.

    With replacement and no ``p``: ``randint`` indices. Without replacement
    and no ``p``: the first entries of a ``permutation``. With ``p`` and
    replacement: the first index whose cumulative probability reaches
    ``total * (1 - u)``. With ``p`` and without replacement: the top ``n``
    of ``gumbel + log(p)`` (the Gumbel top-k trick).
    """
    data, _ = _key_data_of("choice", key)
    if not isinstance(shape, Sequence):
        raise TypeError(f"shape argument of choice must be a sequence, got {shape}")
    shape = _as_shape("choice", shape)
    ndim = np.ndim(a)
    if ndim == 0:
        if isinstance(a, tracing.Tracer):
            raise TypeError("choice: an integer a must be concrete")
        n_inputs = int(a)
    else:
        if not -ndim <= axis < ndim:
            raise ValueError(f"choice: axis {axis} is out of bounds for rank {ndim}")
        axis %= ndim
        n_inputs = np.shape(a)[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return rnp.zeros(shape, dtype=rnp.asarray(a).dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(
            f"Cannot take a larger sample (size {n_draws}) than population "
            f"(size {n_inputs}) when 'replace=False'"
        )
    if p is not None:
        if np.shape(p) != (n_inputs,):
            raise ValueError(
                "p must be None or a 1D vector with the same size as a.shape[axis]. "
                f"p has shape {np.shape(p)} and a.shape[axis] is {n_inputs}."
            )
        if not replace:
            mode = _gumbel_mode(mode)
    static = (shape, bool(replace), axis if ndim else 0, mode, n_inputs)
    return _run("choice", _choice, static, data, None if ndim == 0 else a, p)


def _choice(
    data: Any,
    shape: tuple[int, ...],
    replace: bool,
    axis: int,
    mode: str | None,
    n_inputs: int,
    a: Any,
    p: Any,
) -> Any:
    """:func:`choice` of ``a`` (None: ``arange(n_inputs)``), arguments checked."""
    n_draws = math.prod(shape)
    int_dtype = dtypes.canonicalize_dtype(int)
    if p is None:
        if replace:
            ind = _randint_of_dtype(data, shape, int_dtype, 0, n_inputs)
            result = ind if a is None else rnp.take(a, ind, axis=axis)
        else:
            if a is None:
                permuted = _permutation_of_range(data, n_inputs)
            else:
                permuted = _permute(data, axis, False, a)
            result = permuted[(slice(None),) * axis + (slice(n_draws),)]
    else:
        p_arr = rnp.asarray(p)
        if not dtypes.is_inexact(p_arr.dtype):
            p_arr = rnp.astype(p_arr, dtypes.canonicalize_dtype(float))
        if replace:
            cumulative = rnp.cumsum(p_arr)
            total = cumulative[-1]
            u = _uniform(data, shape, p_arr.dtype, 0.0, 1.0)
            r = rnp.multiply(total, rnp.subtract(np.asarray(1, p_arr.dtype), u))
            # searchsorted(cumulative, r, side="left"): how many entries are < r
            below = rnp.less(cumulative, rnp.expand_dims(r, -1))
            ind = rnp.astype(rnp.sum(below, axis=-1), int_dtype)
        else:
            g = rnp.add(_gumbel(data, (n_inputs,), p_arr.dtype, mode), rnp.log(p_arr))
            ind = rnp.astype(_top_k_indices(g, n_draws), int_dtype)
        result = ind if a is None else rnp.take(a, ind, axis=axis)
    if a is None:
        return rnp.reshape(result, shape)
    a_shape = np.shape(a)
    return rnp.reshape(result, (*a_shape[:axis], *shape, *a_shape[axis + 1 :]))


def categorical(
    key: Any,
    logits: Any,
    axis: int = -1,
    shape: Sequence[int] | None = None,
    replace: bool = True,
    mode: str | None = None,
) -> Any:
    """Samples of the categorical distributions ``softmax(logits, axis)``: the
    argmax of ``logits + gumbel`` (with replacement) or the top ``k`` of one
    Gumbel perturbation (without)."""
    data, _ = _key_data_of("categorical", key)
    logits_shape = tuple(np.shape(logits))
    ndim = len(logits_shape)
    if not -ndim <= axis < ndim:
        raise ValueError(f"categorical: axis {axis} is out of bounds for rank {ndim}")
    batch_shape = tuple(np.delete(np.array(logits_shape, dtype=np.int64), axis).tolist())
    if shape is None:
        shape = batch_shape
    else:
        shape = _as_shape("categorical", shape)
        _check_broadcast("categorical", shape, np.empty(batch_shape))
    mode = _gumbel_mode(mode)
    if not replace:
        k = math.prod(shape[: len(shape) - len(batch_shape)])
        n = logits_shape[axis]
        if k > n:
            raise ValueError(
                f"Number of samples without replacement ({k}) cannot exceed number of "
                f"categories ({n})."
            )
    static = (axis % ndim, shape, batch_shape, bool(replace), mode)
    return _run("categorical", _categorical, static, data, logits)


def _categorical(
    data: Any,
    axis: int,
    shape: tuple[int, ...],
    batch_shape: tuple[int, ...],
    replace: bool,
    mode: str,
    logits: Any,
) -> Any:
    """:func:`categorical` along ``axis`` (non-negative), arguments checked."""
    logits = rnp.asarray(logits)
    ndim = logits.ndim
    prefix = shape[: len(shape) - len(batch_shape)]
    if replace:
        neg_axis = axis - ndim
        logits_shape = list(shape[len(shape) - len(batch_shape) :])
        logits_shape.insert(axis, logits.shape[axis])
        noise = _gumbel(data, (*prefix, *logits_shape), logits.dtype, mode)
        expanded = rnp.reshape(logits, (1,) * len(prefix) + logits.shape)
        return rnp.argmax(rnp.add(noise, expanded), axis=neg_axis)
    perturbed = rnp.add(logits, _gumbel(data, logits.shape, logits.dtype, mode))
    k = math.prod(prefix)
    n = logits.shape[axis]
    moved = rnp.moveaxis(perturbed, axis, -1)
    flat = rnp.reshape(moved, (-1, n))
    rows = [_top_k_indices(flat[i], k) for i in range(flat.shape[0])]
    indices = rnp.reshape(rnp.stack(rows), (*batch_shape, k))
    perm = (indices.ndim - 1, *range(indices.ndim - 1))
    return rnp.reshape(rnp.transpose(indices, perm), shape)


def orthogonal(
    key: Any, n: int, shape: Sequence[int] = (), dtype: Any = None, m: int | None = None
) -> Any:
    """Random ``n x m`` matrices with orthonormal columns (or rows, if ``n < m``):
    the ``Q`` of the QR factorization of a normal ``max(n,m) x min(n,m)``
    sample, its columns' signs set so that ``R`` has a positive diagonal
    (Haar-distributed). Equal to JAX's up to rounding: the factorization is
    unique, its floating-point evaluation is LAPACK's on both sides but not
    through the same code path."""
    data, _ = _key_data_of("orthogonal", key)
    dtype = _float_dtype("orthogonal", dtype)
    m = n if m is None else m
    for name, value in (("n", n), ("m", m)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise TypeError(f"orthogonal: {name} must be a non-negative int, got {value!r}")
    shape = _as_shape("orthogonal", shape)
    return _run("orthogonal", _orthogonal, (int(n), int(m), shape, dtype), data)


def _orthogonal(data: Any, n: int, m: int, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    from refimpl.numpy import linalg

    z = _normal(data, (*shape, max(n, m), min(n, m)), dtype)
    q, r = linalg.qr(z)
    d = linalg.diagonal(r)
    x = rnp.multiply(q, rnp.expand_dims(rnp.sign(d), -2))
    return rnp.swapaxes(x, -1, -2) if n < m else x


# --- more distributions (transformations of the samplers above, as in JAX) -----------


def _param_shape(name: str, shape: Any, *params: Any) -> tuple[int, ...]:
    if shape is None:
        return tuple(np.broadcast_shapes(*(np.shape(p) for p in params)))
    shape = _as_shape(name, shape)
    _check_broadcast(name, shape, *params)
    return shape


def rademacher(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """-1 or 1 with equal probability: ``2 * bernoulli(key, 0.5) - 1``."""
    data, _ = _key_data_of("rademacher", key)
    dtype = dtypes.canonicalize_dtype(int if dtype is None else dtype)
    return _run("rademacher", _rademacher, (_as_shape("rademacher", shape), dtype), data)


def _rademacher(data: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    coin = rnp.astype(rnp.less(_uniform(data, shape, np.dtype(np.float32), 0.0, 1.0), 0.5), dtype)
    return rnp.astype(rnp.subtract(rnp.multiply(2, coin), 1), dtype)


def cauchy(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Standard Cauchy samples: ``tan(pi * (u - 1/2))``, ``u`` uniform in ``[eps, 1)``."""
    data, _ = _key_data_of("cauchy", key)
    dtype = _float_dtype("cauchy", dtype)
    return _run("cauchy", _cauchy, (_as_shape("cauchy", shape), dtype), data)


def _cauchy(data: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    u = _uniform(data, shape, dtype, float(dtypes.finfo(dtype).eps), 1.0)
    return lax.tan(lax.mul(np.asarray(np.pi, dtype), lax.sub(u, np.asarray(0.5, dtype))))


def lognormal(
    key: Any, sigma: Any = 1.0, shape: Sequence[int] | None = None, dtype: Any = None
) -> Any:
    """``exp(sigma * normal)``."""
    data, _ = _key_data_of("lognormal", key)
    dtype = _float_dtype("lognormal", dtype)
    shape = _param_shape("lognormal", shape, sigma)
    return _run("lognormal", _lognormal, (shape, dtype), data, sigma)


def _lognormal(data: Any, shape: tuple[int, ...], dtype: np.dtype, sigma: Any) -> Any:
    return rnp.exp(rnp.multiply(_normal(data, shape, dtype), _strong(sigma, dtype)))


def pareto(key: Any, b: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Pareto(b) samples: ``exp(exponential / b)``."""
    data, _ = _key_data_of("pareto", key)
    dtype = _float_dtype("pareto", dtype)
    shape = _param_shape("pareto", shape, b)
    return _run("pareto", _pareto, (shape, dtype), data, b)


def _pareto(data: Any, shape: tuple[int, ...], dtype: np.dtype, b: Any) -> Any:
    u = _uniform(data, shape, dtype, 0.0, 1.0)
    e = lax.neg(lax.log1p(lax.neg(u)))
    return rnp.exp(rnp.divide(e, _strong(b, dtype)))


def rayleigh(key: Any, scale: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Rayleigh(scale) samples: ``scale * sqrt(-2 log u)``."""
    data, _ = _key_data_of("rayleigh", key)
    dtype = _float_dtype("rayleigh", dtype)
    shape = _param_shape("rayleigh", shape, scale)
    return _run("rayleigh", _rayleigh, (shape, dtype), data, scale)


def _rayleigh(data: Any, shape: tuple[int, ...], dtype: np.dtype, scale: Any) -> Any:
    u = _uniform(data, shape, dtype, 0.0, 1.0)
    scale = rnp.broadcast_to(_strong(scale, dtype), shape)
    return lax.mul(scale, lax.sqrt(lax.mul(lax.log(u), np.asarray(-2, dtype))))


def weibull_min(
    key: Any, scale: Any, concentration: Any, shape: Sequence[int] = (), dtype: Any = None
) -> Any:
    """Weibull samples by the inverse CDF: ``(-log1p(-u)) ** (1 / c) * scale``."""
    data, _ = _key_data_of("weibull_min", key)
    dtype = _float_dtype("weibull_min", dtype)
    static = (_as_shape("weibull_min", shape), dtype)
    return _run("weibull_min", _weibull_min, static, data, scale, concentration)


def _weibull_min(
    data: Any, shape: tuple[int, ...], dtype: np.dtype, scale: Any, concentration: Any
) -> Any:
    u = _uniform(data, shape, dtype, 0.0, 1.0)
    inverse = rnp.power(rnp.negative(rnp.log1p(rnp.negative(u))), rnp.divide(1.0, concentration))
    return rnp.multiply(inverse, scale)


def multivariate_normal(
    key: Any,
    mean: Any,
    cov: Any,
    shape: Sequence[int] | None = None,
    dtype: Any = None,
    method: str = "cholesky",
) -> Any:
    """``mean + factor @ normal``, ``factor`` the Cholesky factor of ``cov``
    (``method="eigh"``/``"svd"``: ``V sqrt(w)`` / ``U sqrt(s)``). Equal to JAX's
    up to the rounding of the factorization."""
    data, _ = _key_data_of("multivariate_normal", key)
    if method not in ("cholesky", "eigh", "svd"):
        raise ValueError(f"method must be one of {{'svd', 'eigh', 'cholesky'}}, got {method!r}")
    mean, cov = rnp.asarray(mean), rnp.asarray(cov)
    dtype = mean.dtype if dtype is None else _float_dtype("multivariate_normal", dtype)
    if mean.ndim < 1:
        raise ValueError(
            f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == {mean.ndim}"
        )
    if cov.ndim < 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == {cov.ndim}")
    n = mean.shape[-1]
    if cov.shape[-2:] != (n, n):
        raise ValueError(
            f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, "
            f"but got cov.shape == {cov.shape}."
        )
    if shape is None:
        shape = tuple(np.broadcast_shapes(mean.shape[:-1], cov.shape[:-2]))
    else:
        shape = _as_shape("multivariate_normal", shape)
        _check_broadcast("normal", shape, np.empty(mean.shape[:-1]), np.empty(cov.shape[:-2]))
    static = (shape, np.dtype(dtype), method)
    return _run("multivariate_normal", _multivariate_normal, static, data, mean, cov)


def _multivariate_normal(
    data: Any, shape: tuple[int, ...], dtype: np.dtype, method: str, mean: Any, cov: Any
) -> Any:
    from refimpl.numpy import linalg

    n = mean.shape[-1]
    if method == "svd":
        u, s, _ = linalg.svd(cov)
        factor = rnp.multiply(u, rnp.expand_dims(rnp.sqrt(s), -2))
    elif method == "eigh":
        w, v = linalg.eigh(cov)
        factor = rnp.multiply(v, rnp.expand_dims(rnp.sqrt(w), -2))
    else:
        factor = linalg.cholesky(cov)
    samples = _normal(data, (*shape, n), dtype)
    return rnp.add(mean, rnp.einsum("...ij,...j->...i", factor, samples))


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
    keys = _split_data(data, (count,))
    alphas = rnp.reshape(a, (count,))
    samples = _gamma_samples()(keys, alphas, log_space)
    return rnp.reshape(samples, shape)


def _gamma_flat(keys: Any, alphas: Any, log_space: bool) -> Any:
    from refimpl.transforms.batching import vmap

    return vmap(lambda k, al: _gamma_one(k, al, log_space))(keys, alphas)


_gamma_with_jvp: list = []


def _gamma_samples() -> Any:
    """``_gamma_flat`` with JAX's derivative in ``alphas`` (implicit
    reparameterization): the tangent of a sample ``x`` is
    ``t * random_gamma_grad(alpha, x)``; in log space ``d log x = dx / x``,
    with ``x = exp(log x)`` raised to the smallest normal float where it
    underflows to 0 (as JAX). The keys get no tangent."""
    if not _gamma_with_jvp:
        from refimpl.custom_derivatives import custom_jvp

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
    from refimpl import nn

    log_gamma = _gamma(data, alpha, (*shape, np.shape(alpha)[-1]), dtype, True)
    return nn.softmax(log_gamma, -1)


# --- the remaining samplers (refimpl/random_more.py) ------------------------------------

from refimpl.random_more import (  # noqa: E402 (it uses the helpers above)
    ball,
    binomial,
    chisquare,
    double_sided_maxwell,
    f,
    generalized_normal,
    geometric,
    key_dtype,
    maxwell,
    multinomial,
    poisson,
    t,
    triangular,
    wald,
)

__all__ += [  # noqa: PLE0605
    "ball",
    "binomial",
    "chisquare",
    "double_sided_maxwell",
    "f",
    "generalized_normal",
    "geometric",
    "key_dtype",
    "maxwell",
    "multinomial",
    "poisson",
    "t",
    "triangular",
    "wald",
]
