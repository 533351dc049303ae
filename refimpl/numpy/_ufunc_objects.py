"""``ufunc`` objects (``jnp.ufunc``, ``frompyfunc``): ``__call__``,
``reduce``, ``accumulate``, ``reduceat``, ``outer`` and ``at`` over a scalar
function, by ``vmap`` and ``scan`` as JAX's.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from refimpl import dtypes, lax
from refimpl.numpy import _math, _reductions, _ufuncs
from refimpl.numpy._creation import arange, asarray, canonical_dtype, full, zeros
from refimpl.numpy._indexing import take
from refimpl.numpy._promote import (
    aval_of,
    checked_array,
    promote_dtypes_inexact,
)
from refimpl.numpy._shape import broadcast_to, concatenate, moveaxis, normalize_axis, reshape
from refimpl.numpy._ufuncs import real, where
from refimpl.numpy._vectorize import vectorize
from refimpl.transforms.batching import vmap
from refimpl.transforms.jit import eval_shape

Array = Any
ArrayLike = Any


def _aval(x: Any, name: str = "rnp", position: Any = 0) -> Any:
    return aval_of(x, name, position)


# --- ufunc objects ---------------------------------------------------------------------


class ufunc:  # noqa: N801  (NumPy's and JAX's name)
    """A scalar function ``func`` of ``nin`` arrays to ``nout`` as a NumPy
    ufunc (``jnp.ufunc``): calling it maps ``func`` over the broadcast
    arguments (:func:`vectorize`); for binary single-output functions,
    ``reduce`` (a ``fori_loop`` folding along one axis), ``accumulate`` (a
    ``scan``), ``reduceat``, ``outer`` (two ``vmap`` s) and ``at`` (a ``scan``
    applying ``func`` at each index in turn, so repeated indices compound).
    ``identity`` starts empty reductions. The module's ufuncs (``rnp.add``
    and the 13 others JAX's ``jnp`` makes ufunc objects) call their own
    function, and ``add.reduce`` is ``sum`` (and so on) as in JAX."""

    def __init__(
        self,
        func: Callable[..., Any],
        /,
        nin: int,
        nout: int,
        *,
        name: str | None = None,
        nargs: int | None = None,
        identity: Any = None,
        call: Callable[..., Any] | None = None,
        reduce: Callable[..., Any] | None = None,
        accumulate: Callable[..., Any] | None = None,
        at: Callable[..., Any] | None = None,
        reduceat: Callable[..., Any] | None = None,
    ) -> None:
        self._func = func
        self.nin, self.nout = operator.index(nin), operator.index(nout)
        self.nargs = operator.index(nargs or nin)
        self.identity = identity
        self.__name__ = name or getattr(func, "__name__", "ufunc")
        self.__doc__ = func.__doc__
        # the module's ufuncs (rnp.add...) run their own functions and
        # reductions (add.reduce is sum), as JAX's do; frompyfunc's fold
        self._call, self._reduce, self._accumulate = call, reduce, accumulate
        self._at, self._reduceat = at, reduceat

    def _key(self) -> tuple:
        return (self._func, self.__name__, self.identity, self.nin, self.nout, self.nargs)

    def __hash__(self) -> int:
        return hash(self._key())

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ufunc) and self._key() == other._key()

    def __repr__(self) -> str:
        return f"<rnp.ufunc {self.__name__!r}>"

    def __call__(self, *args: ArrayLike, out: None = None, where: None = None) -> Any:
        if out is not None or where is not None:
            raise NotImplementedError(f"{self.__name__}: the out= and where= arguments")
        if self._call is not None:
            return self._call(*args)
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__}: takes {self.nin} arguments, got {len(args)}")
        return vectorize(self._func)(*args)

    def _binary(self, method: str) -> None:
        if self.nin != 2 or self.nout != 1:
            raise ValueError(
                f"{self.__name__}.{method}: only for binary ufuncs with one output "
                f"(nin={self.nin}, nout={self.nout})"
            )

    def _result_dtype(self, *args: Any) -> np.dtype:
        probes = [zeros((), _aval(asarray(a)).dtype) for a in args]
        return np.dtype(eval_shape(self._func, *probes).dtype)

    def reduce(
        self,
        a: ArrayLike,
        axis: int | None = 0,
        dtype: Any = None,
        out: None = None,
        keepdims: bool = False,
        initial: ArrayLike = None,
        where: ArrayLike = None,
    ) -> Array:
        """``func`` folded along ``axis`` (the flattened array for ``None``),
        from ``initial`` (or ``identity``, else the first element); ``where``
        skips elements (then ``initial`` or ``identity`` is required)."""
        name = f"{self.__name__}.reduce"
        self._binary("reduce")
        if out is not None:
            raise NotImplementedError(f"{name}: the out argument")
        a = checked_array(name, a)
        start = self.identity if initial is None else initial
        if where is not None:
            where = checked_array(name, where, "where")
            if start is None:
                raise ValueError(
                    f"{name}: reduction operation {self.__name__!r} does not have an identity, "
                    "so to use a where mask one has to specify 'initial'"
                )
            if _aval(where).dtype != np.bool_:
                raise ValueError(
                    f"{name}: where argument must have dtype=bool; got dtype={_aval(where).dtype}"
                )
        if self._reduce is not None:
            return self._reduce(
                a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where
            )
        # the dtype first: JAX's bool subtract.reduce fails there, before the axes
        dtype = self._result_dtype(a, a) if dtype is None else np.dtype(dtype)
        if isinstance(axis, tuple):
            raise NotImplementedError(f"{name}: a tuple of axes")

        if where is not None:
            where = broadcast_to(where, _aval(a).shape)
        if axis is None:
            out_shape = (1,) * _aval(a).ndim if keepdims else ()
            a = reshape(a, (-1,))
            where = None if where is None else reshape(where, (-1,))
        else:
            axis = normalize_axis(name, axis, _aval(a).ndim)
            shape = _aval(a).shape
            out_shape = shape[:axis] + ((1,) if keepdims else ()) + shape[axis + 1 :]
            a = moveaxis(a, axis, 0)
            where = None if where is None else moveaxis(where, axis, 0)
        n = _aval(a).shape[0]
        if n == 0:
            if start is None:
                raise ValueError(
                    f"{name}: zero-size reduction and {self.__name__!r} has no identity"
                )

            return full(out_shape, start, dtype)

        def step(i: Any, acc: Any) -> Any:
            new = self(acc, a[i].astype(dtype))
            return new if where is None else _where(where[i], new, acc)

        first = 0 if start is not None else 1
        acc = a[0] if start is None else start
        acc = broadcast_to(asarray(acc).astype(dtype), _aval(a).shape[1:])
        result = lax.fori_loop(first, n, step, acc)
        return reshape(result, out_shape)

    def accumulate(self, a: ArrayLike, axis: int = 0, dtype: Any = None, out: None = None) -> Array:
        """The running ``func`` fold along ``axis`` (the first element as is)."""
        name = f"{self.__name__}.accumulate"
        self._binary("accumulate")
        if out is not None:
            raise NotImplementedError(f"{name}: the out argument")
        if self._accumulate is not None:
            return self._accumulate(a, axis=axis, dtype=dtype)
        if axis is None or isinstance(axis, tuple):
            raise ValueError(f"{name}: a single integer axis is required")
        a = checked_array(name, a)
        dtype = self._result_dtype(a, a) if dtype is None else np.dtype(dtype)
        axis = normalize_axis(name, axis, _aval(a).ndim)
        if math.prod(_aval(a).shape) == 0:
            return zeros(_aval(a).shape, dtype)
        moved = moveaxis(a, axis, 0).astype(dtype)

        def step(acc: Any, x: Any) -> tuple[Any, Any]:
            # in dtype, as JAX's where(i == 0, first, step) promotes a bool step
            new = asarray(self(acc, x)).astype(dtype)
            return new, new

        _, rest = lax.scan(step, moved[0], moved[1:])
        return moveaxis(concatenate([moved[:1], rest], axis=0), 0, axis)

    def reduceat(
        self, a: ArrayLike, indices: ArrayLike, axis: int = 0, dtype: Any = None, out: None = None
    ) -> Array:
        """``reduce`` over each slice ``a[indices[i]:indices[i+1]]`` along
        ``axis`` (to the end for the last); where ``indices[i] >=
        indices[i+1]`` just ``a[indices[i]]`` (NumPy's rule)."""

        name = f"{self.__name__}.reduceat"
        self._binary("reduceat")
        if out is not None:
            raise NotImplementedError(f"{name}: the out argument")
        if self._reduceat is not None:
            return self._reduceat(a, indices, axis=axis, dtype=dtype)
        a = checked_array(name, a)
        indices = checked_array(name, indices, "indices")
        if _aval(a).ndim == 0 or _aval(indices).ndim != 1:
            raise ValueError(
                f"{name}: a must have a dimension and indices be 1-d, got shapes "
                f"{_aval(a).shape} and {_aval(indices).shape}"
            )
        if axis is None or isinstance(axis, (tuple, list)):
            raise ValueError(f"{name}: a single integer axis is required")
        axis = normalize_axis(name, axis, _aval(a).ndim)
        dtype = _aval(a).dtype if dtype is None else np.dtype(dtype)
        a = moveaxis(a, axis, 0).astype(dtype)
        n = _aval(a).shape[0]
        start = indices
        stop = concatenate([indices[1:], asarray([n]).astype(_aval(indices).dtype)])
        extra = (1,) * (_aval(a).ndim - 1)
        start_b, stop_b = reshape(start, (-1, *extra)), reshape(stop, (-1, *extra))

        def step(i: Any, acc: Any) -> Any:
            inside = (i > start_b) & (i < stop_b)
            return _where(inside, self(acc, a[i]), acc)

        first = take(a, indices, axis=0)
        return moveaxis(lax.fori_loop(0, n, step, first), 0, axis)

    def outer(self, A: ArrayLike, B: ArrayLike, /) -> Array:
        """``func(A[i...], B[j...])`` for every pair: shape ``A.shape + B.shape``."""

        self._binary("outer")
        A = checked_array(f"{self.__name__}.outer", A, 0)
        B = checked_array(f"{self.__name__}.outer", B, 1)
        pairs = vmap(vmap(self, (None, 0)), (0, None))(reshape(A, (-1,)), reshape(B, (-1,)))
        return reshape(pairs, (*_aval(A).shape, *_aval(B).shape))

    def at(
        self, a: ArrayLike, indices: Any, b: ArrayLike = None, /, *, inplace: bool = True
    ) -> Array:
        """``a`` with ``a[idx] = func(a[idx], b_k)`` applied at each index in
        turn (``inplace=False`` required: arrays are immutable)."""
        name = f"{self.__name__}.at"
        if inplace:
            raise NotImplementedError(
                f"{name}: arrays are immutable; pass inplace=False for the updated copy"
            )
        if self._at is not None:
            return self._at(a, indices) if b is None else self._at(a, indices, b)
        operands = [a] if b is None else [a, b]
        a = checked_array(name, a)
        dtype = self._result_dtype(*operands)
        a = a.astype(dtype)
        rest = [] if b is None else [asarray(b).astype(dtype)]
        index = indices if isinstance(indices, tuple) else (indices,)
        arrays = [asarray(i) for i in index if not isinstance(i, slice)]
        shape = tuple(np.broadcast_shapes(*(_aval(i).shape for i in arrays))) if arrays else ()
        if not shape:
            return a.at[indices].set(self(a.at[indices].get(), *rest))

        count = math.prod(shape)
        if rest:
            tail = _aval(rest[0]).shape[len(shape) :] if _aval(rest[0]).ndim > len(shape) else ()
            rest = [reshape(broadcast_to(rest[0], (*shape, *tail)), (count, *tail))]
        flat = [
            i if isinstance(i, slice) else reshape(broadcast_to(asarray(i), shape), (-1,))
            for i in index
        ]

        def step(carry: Any, k: Any) -> tuple[Any, None]:
            where_ = tuple(i if isinstance(i, slice) else i[k] for i in flat)
            args = [r[k] for r in rest]
            return carry.at[where_].set(self(carry.at[where_].get(), *args)), None

        result, _ = lax.scan(step, a, arange(count))
        return result


def frompyfunc(func: Callable[..., Any], /, nin: int, nout: int, *, identity: Any = None) -> ufunc:
    """``func`` as a :class:`ufunc` with ``nin`` inputs and ``nout`` outputs.

    Calling the ufunc maps ``func`` over the broadcast arguments (by
    :func:`vectorize`, so ``func`` sees scalars and must be traceable); a
    binary one-output ufunc also has ``reduce``, ``accumulate``,
    ``reduceat``, ``outer`` and ``at``. Unlike NumPy's (whose results are
    object arrays), the results have the dtypes ``func`` computes.

    Args:
        func: A function of ``nin`` scalars returning ``nout`` values.
        nin: The number of inputs.
        nout: The number of outputs.
        identity: The starting value of reductions of empty arrays (and of
            ``where``-masked ones), or None (keyword-only).

    Returns:
        A :class:`ufunc` object.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> add = rnp.frompyfunc(lambda x, y: x + y, 2, 1, identity=0)
        >>> add(rnp.array([1, 2]), 10)
        Array([11, 12], dtype=int32)
        >>> add.reduce(rnp.array([1, 2, 3]))
        Array(6, dtype=int32)
    """
    return ufunc(func, nin, nout, identity=identity)


def _where(condition: Any, x: Any, y: Any) -> Any:
    return where(condition, x, y)


# --- the module's ufuncs: rnp.add and the others JAX's jnp makes ufunc objects ------------


def _at_update(method: str, counts_bool: bool) -> Callable[..., Any]:
    """``ufunc.at`` as one scatter (``a.at[indices].add(b)``); bool operands
    counted in int32 and tested back, as JAX's add.at and multiply.at."""

    def at(a: ArrayLike, indices: Any, b: ArrayLike) -> Array:
        a = asarray(a)
        if counts_bool and _aval(a).dtype == np.bool_:
            b = asarray(b).astype(np.bool_).astype(np.int32)
            return getattr(a.astype(np.int32).at[indices], method)(b).astype(np.bool_)
        return getattr(a.at[indices], method)(b)

    return at


def _require_integer(name: str) -> Callable[[Any], Any]:
    def check(a: Any) -> Any:
        dtype = _aval(a, name).dtype
        if not (dtypes.is_integer(dtype) or dtypes.is_bool(dtype)):
            raise ValueError(f"{name}: integer argument required; got dtype={dtype}")
        return a

    return check


def _to_bool(a: Any) -> Any:
    """Nonzero test; complex numbers by their real part (as JAX's logical reductions)."""
    a = asarray(a)
    if dtypes.is_complex(_aval(a).dtype):
        a = real(a)
    return a.astype(np.bool_)


def _reduce_xor(a: Any, axes: tuple[int, ...]) -> Any:
    zero = np.zeros((), _aval(a).dtype)
    return lax.reduce(a, zero, lax.bitwise_xor, axes)


def _all_ones(dtype: np.dtype) -> Any:
    return np.array(-1).astype(dtype)


def _bitwise_reduction(name: str, reduce: Callable, combine: Callable, identity: Callable) -> Any:
    return _reductions._Reduction(
        f"{name}.reduce", reduce, combine, identity, preprocess=_require_integer(f"{name}.reduce")
    )


def _logical_reduction(name: str, reduce: Callable, combine: Callable, identity: Callable) -> Any:
    return _reductions._Reduction(f"{name}.reduce", reduce, combine, identity, preprocess=_to_bool)


def _logsumexp(
    a: ArrayLike,
    axis: Any = None,
    dtype: Any = None,
    keepdims: bool = False,
    initial: ArrayLike = None,
    where: ArrayLike = None,
) -> Array:
    """``logaddexp.reduce``: log(sum(exp(a))) shifted by the (finite) maximum,
    as JAX's; ``dtype`` is checked but unused, as there."""
    name = "logaddexp.reduce"
    if dtype is not None:
        canonical_dtype(name, dtype)
    (a,) = promote_dtypes_inexact(name, a)
    shape = _aval(a).shape
    axes = _reductions.reduction_axes(name, axis, len(shape))
    amax = _reductions.max(real(a), axes, keepdims=keepdims, where=where, initial=-np.inf)
    amax = lax.stop_gradient(lax.select(lax.is_finite(amax), amax, lax.full_like(amax, 0)))
    amax_dims = amax if keepdims else lax.expand_dims(amax, axes)
    exp_a = lax.exp(lax.sub(a, amax_dims.astype(_aval(a).dtype)))
    sumexp = _reductions.sum(exp_a, axes, keepdims=keepdims, where=where)
    result = lax.add(lax.log(sumexp), amax.astype(_aval(sumexp).dtype))
    return result if initial is None else _math.logaddexp(initial, result)


def _logsumexp2(
    a: ArrayLike,
    axis: Any = None,
    dtype: Any = None,
    keepdims: bool = False,
    initial: ArrayLike = None,
    where: ArrayLike = None,
) -> Array:
    """``logaddexp2.reduce``: ``logaddexp.reduce`` of ``a ln 2``, over ``ln 2``."""
    ln2 = float(np.log(2))
    if initial is not None:
        initial = initial * ln2
    a = checked_array("logaddexp2.reduce", a)
    scaled = _logsumexp(a * ln2, axis, dtype, keepdims, initial, where)
    return scaled / ln2


class _ModuleUfunc(ufunc):
    """``rnp.add`` and the module's other ufunc objects. Calling one is
    calling its function: each has its own class whose ``__call__`` *is* that
    function (the eager fast path's wrapper once ``refimpl.numpy`` installs
    it, :meth:`install_call`), so ``rnp.add(x, y)`` costs what the function
    does, with no Python frame of the object's own (on PJRT arrays the C++
    eager fast path serves it). ``__wrapped__`` and the fast path's
    ``_eager_*`` introspection are the function's, as for the module's other
    functions."""

    def install_call(self, call: Callable[..., Any]) -> None:
        self._call = call
        type(self).__call__ = staticmethod(call)  # type: ignore[method-assign]

    def __getattr__(self, name: str) -> Any:
        if name == "__wrapped__" or name.startswith("_eager"):  # the fast path's counters
            return getattr(self.__dict__["_call"], name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


def _module_ufunc(
    func: Callable[..., Any], nin: int, identity: Any = None, **methods: Any
) -> ufunc:
    cls = type(f"ufunc_{func.__name__}", (_ModuleUfunc,), {"__module__": __name__})
    made = cls(func, nin, 1, name=func.__name__, identity=identity, call=func, **methods)
    made.install_call(func)
    return made


negative = _module_ufunc(_ufuncs.negative, 1)
add = _module_ufunc(
    _ufuncs.add,
    2,
    0,
    reduce=_reductions.sum,
    accumulate=_reductions.cumsum,
    at=_at_update("add", counts_bool=True),
)
multiply = _module_ufunc(
    _ufuncs.multiply,
    2,
    1,
    reduce=_reductions.prod,
    accumulate=_reductions.cumprod,
    at=_at_update("multiply", counts_bool=True),
)
subtract = _module_ufunc(_ufuncs.subtract, 2, at=_at_update("subtract", counts_bool=False))
maximum = _module_ufunc(_ufuncs.maximum, 2, reduce=_reductions._max)
minimum = _module_ufunc(_ufuncs.minimum, 2, reduce=_reductions._min)
bitwise_and = _module_ufunc(
    _ufuncs.bitwise_and,
    2,
    -1,
    reduce=_bitwise_reduction("bitwise_and", lax.reduce_and, lax.bitwise_and, _all_ones),
)
bitwise_or = _module_ufunc(
    _ufuncs.bitwise_or,
    2,
    0,
    reduce=_bitwise_reduction("bitwise_or", lax.reduce_or, lax.bitwise_or, dtypes.zero),
)
bitwise_xor = _module_ufunc(
    _ufuncs.bitwise_xor,
    2,
    0,
    reduce=_bitwise_reduction("bitwise_xor", _reduce_xor, lax.bitwise_xor, dtypes.zero),
)
logical_and = _module_ufunc(
    _ufuncs.logical_and,
    2,
    True,
    reduce=_logical_reduction("logical_and", lax.reduce_and, lax.bitwise_and, dtypes.one),
)
logical_or = _module_ufunc(
    _ufuncs.logical_or,
    2,
    False,
    reduce=_logical_reduction("logical_or", lax.reduce_or, lax.bitwise_or, dtypes.zero),
)
logical_xor = _module_ufunc(
    _ufuncs.logical_xor,
    2,
    False,
    reduce=_logical_reduction("logical_xor", _reduce_xor, lax.bitwise_xor, dtypes.zero),
)
logaddexp = _module_ufunc(_math.logaddexp, 2, -np.inf, reduce=_logsumexp)
logaddexp2 = _module_ufunc(_math.logaddexp2, 2, -np.inf, reduce=_logsumexp2)
MODULE_UFUNCS = (
    "add", "bitwise_and", "bitwise_or", "bitwise_xor", "logaddexp", "logaddexp2", "logical_and",
    "logical_or", "logical_xor", "maximum", "minimum", "multiply", "negative", "subtract",
)  # fmt: skip


# the module ufuncs are exported by refimpl.numpy in place of _ufuncs' functions
__all__ = ["frompyfunc", "ufunc"]
