"""Keys and their programs: the typed key array (``PRNGKeyArray``,
``KeyDtype``, ``key_dtype``), one jitted program per call (``_run``), and
seeding, splitting and folding (``PRNGKey``, ``key``, ``split``,
``fold_in``, ``clone``, ``key_data``, ``wrap_key_data``, ``key_impl``).
"""

from __future__ import annotations

import functools
import inspect
import math
import operator
import threading
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from refimpl import backends, dtypes, extended_arrays, lax, pytree, tracing
from refimpl import numpy as rnp
from refimpl.array import Array
from refimpl.config import config
from refimpl.core import not_a_shape
from refimpl.numpy._shape import reshape as _reshape  # arrays, also of NumPy data
from refimpl.transforms.jit import jit

_U32 = np.dtype(np.uint32)
_UINT_OF_BITS: dict[int, np.dtype[Any]] = {
    8: np.dtype(np.uint8),
    16: np.dtype(np.uint16),
    32: _U32,
    64: np.dtype(np.uint64),
}


# --- typed keys ----------------------------------------------------------------------


# The PRNG implementations: name -> (dtype tag, key words). threefry2x32 is
# JAX's default; rbg and unsafe_rbg draw their bits with lax.rng_bit_generator
# (XLA's CPU Philox) and split/fold in as JAX 0.10.2's jax._src.random.rbg.
_IMPLS: dict[str, tuple[str, int]] = {
    "threefry2x32": ("fry", 2),
    "rbg": ("rbg", 4),
    "unsafe_rbg": ("urbg", 4),
    # Random123's counter-based hashes, as JAX 0.10.2's jax._src.random
    # threefry4x32 / philox2x32 / philox4x32 modules (_COUNTER_HASHES below)
    "threefry4x32": ("fry4", 4),
    "philox2x32": ("phx2", 1),
    "philox4x32": ("phx4", 2),
}
_IMPL_ALIASES = {"threefry": "threefry2x32"}


class KeyDtype(dtypes.ExtendedDtype):
    """The dtype of typed keys of one PRNG implementation; prints as
    ``key<fry>`` (threefry2x32), ``key<rbg>`` or ``key<urbg>`` (unsafe_rbg)."""

    type = dtypes.prng_key

    def __init__(self, impl: str = "threefry2x32") -> None:
        self.impl = impl
        tag, self.width = _IMPLS[impl]
        self.name = f"key<{tag}>"
        self.itemsize = 4 * self.width

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, KeyDtype):
            return other.impl == self.impl
        return other == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def physical(self, shape: tuple[int, ...]) -> tuple[tuple[int, ...], np.dtype]:
        return (*shape, self.width), _U32

    def wrap(self, data: Any) -> PRNGKeyArray:
        return _KEY_CLASSES[self.impl](data)


KEY_DTYPE = KeyDtype()
_KEY_DTYPES = {impl: KEY_DTYPE if impl == "threefry2x32" else KeyDtype(impl) for impl in _IMPLS}


class PRNGKeyArray:
    """An array of typed PRNG keys over ``uint32[*shape, 2]`` key data.

    To the user it is a pytree leaf, as JAX's keys (``tree_util.tree_leaves(key)``
    is ``[key]``); to the transformations (``refimpl.pytree``) it is a node
    whose only leaf is the key data, so keys pass through ``jit``, ``scan``
    and the others as their uint32 data and come back as keys.
    """

    __slots__ = ("_data",)
    _impl_name = "threefry2x32"
    _width = 2

    def __init__(self, data: Any) -> None:
        self._data = data

    @property
    def _impl(self) -> PRNGImpl:
        """The implementation object (JAX's ``key._impl``): for refimpl's
        own, ``extend.random``'s ``threefry_prng_impl``, ... (what JAX's
        tests compare a key's implementation with); for a user's, the
        ``define_prng_impl`` object. ``key_impl`` gives its name instead,
        as JAX's public function does."""
        return _BUILTIN_IMPLS.get(self._impl_name) or _USER_IMPLS[self._impl_name]

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
        return _KEY_DTYPES[self._impl_name]

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object (a key array of shape ())")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d key array")
        return (self[i] for i in range(self.shape[0]))

    def __getitem__(self, index: Any) -> PRNGKeyArray:
        return type(self)(self._data[_data_index(index, self.ndim)])

    def astype(self, dtype: Any) -> PRNGKeyArray:
        """As JAX 0.10.2: a traced key array converts only to its own key dtype
        (``jnp.astype``'s rule); a concrete one has no ``astype`` at all (JAX's
        eager key array leaves the method abstract: ``NotImplementedError``)."""
        if not isinstance(self._data, tracing.Tracer):
            raise NotImplementedError("Cannot call abstract method astype")
        return rnp.astype(self, dtype)

    def __getattr__(self, name: str) -> Any:
        # (only for names the class lacks) jax.Array's numeric methods and
        # properties, which JAX 0.10.2's concrete key array leaves abstract
        if name not in _ABSTRACT_ARRAY_MEMBERS:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        if not isinstance(self._data, tracing.Tracer):
            raise NotImplementedError(f"Cannot call abstract method {name}")
        if name in _ABSTRACT_ARRAY_PROPERTIES:
            raise _refuse(name)
        return functools.partial(_refused_method, name)

    def reshape(self, *shape: Any) -> PRNGKeyArray:
        dims = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return type(self)(_reshape(self._data, (*dims, self._width)))

    def ravel(self) -> PRNGKeyArray:
        return self.reshape(-1)

    def squeeze(self, axis: Any = None) -> PRNGKeyArray:
        return rnp.squeeze(self, axis)

    def swapaxes(self, axis1: int, axis2: int) -> PRNGKeyArray:
        return rnp.swapaxes(self, axis1, axis2)

    flatten = ravel

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    def transpose(self, *axes: Any) -> PRNGKeyArray:
        """The keys' axes permuted (the key words stay last)."""
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        ndim = self.ndim
        perm = tuple(range(ndim))[::-1] if not axes or axes == (None,) else axes
        if sorted(int(a) % max(ndim, 1) for a in perm) != list(range(ndim)):
            raise ValueError(f"transpose: axes {perm} are not a permutation of {ndim} key axes")
        return type(self)(rnp.transpose(self._data, (*(int(a) % ndim for a in perm), ndim)))

    @property
    def T(self) -> PRNGKeyArray:  # noqa: N802 (the array attribute's name)
        return self.transpose()

    def copy(self) -> PRNGKeyArray:
        return type(self)(rnp.array(self._data, copy=True))

    def __copy__(self) -> PRNGKeyArray:
        return self.copy()

    def __deepcopy__(self, memo: Any) -> PRNGKeyArray:
        return self.copy()

    @property
    def at(self) -> _KeyIndexUpdateHelper:
        """``keys.at[index].get()`` / ``.set(keys2)``, on the key data."""
        return _KeyIndexUpdateHelper(self)

    # the device-array surface, answered by the key data
    @property
    def _base_array(self) -> Any:
        """The key data array the key holds (JAX's ``key._base_array``): not a
        copy, so deleting the key deletes it (what ``key_data`` gives is the
        same data as a value)."""
        return self._data

    def is_deleted(self) -> bool:
        return bool(self._data.is_deleted()) if hasattr(self._data, "is_deleted") else False

    def delete(self) -> None:
        self._data.delete()

    def copy_to_host_async(self) -> None:
        if hasattr(self._data, "copy_to_host_async"):
            self._data.copy_to_host_async()

    def devices(self) -> Any:
        return self._data.devices()

    def unsafe_buffer_pointer(self) -> int:
        """The key data's buffer address (JAX's key array answers with its base array's)."""
        return self._data.unsafe_buffer_pointer()

    @property
    def device(self) -> Any:
        return self._data.device

    @property
    def sharding(self) -> Any:
        return self._data.sharding

    @property
    def addressable_shards(self) -> list[Any]:
        """The key data's shards, each as a key array; the index is the
        shard's place in the key data (with its trailing key axis), as JAX's."""
        return [
            type(s)(type(self)(s.data), s.device, s.index, s.replica_id)
            for s in self._data.addressable_shards
        ]

    @property
    def global_shards(self) -> list[Any]:
        """The shards over every process's devices: the addressable ones (one process)."""
        return self.addressable_shards

    def addressable_data(self, index: int) -> PRNGKeyArray:
        """Shard ``index``'s keys, as JAX's ``addressable_data``."""
        return self.addressable_shards[index].data

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    def on_device_size_in_bytes(self) -> int:
        """The key data's bytes on its devices (JAX's key arrays answer the same)."""
        found = getattr(self._data, "on_device_size_in_bytes", None)
        return int(found()) if found is not None else self.nbytes

    @property
    def is_fully_addressable(self) -> bool:
        return self._data.is_fully_addressable

    @property
    def is_fully_replicated(self) -> bool:
        return self._data.is_fully_replicated

    def block_until_ready(self) -> PRNGKeyArray:
        if hasattr(self._data, "block_until_ready"):
            self._data.block_until_ready()
        return self

    def __eq__(self, other: Any) -> Any:
        if not isinstance(other, PRNGKeyArray):
            _refuse_comparison("equal", self, other)
            return NotImplemented
        if other._impl_name != self._impl_name:
            raise TypeError(f"cannot compare keys of dtypes {self.dtype} and {other.dtype}")
        mine, theirs = self._data, other._data
        # JAX compares keys by their key shapes, where a scalar key is a scalar
        # to jax_numpy_rank_promotion; its key data is not (shape (width,)),
        # so it takes the other's data shape first
        if not self.shape and other.shape:
            mine = rnp.broadcast_to(mine, rnp.shape(theirs))
        elif not other.shape and self.shape:
            theirs = rnp.broadcast_to(theirs, rnp.shape(mine))
        return rnp.all(rnp.equal(mine, theirs), axis=-1)

    def __ne__(self, other: Any) -> Any:
        if not isinstance(other, PRNGKeyArray):
            _refuse_comparison("not_equal", self, other)
            return NotImplemented
        return rnp.logical_not(self == other)

    __hash__ = None  # type: ignore[assignment]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TypeError(
            "a typed PRNG key array cannot be converted to a NumPy array; use "
            "random.key_data(keys) for its key data"
        )

    def __repr__(self) -> str:
        if isinstance(self._data, tracing.Tracer):
            return f"PRNGKeyArray(shape={self.shape}, dtype={self.dtype}) over {self._data!r}"
        return f"Array({self.shape}, dtype={self.dtype}) overlaying:\n{np.asarray(self._data)}"


