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

from refimpl import lax
from refimpl.numpy._creation import arange, asarray, full, zeros
from refimpl.numpy._indexing import take
from refimpl.numpy._promote import (
    aval_of,
    checked_array,
)
from refimpl.numpy._shape import broadcast_to, concatenate, moveaxis, normalize_axis, reshape
from refimpl.numpy._ufuncs import where
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
    ``identity`` starts empty reductions. The module's own functions
    (``rnp.add``...) are plain functions, not ufunc objects."""

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
    ) -> None:
        self._func = func
        self.nin, self.nout = operator.index(nin), operator.index(nout)
        self.nargs = operator.index(nargs or nin)
        self.identity = identity
        self.__name__ = name or getattr(func, "__name__", "ufunc")
        self.__doc__ = func.__doc__

    def __repr__(self) -> str:
        return f"<rnp.ufunc {self.__name__!r}>"

    def __call__(self, *args: ArrayLike, out: None = None, where: None = None) -> Any:
        if out is not None or where is not None:
            raise NotImplementedError(f"{self.__name__}: the out= and where= arguments")
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
        if isinstance(axis, tuple):
            raise NotImplementedError(f"{name}: a tuple of axes")
        a = checked_array(name, a)
        start = self.identity if initial is None else initial
        if where is not None:
            where = checked_array(name, where, "where")
            if _aval(where).dtype != np.bool_:
                raise ValueError(f"{name}: where must be boolean, got {_aval(where).dtype}")
            if start is None:
                raise ValueError(
                    f"{name}: {self.__name__!r} has no identity: a where mask needs initial"
                )
        dtype = self._result_dtype(a, a) if dtype is None else np.dtype(dtype)

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
        if axis is None or isinstance(axis, tuple):
            raise ValueError(f"{name}: a single integer axis is required")
        a = checked_array(name, a)
        dtype = self._result_dtype(a, a) if dtype is None else np.dtype(dtype)
        axis = normalize_axis(name, axis, _aval(a).ndim)
        if math.prod(_aval(a).shape) == 0:
            return zeros(_aval(a).shape, dtype)
        moved = moveaxis(a, axis, 0).astype(dtype)

        def step(acc: Any, x: Any) -> tuple[Any, Any]:
            new = self(acc, x)
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
    """``func`` as a :class:`ufunc` with ``nin`` inputs and ``nout`` outputs."""
    return ufunc(func, nin, nout, identity=identity)


def _where(condition: Any, x: Any, y: Any) -> Any:
    return where(condition, x, y)


__all__ = [
    "frompyfunc",
    "ufunc",
]
