"""Keys and their programs: the typed key array (``PRNGKeyArray``,
``KeyDtype``, ``key_dtype``), one jitted program per call (``_run``), and
seeding, splitting and folding (``PRNGKey``, ``key``, ``split``,
``fold_in``, ``clone``, ``key_data``, ``wrap_key_data``, ``key_impl``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from refimpl import backends, dtypes, lax, tracing, tree_util
from refimpl import numpy as rnp
from refimpl.array import Array
from refimpl.transforms.jit import jit

_U32 = np.dtype(np.uint32)
_UINT_OF_BITS: dict[int, np.dtype[Any]] = {
    8: np.dtype(np.uint8),
    16: np.dtype(np.uint16),
    32: _U32,
    64: np.dtype(np.uint64),
}


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
        dims = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return PRNGKeyArray(rnp.reshape(self._data, (*dims, 2)))

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


def _register_as_array() -> None:
    """A typed key is a ``ri.Array`` (``isinstance(random.key(0), jax.Array)``
    holds in JAX); it stays a pytree node, so code walking leaves sees its data."""

    Array.register(PRNGKeyArray)


_register_as_array()


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
        for leaf in tree_util.tree_leaves((data, params)):
            owner = backends.backend_of_array(leaf)
            if owner is not None and owner.name != "ref":
                backend = owner.name
                break
    # a list or tuple argument is one array, not a pytree of scalars
    params = tuple(rnp.asarray(p) if isinstance(p, (list, tuple)) else p for p in params)
    jitted = _programs.get((name, body, backend))
    if jitted is None:

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
        if not -(2**63) <= seed < 2**63:  # as JAX: a Python int seed must fit int64
            raise OverflowError("Python int too large to convert to C long")
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
        return _iota_2x32_wide(shape)
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


def _mul_u32(a: Any, c: int) -> tuple[Any, Any]:
    """The 64-bit product of uint32 ``a`` and the constant ``c < 2**32`` as
    (high, low) uint32 words, from 16-bit halves."""
    a0 = lax.bitwise_and(a, np.uint32(0xFFFF))
    a1 = lax.shift_right_logical(a, np.uint32(16))
    c0, c1 = np.uint32(c & 0xFFFF), np.uint32(c >> 16)
    p00, p01, p10, p11 = lax.mul(a0, c0), lax.mul(a0, c1), lax.mul(a1, c0), lax.mul(a1, c1)
    mid = lax.add(p01, p10)
    mid_carry = lax.convert_element_type(lax.lt(mid, p01), _U32)
    low = lax.add(p00, lax.shift_left(mid, np.uint32(16)))
    low_carry = lax.convert_element_type(lax.lt(low, p00), _U32)
    high = lax.add(p11, lax.shift_right_logical(mid, np.uint32(16)))
    high = lax.add(high, lax.add(lax.shift_left(mid_carry, np.uint32(16)), low_carry))
    return high, low


def _iota_2x32_wide(shape: tuple[int, ...]) -> tuple[Any, Any]:
    """``_iota_2x32`` for more than ``2**32`` elements: the row-major index
    summed in 64-bit (high, low) uint32 pairs (JAX's ``iota_2x32_shape``)."""
    high = low = None
    stride = 1
    for dim in reversed(range(len(shape))):
        term = lax.broadcasted_iota(_U32, shape, dim)
        term_high, term_low = _mul_u32(term, stride % 2**32)
        if stride >= 2**32:
            term_high = lax.add(term_high, lax.mul(term, np.uint32((stride >> 32) % 2**32)))
        if low is None:
            high, low = term_high, term_low
        else:
            new_low = lax.add(low, term_low)
            carry = lax.convert_element_type(lax.lt(new_low, low), _U32)
            high, low = lax.add(lax.add(high, term_high), carry), new_low
        stride *= shape[dim]
    return high, low


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


# --- key_dtype -------------------------------------------------------------------------


def key_dtype(impl_spec: Any = None) -> KeyDtype:
    """The dtype of typed keys of a PRNG implementation (only threefry2x32)."""
    _check_impl("key_dtype", impl_spec)
    return KEY_DTYPE


__all__ = [
    "KeyDtype",
    "PRNGKeyArray",
    "PRNGKey",
    "clone",
    "fold_in",
    "key",
    "key_data",
    "key_impl",
    "split",
    "wrap_key_data",
    "key_dtype",
]