def _refuse_comparison(name: str, keys: PRNGKeyArray, other: Any) -> None:
    """JAX's TypeError for comparing keys with a number or a numeric array
    (other objects compare unequal, by Python's default)."""
    if isinstance(other, (int, float, complex, np.ndarray, np.generic)) or hasattr(other, "dtype"):
        raise TypeError(f"{name} does not accept dtypes {keys.dtype}, {rnp.result_type(other)}.")


def _data_index(index: Any, ndim: int) -> tuple:
    """``index`` into keys of rank ``ndim`` as an index into their data (a
    trailing full slice keeps the key words). Too many indices are counted
    against the keys' rank, not the data's (which has one axis more)."""
    index = index if isinstance(index, tuple) else (index,)
    consumed = sum(_indexed_axes(item) for item in index)
    if consumed > ndim:
        raise IndexError(
            f"getitem: Too many indices: array is {ndim}-dimensional, but {consumed} were indexed"
        )
    return (*index, slice(None))


def _indexed_axes(item: Any) -> int:
    """How many key axes one index item consumes: none for ``None``, ``...``
    and a Python bool; a boolean mask its rank; anything else one."""
    if item is None or item is Ellipsis or isinstance(item, bool):
        return 0
    if getattr(item, "dtype", None) == np.bool_:
        return np.ndim(item)
    return 1


class _KeyIndexUpdateHelper:
    __slots__ = ("_keys",)

    def __init__(self, keys: PRNGKeyArray) -> None:
        self._keys = keys

    def __getitem__(self, index: Any) -> _KeyIndexUpdateRef:
        return _KeyIndexUpdateRef(self._keys, index)


class _KeyIndexUpdateRef:
    __slots__ = ("_index", "_keys")

    def __init__(self, keys: PRNGKeyArray, index: Any) -> None:
        self._keys, self._index = keys, index

    def get(self, **kwargs: Any) -> PRNGKeyArray:
        return type(self._keys)(
            self._keys._data.at[_data_index(self._index, self._keys.ndim)].get(**kwargs)
        )

    def set(self, values: Any, **kwargs: Any) -> PRNGKeyArray:
        if not isinstance(values, PRNGKeyArray):
            raise TypeError(
                "at[...].set: a key array can only be updated with keys, got "
                f"{type(values).__name__}"
            )
        data = self._keys._data.at[_data_index(self._index, self._keys.ndim)].set(
            values._data, **kwargs
        )
        return type(self._keys)(data)


class _RbgKeyArray(PRNGKeyArray):
    """Typed ``rbg`` keys (``uint32[..., 4]`` key data)."""

    __slots__ = ()
    _impl_name = "rbg"
    _width = 4


class _UnsafeRbgKeyArray(PRNGKeyArray):
    """Typed ``unsafe_rbg`` keys (``uint32[..., 4]`` key data)."""

    __slots__ = ()
    _impl_name = "unsafe_rbg"
    _width = 4


def _key_class(impl: str) -> type[PRNGKeyArray]:
    """The typed key class of one more implementation (its name and width)."""
    attrs = {"__slots__": (), "_impl_name": impl, "_width": _IMPLS[impl][1]}
    attrs["__doc__"] = f"Typed ``{impl}`` keys (``uint32[..., {_IMPLS[impl][1]}]`` key data)."
    return type(f"_{impl.capitalize()}KeyArray", (PRNGKeyArray,), attrs)


_KEY_CLASSES: dict[str, type[PRNGKeyArray]] = {
    "threefry2x32": PRNGKeyArray,
    "rbg": _RbgKeyArray,
    "unsafe_rbg": _UnsafeRbgKeyArray,
    **{impl: _key_class(impl) for impl in ("threefry4x32", "philox2x32", "philox4x32")},
}


def _register_key_class(cls: type[PRNGKeyArray]) -> None:
    def unflatten(_: Any, children: Any) -> PRNGKeyArray:
        return cls(children[0])

    pytree.register_pytree_node(cls, lambda k: ((k._data,), None), unflatten)
    # a leaf to the user, as JAX's keys (refimpl/pytree.py's docstring)
    pytree.register_extended_leaf(cls)


for _cls in _KEY_CLASSES.values():
    _register_key_class(_cls)


def _register_as_array() -> None:
    """A typed key is a ``ri.Array`` (``isinstance(random.key(0), jax.Array)``
    holds in JAX); it stays a pytree node, so code walking leaves sees its data."""

    Array.register(PRNGKeyArray)


_register_as_array()


def _key_data_of(
    name: str,
    key: Any,
    allow_batched: bool = False,
    legacy_check: bool = True,
    width: int | None = None,
) -> tuple[Any, bool]:
    """(uint32[..., 2] key data, whether ``key`` was typed), checking ``key``."""
    if isinstance(key, PRNGKeyArray):
        data, typed = key._data, True
        _state.parsed = key._impl_name
    else:
        _state.parsed = config.default_prng_impl  # a raw key: the default implementation
        if width is None:
            width = _IMPLS[_state.parsed][1]
        try:
            aval = tracing.get_aval(key, name, 0)
        except TypeError:
            raise TypeError(f"{name}: unexpected PRNG key type {type(key).__name__}") from None
        if aval.dtype != _U32:  # JAX's words (its tests match them)
            raise TypeError(
                f"{name}: JAX encountered invalid PRNG key data: expected key_data.dtype = "
                f"uint32; got dtype={aval.dtype.name} (a raw PRNG key is a uint32 array of "
                f"shape (..., {width}))"
            )
        if not aval.shape or aval.shape[-1] != width:
            raise TypeError(
                f"{name}: JAX encountered invalid PRNG key data: expected key_data.shape to "
                f"end with ({width},); got shape={aval.shape} (a raw PRNG key is a uint32 "
                f"array of shape (..., {width}))"
            )
        data, typed = key, False
        if legacy_check:
            _check_legacy_key(name)
    if not allow_batched and np.ndim(data) != 1:
        shape = tuple(np.shape(data))[:-1]
        raise ValueError(
            f"{name} accepts a single key, but was given a key array of shape {shape} != (). "
            "Use jax.vmap for batching."
        )
    return data, typed


_LEGACY_KEY_MESSAGE = (
    "Legacy uint32 key array passed as key to jax.random function. Please create keys "
    "using jax.random.key(). If use of a raw key array was intended, set "
    'jax_legacy_prng_key="allow".'
)


def _check_legacy_key(name: str) -> None:
    """A valid raw key under ``config.legacy_prng_key``: JAX's warning or error
    (after the validity check, as JAX: invalid key data is a TypeError first)."""
    mode = config.legacy_prng_key
    if mode == "error":
        raise ValueError(f"{name}: {_LEGACY_KEY_MESSAGE}")
    if mode == "warn":
        warnings.warn(_LEGACY_KEY_MESSAGE, UserWarning, stacklevel=4)


def _wrap(data: Any, typed: bool, impl: str = "threefry2x32") -> Any:
    return _KEY_CLASSES[impl](data) if typed else data


class _ImplState(threading.local):
    """The PRNG implementation of the key a public function parsed last
    (``parsed``, read by ``_run``) and of the sampler program being traced
    (``active``, read by the bit, split and fold-in helpers)."""

    def __init__(self) -> None:
        self.parsed = "threefry2x32"
        self.active = "threefry2x32"


_state = _ImplState()


def _impl_of(key: Any) -> str:
    return key._impl_name if isinstance(key, PRNGKeyArray) else config.default_prng_impl


# --- key arrays in the structural functions of numpy and lax ---------------------------

# A key array is an array whose elements are keys: the structural functions of
# refimpl.numpy and refimpl.lax apply to it (refimpl/extended_arrays.py), each by
# its physical rule on the key data, whose trailing axis holds the two key words.


def _is_keys(value: Any) -> bool:
    return isinstance(value, PRNGKeyArray)


# jax.Array members that JAX 0.10.2's concrete key array leaves abstract (a
# NotImplementedError "Cannot call abstract method sum"); on a traced key they
# are jax.numpy's functions, which refuse keys (mostly a TypeError; JAX's
# ValueError for some 0-d shape checks, and view/conj/clip return the key)
_ABSTRACT_ARRAY_PROPERTIES = frozenset({"real", "imag", "mT", "flat"})
_ABSTRACT_ARRAY_MEMBERS = _ABSTRACT_ARRAY_PROPERTIES | frozenset({
    "all", "any", "argmax", "argmin", "argpartition", "argsort", "byteswap", "choose",
    "clip", "compress", "conj", "conjugate", "cumprod", "cumsum", "diagonal", "dot", "item",
    "max", "mean", "min", "nonzero", "prod", "ptp", "repeat", "round", "searchsorted", "sort",
    "std", "sum", "to_device", "trace", "var", "view",
})  # fmt: skip


def _refused_method(name: str, *args: Any, **kwargs: Any) -> Any:
    raise _refuse(name)


def _refuse(name: str) -> TypeError:
    return TypeError(
        f"{name} does not accept dtype key<fry>: typed PRNG keys take only the structural "
        "array operations (reshape, slicing, indexing, concatenation, broadcasting, select)"
    )


def _keys_arg(name: str, value: Any) -> PRNGKeyArray:
    if not isinstance(value, PRNGKeyArray):
        raise TypeError(
            f"{name}: key arrays combine only with key arrays, got {type(value).__name__}"
        )
    return value


def _axis(name: str, axis: Any, ndim: int) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < max(ndim, 1):
        raise ValueError(f"{name}: axis {axis} is out of bounds for a key array of rank {ndim}")
    return axis % ndim if ndim else 0


def _axes(name: str, axes: Any, ndim: int) -> tuple[int, ...]:
    axes = (axes,) if isinstance(axes, (int, np.integer)) else tuple(axes)
    return tuple(_axis(name, a, ndim) for a in axes)


def _shape_arg(shape: Any) -> tuple[int, ...]:
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)


def _key_fill(name: str, fill: Any, shape: tuple[int, ...], width: int = 2) -> Any:
    """Key data of ``shape`` filled with ``fill`` (a key, or an integer written
    into every key word, as JAX fills the key data)."""
    if isinstance(fill, PRNGKeyArray):
        return rnp.broadcast_to(fill._data, (*shape, width))
    return rnp.full((*shape, width), fill, _U32)


def _class_of(a: dict[str, Any]) -> type[PRNGKeyArray]:
    """The key class of the first key array (or key dtype) among a call's arguments."""
    for value in a.values():
        for item in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(item, PRNGKeyArray):
                return type(item)
            if isinstance(item, KeyDtype):
                return _KEY_CLASSES[item.impl]
    return PRNGKeyArray


def _numpy_rule(name: str, fn: Any, a: dict[str, Any]) -> Any:
    short = name.split(".", 1)[1]
    cls = _class_of(a)
    if short in ("reshape", "ravel"):
        keys = _keys_arg(short, a.get("a"))
        shape = (-1,) if short == "ravel" else _shape_arg(a["shape"])
        return keys.reshape(shape)
    if short == "tile":
        keys = _keys_arg(short, a["A"])
        reps = _shape_arg(a["reps"])
        reps = (1,) * (keys.ndim - len(reps)) + reps
        return cls(fn(keys._data, (*reps, 1)))
    if short in ("concatenate", "stack"):
        arrays = a["arrays"]
        parts = (
            list(arrays)
            if isinstance(arrays, PRNGKeyArray)
            else [_keys_arg(short, k) for k in arrays]
        )
        axis = a["axis"]
        if short == "concatenate" and axis is None:
            parts, axis = [k.reshape(-1) for k in parts], 0
        ndim = parts[0].ndim + (short == "stack")
        return cls(fn([k._data for k in parts], axis=_axis(short, axis, ndim)))
    if short == "broadcast_to":
        keys = _keys_arg(short, a["array"])
        return cls(fn(keys._data, (*_shape_arg(a["shape"]), cls._width)))
    if short == "expand_dims":
        keys = _keys_arg(short, a["a"])
        axes = (a["axis"],) if isinstance(a["axis"], (int, np.integer)) else tuple(a["axis"])
        return cls(fn(keys._data, _axes(short, axes, keys.ndim + len(axes))))
    if short == "broadcast_arrays":
        parts = [_keys_arg(short, k) for k in a["args"]]
        return [cls(d) for d in fn(*(k._data for k in parts))]
    if short == "append":
        keys, values = _keys_arg(short, a["arr"]), _keys_arg(short, a["values"])
        if a["axis"] is None:
            keys, values, axis = keys.reshape(-1), values.reshape(-1), 0
        else:
            axis = _axis(short, a["axis"], keys.ndim)
        return cls(rnp.concatenate([keys._data, values._data], axis=axis))
    if short in ("array", "asarray"):
        keys = _keys_arg(short, a["object" if short == "array" else "a"])
        if a["dtype"] is not None:
            _check_conversion(keys, a["dtype"])
        return keys.copy() if a.get("copy") else keys
    if short == "astype":
        return _convert(a["x"], a["dtype"])
    if short in ("empty_like", "zeros_like", "ones_like", "full_like"):
        keys = _keys_arg(short, a["prototype" if short == "empty_like" else "a"])
        shape = keys.shape if a["shape"] is None else _shape_arg(a["shape"])
        fill = a["fill_value"] if short == "full_like" else int(short == "ones_like")
        if a["dtype"] is not None and not isinstance(a["dtype"], KeyDtype):
            return rnp.full(shape, fill, a["dtype"])
        return cls(_key_fill(short, fill, shape, cls._width))
    if short in ("empty", "zeros", "ones", "full"):
        dtype = a["dtype"]
        fill = a["fill_value"] if short == "full" else int(short == "ones")
        if dtype is not None and not isinstance(dtype, KeyDtype):
            raise _refuse(short)  # a key fill value for a numeric dtype
        return cls(_key_fill(short, fill, _shape_arg(a["shape"]), cls._width))
    if short in ("shape", "ndim"):
        return getattr(_keys_arg(short, a["a"]), short)
    if short == "size":
        dims = _keys_arg(short, a["a"]).shape
        axis = a["axis"]
        axes = tuple(range(len(dims))) if axis is None else _axes(short, axis, len(dims))
        return math.prod(dims[k] for k in axes)
    if short == "result_type":
        if all(isinstance(x, (PRNGKeyArray, KeyDtype)) for x in a["args"]):
            return _KEY_DTYPES[cls._impl_name]
        raise TypeError("result_type: typed PRNG keys do not promote with other types")
    if short == "transpose":
        keys = _keys_arg(short, a["a"])
        return keys.transpose(a["axes"]) if a["axes"] is not None else keys.transpose()
    if short == "squeeze":
        keys = _keys_arg(short, a["a"])
        axis = a["axis"]
        axes = (
            tuple(i for i, d in enumerate(keys.shape) if d == 1)
            if axis is None
            else _axes(short, axis, keys.ndim)
        )
        return cls(fn(keys._data, axes))
    if short == "swapaxes":
        keys = _keys_arg(short, a["a"])
        ax1, ax2 = (_axis(short, a[k], keys.ndim) for k in ("axis1", "axis2"))
        return cls(fn(keys._data, ax1, ax2))
    if short == "moveaxis":
        keys = _keys_arg(short, a["a"])
        src, dst = (_axes(short, a[k], keys.ndim) for k in ("source", "destination"))
        return cls(fn(keys._data, src, dst))
    if short == "where":
        if a["x"] is None or a["y"] is None:
            raise _refuse("where")  # where(keys) compares keys with zero
        x, y = a["x"], a["y"]
        if (
            not (isinstance(x, PRNGKeyArray) and isinstance(y, PRNGKeyArray))
            or x._impl_name != y._impl_name
        ):
            raise ValueError(
                f"where: dtype={_KEY_DTYPES[cls._impl_name]} "
                "is not a valid dtype for JAX type promotion (keys combine only with "
                "keys of their own implementation)"
            )
        return cls(fn(rnp.expand_dims(a["condition"], -1), x._data, y._data))
    if short in ("equal", "not_equal"):
        x, y = a["x"], a["y"]
        if not (isinstance(x, PRNGKeyArray) and isinstance(y, PRNGKeyArray)):
            keys, other = (x, y) if isinstance(x, PRNGKeyArray) else (y, x)
            _refuse_comparison(short, keys, other)
            raise _refuse(short)
        return x == y if short == "equal" else x != y
    if short == "flip":
        keys = _keys_arg(short, a["m"])
        axes = tuple(range(keys.ndim)) if a["axis"] is None else _axes(short, a["axis"], keys.ndim)
        return cls(fn(keys._data, axes))
    raise _refuse(short)


def _check_conversion(keys: PRNGKeyArray, dtype: Any) -> PRNGKeyArray:
    """``keys`` converted to ``dtype``: JAX 0.10.2 converts a key array only to
    its own key dtype (it is returned as it is); any other dtype is its
    ``ValueError`` (``jnp.astype``, ``lax.convert_element_type``, ``jnp.asarray``
    with a dtype, a traced key's ``astype``)."""
    if dtype == keys.dtype:
        return keys
    raise ValueError(f"Cannot convert_element_type from {keys.dtype} to {_target_name(dtype)}")


def _target_name(dtype: Any) -> Any:
    """The conversion's target as JAX names it: canonical (``int`` is int32
    without x64), or the key dtype itself."""
    if isinstance(dtype, KeyDtype):
        return dtype
    try:
        return dtypes.canonicalize_dtype(dtype).name
    except TypeError:  # a dtype refimpl has no arrays of: its NumPy name
        return np.dtype(dtype).name


def _convert(value: Any, dtype: Any) -> PRNGKeyArray:
    """``value`` (a key array, or an array converted to a key dtype: the same
    ``ValueError``) converted to ``dtype``."""
    if not _is_keys(value):
        source = tracing.get_aval(value, "convert_element_type", "x").dtype
        raise ValueError(f"Cannot convert_element_type from {source} to {dtype}")
    return _check_conversion(value, dtype)


def _with_word_start(starts: Any) -> tuple:
    """The start indices of a key slice with a start for the key-word axis: a
    zero of the other starts' dtype (the starts of dynamic_slice share one)."""
    starts = tuple(starts)
    zero: Any = 0
    if starts and not isinstance(starts[-1], (int, bool)):
        dtype = tracing.get_aval(starts[-1], "dynamic_slice", "start_indices").dtype
        zero = np.zeros((), dtype)[()]
    return (*starts, zero)


def _lax_rule(name: str, fn: Any, a: dict[str, Any]) -> Any:
    short = name.split(".", 1)[1]
    cls = _class_of(a)
    if short == "convert_element_type":
        return _convert(a["x"], a["new_dtype"])
    if short in ("select", "select_n"):
        which = a["pred" if short == "select" else "which"]
        cases = [a["on_true"], a["on_false"]] if short == "select" else list(a["cases"])
        cases = [_keys_arg(short, c) for c in cases]
        if _is_keys(which):
            raise _refuse(short)
        if np.ndim(which):  # a predicate per key: the same for both of its words
            shape = cases[0]._data.shape
            which = lax.broadcast_in_dim(which, shape, tuple(range(len(shape) - 1)))
        return cls(fn(which, *(c._data for c in cases)))
    operand_name = "array" if short in ("squeeze", "expand_dims") else "operand"
    if short == "concatenate":
        parts = [_keys_arg(short, k) for k in a["operands"]]
        axis = _axis(short, a["dimension"], parts[0].ndim)
        return cls(fn([k._data for k in parts], axis))
    keys = _keys_arg(short, a[operand_name])
    data, ndim = keys._data, keys.ndim
    rest = {k: v for k, v in a.items() if k != operand_name}
    if short in ("slice_in_dim", "dynamic_slice_in_dim", "index_in_dim", "dynamic_index_in_dim"):
        rest["axis"] = _axis(short, rest["axis"], ndim)
        return cls(fn(data, **rest))
    if short == "dynamic_update_slice_in_dim":
        rest["update"] = _keys_arg(short, rest["update"])._data
        rest["axis"] = _axis(short, rest["axis"], ndim)
        return cls(fn(data, **rest))
    if short == "slice":
        strides = rest["strides"]
        return cls(
            fn(
                data,
                (*rest["start_indices"], 0),
                (*rest["limit_indices"], cls._width),
                None if strides is None else (*strides, 1),
            )
        )
    if short == "dynamic_slice":
        starts = _with_word_start(rest.pop("start_indices"))
        sizes = (*rest.pop("slice_sizes"), cls._width)
        return cls(fn(data, starts, sizes, **rest))
    if short == "dynamic_update_slice":
        update = _keys_arg(short, rest.pop("update"))._data
        starts = _with_word_start(rest.pop("start_indices"))
        return cls(fn(data, update, starts, **rest))
    if short == "transpose":
        perm = _axes(short, a["permutation"], ndim)
        return cls(fn(data, (*perm, ndim)))
    if short == "reshape":
        dims = a["dimensions"]
        dims = None if dims is None else (*_axes(short, dims, ndim), ndim)
        return cls(fn(data, (*a["new_sizes"], cls._width), dims))
    if short in ("squeeze", "rev"):
        return cls(fn(data, _axes(short, a["dimensions"], ndim)))
    if short == "expand_dims":
        dims = tuple(a["dimensions"])
        return cls(fn(data, _axes(short, dims, ndim + len(dims))))
    if short == "broadcast_in_dim":
        shape = tuple(a["shape"])
        bdims = (*a["broadcast_dimensions"], len(shape))
        return cls(fn(data, (*shape, cls._width), bdims))
    if short == "broadcast":
        return cls(fn(data, **rest))
    raise _refuse(short)


_signatures: dict[Any, inspect.Signature] = {}


def _key_call(name: str, fn: Any, args: tuple, kwargs: dict) -> Any:
    """A numpy or lax function called with key arrays (or the key dtype)."""
    signature = _signatures.get(fn)
    if signature is None:
        signature = _signatures[fn] = inspect.signature(fn)
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    rule = _numpy_rule if name.startswith("numpy.") else _lax_rule
    return rule(name, fn, dict(bound.arguments))


for _cls in _KEY_CLASSES.values():
    extended_arrays.register(_cls, KeyDtype, _key_call)


# --- one jitted program per call, as JAX's jit-decorated samplers ----------------------

# (name, body, backend[, PRNG implementation other than threefry2x32]) -> jit(body)
# on that backend, made on first use (one per implementation: the bit, split and
# fold-in helpers read it while the body is traced)
_programs: dict[tuple, Any] = {}


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
        for leaf in pytree.tree_leaves((data, params)):
            owner = backends.backend_of_array(leaf)
            if owner is not None and owner.name != "ref":
                backend = owner.name
                break
    # a list or tuple argument is one array, not a pytree of scalars
    params = tuple(rnp.asarray(p) if isinstance(p, (list, tuple)) else p for p in params)
    impl = _state.parsed
    cache_key: tuple = (name, body, backend)
    if impl != "threefry2x32":
        cache_key = (*cache_key, impl)
    jitted = _programs.get(cache_key)
    if jitted is None:

        def program(operands: tuple, static: tuple) -> Any:
            return body(operands[0], *static, *operands[1:])

        program.__name__ = program.__qualname__ = name
        jitted = jit(program, static_argnums=1, backend=backend)
        _programs[cache_key] = jitted
    saved = _state.active
    _state.active = impl
    try:
        return jitted((data, *params), static)
    finally:
        _state.active = saved


def _words(data: Any) -> tuple[Any, Any]:
    """The two key words of a single key, as rank-0 uint32 values."""
    k1 = lax.reshape(lax.slice(data, (0,), (1,)), ())
    k2 = lax.reshape(lax.slice(data, (1,), (2,)), ())
    return k1, k2


# --- seeding, splitting, folding --------------------------------------------------------


def _seed_data(name: str, seed: Any) -> Any:
    if isinstance(seed, PRNGKeyArray):
        raise TypeError(f"{name} accepts a scalar seed, but was given a key array")
    if isinstance(seed, np.bool_):
        raise TypeError(f"{name}: seed must be an integer, got {seed!r}")
    if seed is None:  # JAX 0.10.2 converts the seed with jnp.asarray first: its words
        raise ValueError(f"{name}: None is not a valid value for jnp.array (the seed)")
    # a Python bool is a Python int (JAX 0.10.2: PRNGKey(True) is PRNGKey(1)
    # eagerly; under jit it is a bool array, the dtype error below)
    if isinstance(seed, int):
        seed = int(seed)
        if not -(2**63) <= seed < 2**63:  # as JAX: a Python int seed must fit int64
            raise OverflowError("Python int too large to convert to C long")
        if dtypes.x64_enabled():
            seed = np.int64(np.uint64(seed % 2**64).view(np.int64))
        else:  # JAX wraps a Python int seed to int32 when x64 is disabled
            seed = np.int32(np.uint32(seed % 2**32).view(np.int32))
    aval = tracing.get_aval(seed, name, 0)
    if aval.shape:
        raise TypeError(
            f"{name} accepts a scalar seed, but was given an array of shape {aval.shape} != (). "
            "Use vmap for batching"
        )
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
    """A raw key from an integer seed (``jax.random.PRNGKey``): ``uint32[2]``
    for threefry2x32, ``uint32[4]`` for rbg and unsafe_rbg."""
    impl = _check_impl("PRNGKey", impl)
    halfkey = _seed_data("PRNGKey", seed)
    return _user_seed(impl, seed) if impl in _USER_IMPLS else _impl_seed(impl, halfkey)


def key(seed: Any, *, impl: Any = None) -> PRNGKeyArray:
    """A typed key from an integer seed (``jax.random.key``): dtype ``key<fry>``
    (threefry2x32, the default), ``key<rbg>`` or ``key<urbg>``."""
    impl = _check_impl("key", impl)
    halfkey = _seed_data("key", seed)  # (its checks for every implementation)
    if impl in _USER_IMPLS:
        return _KEY_CLASSES[impl](_user_seed(impl, seed))
    return _KEY_CLASSES[impl](_impl_seed(impl, halfkey))


def _impl_seed(impl: str, halfkey: Any) -> Any:
    """rbg keys hold the threefry key twice (JAX's ``_rbg_seed``); the
    counter-hash implementations hash the seed's two words (``halfkey``)."""
    if impl == "threefry2x32":
        return halfkey
    if impl in _COUNTER_HASHES:
        hi, lo = _word(halfkey, 0), _word(halfkey, 1)
        zero = np.uint32(0)
        if impl == "threefry4x32":
            return _stack_words(_threefry4x32(hi, lo, zero, zero, zero, zero, zero, zero), 0)
        if impl == "philox2x32":
            return _stack_words(_philox2x32(zero, hi, lo)[:1], 0)
        return _stack_words(_philox4x32(zero, zero, hi, lo, zero, zero)[:2], 0)
    return lax.concatenate([halfkey, halfkey], 0)


# --- the counter-based hashes of threefry4x32, philox2x32 and philox4x32 ----------------
# Random123's functions as JAX 0.10.2 writes them (jax._src.random.threefry4x32,
# philox2x32, philox4x32): elementwise on uint32 words, operands broadcasting.

_ROTATIONS_4X32 = ((10, 26), (11, 21), (13, 27), (23, 5), (6, 20), (17, 11), (25, 10), (18, 20))
_PHILOX_M2X32 = 0xD256D193
_PHILOX_M4X32 = (0xD2511F53, 0xCD9E8D57)
_PHILOX_W32 = (np.uint32(0x9E3779B9), np.uint32(0xBB67AE85))


def _u32(x: Any) -> Any:
    return rnp.asarray(x, _U32)


def _rotl(x: Any, d: int) -> Any:
    return (x << np.uint32(d)) | (x >> np.uint32(32 - d))


def _threefry4x32(*words: Any) -> list[Any]:
    """Threefry-4x32, 20 rounds: ``(k0..k3, x0..x3) -> 4 words``."""
    k0, k1, k2, k3, x0, x1, x2, x3 = (_u32(w) for w in words)
    ks = [k0, k1, k2, k3, k0 ^ k1 ^ k2 ^ k3 ^ np.uint32(0x1BD11BDA)]
    x0, x1, x2, x3 = x0 + ks[0], x1 + ks[1], x2 + ks[2], x3 + ks[3]
    for rnd in range(20):
        rot0, rot1 = _ROTATIONS_4X32[rnd % 8]
        if rnd % 2 == 0:  # mix (0, 1) and (2, 3)
            x0 = x0 + x1
            x1 = x0 ^ _rotl(x1, rot0)
            x2 = x2 + x3
            x3 = x2 ^ _rotl(x3, rot1)
        else:  # mix (0, 3) and (2, 1)
            x0 = x0 + x3
            x3 = x0 ^ _rotl(x3, rot0)
            x2 = x2 + x1
            x1 = x2 ^ _rotl(x1, rot1)
        if rnd % 4 == 3:  # key injection
            i = rnd // 4
            x0 = x0 + ks[(1 + i) % 5]
            x1 = x1 + ks[(2 + i) % 5]
            x2 = x2 + ks[(3 + i) % 5]
            x3 = x3 + ks[(4 + i) % 5] + np.uint32(1 + i)
    return [x0, x1, x2, x3]


def _philox2x32(k0: Any, x0: Any, x1: Any) -> list[Any]:
    """Philox-2x32, 10 rounds: ``(k0, x0, x1) -> 2 words``."""
    k0, x0, x1 = _u32(k0), _u32(x0), _u32(x1)
    for rnd in range(10):
        if rnd:
            k0 = k0 + _PHILOX_W32[0]
        hi, lo = _mul_u32(x0, _PHILOX_M2X32)
        x0, x1 = hi ^ x1 ^ k0, lo
    return [x0, x1]


def _philox4x32(k0: Any, k1: Any, *words: Any) -> list[Any]:
    """Philox-4x32, 10 rounds: ``(k0, k1, x0..x3) -> 4 words``."""
    k0, k1 = _u32(k0), _u32(k1)
    x0, x1, x2, x3 = (_u32(w) for w in words)
    for rnd in range(10):
        if rnd:
            k0 = k0 + _PHILOX_W32[0]
            k1 = k1 + _PHILOX_W32[1]
        hi0, lo0 = _mul_u32(x0, _PHILOX_M4X32[0])
        hi1, lo1 = _mul_u32(x2, _PHILOX_M4X32[1])
        x0, x1, x2, x3 = hi1 ^ x1 ^ k0, lo1, hi0 ^ x3 ^ k1, lo0
    return [x0, x1, x2, x3]


def _counter_hash(data: Any, c0: Any, c1: Any, c2: Any, c3: Any) -> list[Any]:
    """The hash of the active implementation with key ``data`` on the
    counter words ``c0..c3`` (philox2x32 takes the first two)."""
    impl = _state.active
    if impl == "threefry4x32":
        return _threefry4x32(*(_word(data, i) for i in range(4)), c0, c1, c2, c3)
    if impl == "philox2x32":
        return _philox2x32(_word(data, 0), c0, c1)
    return _philox4x32(_word(data, 0), _word(data, 1), c0, c1, c2, c3)


_COUNTER_HASHES = ("threefry4x32", "philox2x32", "philox4x32")


def _word(data: Any, i: int) -> Any:
    return lax.reshape(lax.slice(data, (i,), (i + 1,)), ())


def _stack_words(words: Sequence[Any], axis: int) -> Any:
    return rnp.stack([_u32(w) for w in words], axis=axis)


def _counter_split(data: Any, shape: tuple[int, ...]) -> Any:
    """Key data of ``shape`` new keys: the hash of each key's row-major index
    (threefry4x32 and philox4x32 in the last counter words, philox2x32 in
    both), as many words as a key has."""
    hi, lo = _iota_2x32(shape)
    zeros = rnp.zeros(shape, _U32)
    if _state.active == "philox2x32":
        words = _counter_hash(data, hi, lo, zeros, zeros)[:1]
    else:
        words = _counter_hash(data, zeros, zeros, hi, lo)[: _IMPLS[_state.active][1]]
    return _stack_words([rnp.broadcast_to(w, shape) for w in words], len(shape))


def _counter_fold_in(kdata: Any, data: Any) -> Any:
    zero = np.uint32(0)
    data = lax.convert_element_type(data, _U32)
    if _state.active == "philox2x32":
        words = _counter_hash(kdata, zero, data, zero, zero)[:1]
    else:
        words = _counter_hash(kdata, zero, zero, zero, data)[: _IMPLS[_state.active][1]]
    return _stack_words(words, 0)


def counter_bits(data: Any, bit_width: int, shape: tuple[int, ...]) -> Any:
    """Random bits of the counter-hash implementations: the hash of each
    element's row-major index (the first counter words); 32 bits are the xor
    of the output words, 8 and 16 its low bits; 64 bits are
    ``(y0 ^ y2) << 32 | (y1 ^ y3)`` for threefry4x32, ``y0 << 32 | y1`` for
    the philox ones."""
    hi, lo = _iota_2x32(shape)
    zeros = rnp.zeros(shape, _U32)
    words = [rnp.broadcast_to(w, shape) for w in _counter_hash(data, hi, lo, zeros, zeros)]
    if bit_width == 64:
        u64 = _UINT_OF_BITS[64]
        if _state.active == "threefry4x32":
            high, low = words[0] ^ words[2], words[1] ^ words[3]
        else:
            high, low = words[0], words[1]
        high = lax.convert_element_type(high, u64)
        return lax.shift_left(high, np.uint64(32)) | lax.convert_element_type(low, u64)
    mixed = words[0]
    for w in words[1:]:
        mixed = mixed ^ w
    if bit_width == 32:
        return mixed
    return lax.convert_element_type(mixed, _UINT_OF_BITS[bit_width])


def _check_impl(name: str, impl: Any) -> str:
    """The implementation's canonical name (``None``: threefry2x32)."""
    if isinstance(impl, PRNGImpl):  # (define_prng_impl's)
        return impl.registered_name
    if impl is not None and not isinstance(impl, str):
        raise TypeError(
            f"{name}: unrecognized type {type(impl)} for specifying PRNG implementation."
        )
    impl = _IMPL_ALIASES.get(impl, impl) if impl is not None else config.default_prng_impl
    if impl not in _IMPLS:
        raise ValueError(
            f'{name}: unrecognized PRNG implementation "{impl}". Did you mean one of: '
            + ", ".join(f'"{known}"' for known in _IMPLS)
            + "?"
        )
    return impl


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


def _concrete_int(d: Any) -> Any:
    """A concrete 0-d integer array as the int it holds; anything else
    unchanged. ``split``'s ``num`` (or an entry of a tuple ``num``) may be
    one, as JAX's ``split(key, jnp.array(3))``, which reads it with
    ``operator.index`` (an array of another rank, a traced one, a float is
    still the TypeError)."""
    concrete = isinstance(d, Array) and not isinstance(d, tracing.Tracer)
    if concrete and d.ndim == 0 and isinstance(d.dtype, np.dtype) and d.dtype.kind in "iu":
        return operator.index(d)
    return d


def _as_shape(name: str, shape: Any) -> tuple[int, ...]:
    """A sampler's shape: integers (JAX 0.10.2's ``canonicalize_shape`` and its
    words for one that is not, e.g. a traced dimension), none negative."""
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        dims = tuple(operator.index(d) for d in shape)
    except TypeError:
        traced = isinstance(shape, Sequence) and any(isinstance(d, tracing.Tracer) for d in shape)
        raise TypeError(f"{name}: {not_a_shape(shape, traced)}") from None
    if any(d < 0 for d in dims):
        raise TypeError(f"{name}: shape must be non-negative ints, got {shape!r}")
    return dims


def split(key: Any, num: int | Sequence[int] = 2) -> Any:
    """``num`` new keys (a leading axis, or the shape ``num``) from one key."""
    data, typed = _key_data_of("split", key)
    # as JAX's: a sequence is the shape, anything else its one dimension
    num = tuple(num) if isinstance(num, Sequence) else (num,)
    shape = _as_shape("split", tuple(_concrete_int(d) for d in num))
    return _wrap(_run("split", _split_data, (shape,), data), typed, _impl_of(key))


def _split_data(data: Any, shape: tuple[int, ...]) -> Any:
    """Key data of ``shape`` new keys, by the traced sampler's implementation:
    threefry hashes the counters; rbg splits each threefry half of its key;
    unsafe_rbg takes every tenth of ``10 * n`` draws of key-sized bits."""
    impl = _state.active
    if impl in _USER_IMPLS:
        return _USER_IMPLS[impl].split(data, shape)
    if impl in _COUNTER_HASHES:
        return _counter_split(data, shape)
    if impl == "rbg":
        halves = [_split_data_threefry(lax.slice(data, (i,), (i + 2,)), shape) for i in (0, 2)]
        return lax.concatenate(halves, len(shape))
    if impl == "unsafe_rbg":
        count = math.prod(shape)
        _, draws = lax.rng_bit_generator(data, (10 * count, 4), _U32)
        return lax.reshape(lax.slice(draws, (0, 0), (10 * count, 4), (10, 1)), (*shape, 4))
    return _split_data_threefry(data, shape)


def _split_data_threefry(data: Any, shape: tuple[int, ...]) -> Any:
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
    if isinstance(data, int) and not isinstance(data, (bool, np.integer)):
        # JAX converts with jnp.uint32: a Python int outside it overflows
        # (NumPy and JAX integers wrap, as their conversions do)
        if not 0 <= data < 2**32:
            raise OverflowError(f"fold_in: Python integer {data} out of bounds for uint32")
        data = np.uint32(data)
    return _wrap(_run("fold_in", _fold_in, (), kdata, data), typed, _impl_of(key))


def _fold_in(kdata: Any, data: Any) -> Any:
    """threefry: ``H(k1, k2, 0, data)``; rbg: that on each threefry half;
    unsafe_rbg: the key xor the last of ten key-sized draws from the rbg key
    seeded with ``data``."""
    impl = _state.active
    if impl in _USER_IMPLS:
        return _USER_IMPLS[impl].fold_in(kdata, lax.convert_element_type(data, _U32))
    if impl in _COUNTER_HASHES:
        return _counter_fold_in(kdata, data)
    if impl == "rbg":
        halves = [_fold_in_threefry(lax.slice(kdata, (i,), (i + 2,)), data) for i in (0, 2)]
        return lax.concatenate(halves, 0)
    if impl == "unsafe_rbg":
        seeded = _impl_seed(impl, _seed_data("fold_in", lax.convert_element_type(data, _U32)))
        _, draws = lax.rng_bit_generator(seeded, (10, 4), _U32)
        return lax.bitwise_xor(kdata, lax.reshape(lax.slice(draws, (9, 0), (10, 4)), (4,)))
    return _fold_in_threefry(kdata, data)


def _fold_in_threefry(kdata: Any, data: Any) -> Any:
    k1, k2 = _words(kdata)
    y1, y2 = lax.threefry2x32(k1, k2, np.uint32(0), lax.convert_element_type(data, _U32))
    return lax.concatenate([lax.broadcast_in_dim(y, (1,), ()) for y in (y1, y2)], 0)


def key_data(keys: Any) -> Any:
    """The uint32 key data under typed keys (raw keys are returned as they are)."""
    data, _ = _key_data_of("key_data", keys, allow_batched=True)
    return data


def wrap_key_data(key_bits_array: Any, *, impl: Any = None) -> PRNGKeyArray:
    """Typed keys over ``uint32[..., 2]`` key data (``uint32[..., 4]`` for rbg
    and unsafe_rbg)."""
    impl = _check_impl("wrap_key_data", impl)
    if isinstance(key_bits_array, PRNGKeyArray):
        raise TypeError("wrap_key_data: the argument is already a key array")
    width = _IMPLS[impl][1]
    data, _ = _key_data_of(
        "wrap_key_data", key_bits_array, allow_batched=True, legacy_check=False, width=width
    )
    if isinstance(data, np.ndarray):
        # NumPy key data is put on the default device, as JAX's: the key array
        # is over a device array (its device, devices(), sharding are that one's)
        data = rnp.asarray(data)
    return _KEY_CLASSES[impl](data)


# JAX 0.10.2's key primitives as functions (jax._src.prng.random_wrap /
# random_unwrap; not exported from jax.random, which has wrap_key_data and
# key_data): its own tests call them. Not in __all__.


def random_wrap(base_arr: Any, *, impl: Any) -> PRNGKeyArray:
    """Typed keys over the key data ``base_arr`` (``impl`` a PRNG
    implementation object): ``wrap_key_data``."""
    return wrap_key_data(base_arr, impl=impl)


def random_unwrap(keys: Any) -> Any:
    """The key data under the typed keys ``keys``; unlike ``key_data``, raw
    key data (a uint32 array) is JAX's TypeError."""
    if not isinstance(keys, PRNGKeyArray):
        dtype = getattr(keys, "dtype", type(keys).__name__)
        raise TypeError(f"random_unwrap takes key array operand, got {dtype}")
    return key_data(keys)


def key_impl(keys: Any) -> Any:
    """The implementation's name, or the ``define_prng_impl`` object of a user's."""
    _key_data_of("key_impl", keys, allow_batched=True)
    impl = _impl_of(keys)
    return _USER_IMPLS.get(impl, impl)


def clone(key: Any) -> Any:
    """The same key (JAX's ``clone`` matters only for its key-reuse checker)."""
    return key


# --- key_dtype -------------------------------------------------------------------------


def key_dtype(impl_spec: Any = None) -> KeyDtype:
    """The dtype of typed keys of a PRNG implementation."""
    return _KEY_DTYPES[_check_impl("key_dtype", impl_spec)]


# --- user-defined implementations (jax.extend.random.define_prng_impl) -----------------


class PRNGImpl:
    """A PRNG implementation given by its functions, as JAX 0.10.2's
    ``define_prng_impl`` takes them: ``seed(seed) -> key data``,
    ``split(data, shape) -> data of shape + key_shape``,
    ``fold_in(data, uint32 scalar) -> data`` and
    ``random_bits(data, bit_width, shape) -> unsigned bits``, on the uint32
    key data of one key (``key_shape``). Compared by identity, as JAX's spec."""

    def __init__(
        self,
        key_shape: tuple[int, ...],
        seed: Any,
        split: Any,
        random_bits: Any,
        fold_in: Any,
        name: str = "<unnamed>",
        tag: str = "?",
    ) -> None:
        self.key_shape = tuple(int(d) for d in key_shape)
        self.seed, self.split, self.random_bits, self.fold_in = seed, split, random_bits, fold_in
        self.name, self.tag = name, tag
        self.registered_name = name

    def __repr__(self) -> str:
        return f"PRNGImpl({self.name!r}, key_shape={self.key_shape})"


# refimpl's name of each user implementation -> the implementation
_USER_IMPLS: dict[str, PRNGImpl] = {}

# refimpl's own implementations as objects (JAX's jax.extend.random.threefry_prng_impl,
# ...): name -> PRNGImpl over the public functions, filled by refimpl.random._impls
_BUILTIN_IMPLS: dict[str, PRNGImpl] = {}


def register_impl(impl: PRNGImpl) -> PRNGImpl:
    """Make ``impl`` one of the implementations ``key``, ``wrap_key_data``,
    ``split``, ``fold_in`` and every sampler dispatch on (under its name,
    made unique when another implementation has it). Key data of one key is
    one axis of words here, so ``key_shape`` must have one dimension."""
    if len(impl.key_shape) != 1:
        raise NotImplementedError(
            f"define_prng_impl: key_shape {impl.key_shape}: refimpl's keys hold one axis of "
            "uint32 words (a key_shape of one dimension)"
        )
    name = impl.name
    if name in _IMPLS:
        name = f"{impl.name}#{len(_USER_IMPLS)}"
    impl.registered_name = name
    _USER_IMPLS[name] = impl
    _IMPLS[name] = (impl.tag, impl.key_shape[0])
    cls = _key_class(name)
    _KEY_CLASSES[name] = cls
    _register_key_class(cls)
    extended_arrays.register(cls, KeyDtype, _key_call)
    _KEY_DTYPES[name] = KeyDtype(name)
    return impl


def _user_seed(impl: str, seed: Any) -> Any:
    """A user implementation's key data of ``seed`` (an integer array)."""
    user = _USER_IMPLS[impl]
    data = rnp.asarray(user.seed(rnp.asarray(seed)))
    if data.shape != user.key_shape:
        raise TypeError(
            f"define_prng_impl({user.name!r}): seed returned key data of shape {data.shape}, "
            f"the implementation's key_shape is {user.key_shape}"
        )
    return data


__all__ = [
    "KeyDtype",
    "PRNGImpl",
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
