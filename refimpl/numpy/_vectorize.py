"""Mapping a function over arrays: ``vectorize`` (with a gufunc
``signature``, by ``vmap``), ``apply_along_axis`` and ``apply_over_axes``.
"""

from __future__ import annotations

import builtins
import functools
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from refimpl import lax
from refimpl.numpy._creation import asarray
from refimpl.numpy._promote import (
    aval_of,
    checked_array,
)
from refimpl.numpy._shape import broadcast_to, moveaxis, normalize_axis
from refimpl.transforms.batching import vmap

Array = Any
ArrayLike = Any


def _aval(x: Any, name: str = "rnp", position: Any = 0) -> Any:
    return aval_of(x, name, position)


# --- vectorize ----------------------------------------------------------------------------

_DIMENSION = r"\w+"
_CORE = rf"\((?:{_DIMENSION}(?:,{_DIMENSION})*)?\)"
_CORES = rf"{_CORE}(?:,{_CORE})*"
_SIGNATURE = re.compile(rf"^{_CORES}->{_CORES}$")


def _parse_signature(signature: str) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    """``"(m,n),(n)->(m)"`` as ``([("m", "n"), ("n",)], [("m",)])``."""
    compact = signature.replace(" ", "")
    if not _SIGNATURE.match(compact):
        raise ValueError(f"vectorize: not a valid gufunc signature: {signature!r}")
    inputs, outputs = compact.split("->")
    return (
        [tuple(re.findall(_DIMENSION, core)) for core in re.findall(_CORE, inputs)],
        [tuple(re.findall(_DIMENSION, core)) for core in re.findall(_CORE, outputs)],
    )


def _bind_sizes(
    sizes: dict[str, int], shape: tuple[int, ...], core: tuple[str, ...], what: str
) -> None:
    if len(shape) < len(core):
        raise ValueError(
            f"vectorize: {what} has {len(shape)} dims, fewer than its core dims {core}"
        )
    for name, size in zip(core, shape[len(shape) - len(core) :], strict=True):
        if sizes.setdefault(name, size) != size:
            raise ValueError(
                f"vectorize: inconsistent size for core dim {name!r}: {size} in {what}, "
                f"{sizes[name]} before"
            )


def vectorize(
    pyfunc: Callable[..., Any], *, excluded: Any = frozenset(), signature: str | None = None
) -> Callable[..., Any]:
    """``pyfunc`` as a function mapped over the leading dimensions of its array arguments.

    ``pyfunc`` mapped over the broadcast leading ("loop") dims of its array
    arguments by ``vmap``, one ``vmap`` per loop dim. Without ``signature``
    every dim is a loop dim (``pyfunc`` sees scalars); a gufunc ``signature``
    like ``"(m,n),(n)->(m)"`` names each argument's trailing core dims, which
    ``pyfunc`` receives whole (sizes checked for consistency, outputs
    checked against their core dims). ``excluded``: positions (ints) or
    keyword names passed through unmapped; ``None`` arguments pass through too.
    Since ``pyfunc`` runs on traced values, Python control flow on them is a
    TracerBoolConversionError (use :func:`where`).

    Args:
        pyfunc: The function to map.
        excluded: Positions and keyword names of the arguments not mapped
            (keyword-only).
        signature: A gufunc signature, or None for scalar inputs and outputs
            (keyword-only).

    Returns:
        The mapped function (with ``pyfunc``'s name and docstring).

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.vectorize(lambda x, y: x * 10 + y)(rnp.array([1, 2]), rnp.array([[3], [4]]))
        Array([[13, 23],
               [14, 24]], dtype=int32)
        >>> row_sums = rnp.vectorize(lambda v: v.sum(), signature="(n)->()")
        >>> row_sums(rnp.array([[1, 2], [3, 4]]))
        Array([3, 7], dtype=int32)
    """
    if any(not isinstance(e, (int, str)) for e in excluded):
        raise TypeError(f"vectorize: excluded must hold ints and strs, got {excluded!r}")
    if any(isinstance(e, int) and e < 0 for e in excluded):
        raise ValueError(f"vectorize: excluded={excluded!r} contains negative numbers")
    parsed = None if signature is None else _parse_signature(signature)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        fixed_kwargs = {k: v for k, v in kwargs.items() if k in excluded}
        mapped_kwargs = {k: v for k, v in kwargs.items() if k not in excluded}
        positions = [i for i, a in enumerate(args) if i not in excluded and a is not None]
        if parsed is None:
            in_cores: list[tuple[str, ...]] = [()] * len(positions)
        else:
            in_cores = parsed[0]
            dynamic = [i for i in builtins.range(len(args)) if i not in excluded]
            if len(dynamic) != len(in_cores):
                raise TypeError(
                    f"vectorize: the signature {signature!r} has {len(in_cores)} inputs, "
                    f"the call passes {len(dynamic)} (excluded={set(excluded)!r})"
                )
            none_cores = [c for i, c in zip(dynamic, in_cores, strict=True) if args[i] is None]
            if any(none_cores):
                raise ValueError("vectorize: None can only be passed for a scalar core ()")
            in_cores = [c for i, c in zip(dynamic, in_cores, strict=True) if args[i] is not None]
        arrays = [asarray(args[i]) for i in positions]
        sizes: dict[str, int] = {}
        loop_shapes = []
        for i, a, core in zip(positions, arrays, in_cores, strict=True):
            shape = _aval(a).shape
            _bind_sizes(sizes, shape, core, f"argument {i}")
            loop_shapes.append(shape[: len(shape) - len(core)])
        loop = tuple(int(d) for d in np.broadcast_shapes(*loop_shapes)) if loop_shapes else ()

        arrays = [
            broadcast_to(a, loop + _aval(a).shape[len(ls) :])
            for a, ls in zip(arrays, loop_shapes, strict=True)
        ]

        def call(*values: Any) -> Any:
            full = list(args)
            for i, value in zip(positions, values, strict=True):
                full[i] = value
            out = pyfunc(*full, **fixed_kwargs, **mapped_kwargs)
            if parsed is not None:
                out_cores = parsed[1]
                outs = out if isinstance(out, tuple) else (out,)
                if len(out_cores) > 1 and not isinstance(out, tuple):
                    raise TypeError(
                        f"vectorize: {len(out_cores)} outputs in the signature, the "
                        "function returned one (not a tuple)"
                    )
                if len(outs) != len(out_cores):
                    raise TypeError(
                        f"vectorize: the signature has {len(out_cores)} outputs, the "
                        f"function returned {len(outs)}"
                    )
                known = dict(sizes)
                for k, (o, core) in enumerate(zip(outs, out_cores, strict=True)):
                    shape = _aval(asarray(o)).shape
                    if len(shape) != len(core):
                        raise ValueError(
                            f"vectorize: output {k} has shape {shape}, the signature's core "
                            f"dims are {core}"
                        )
                    _bind_sizes(known, shape, core, f"output {k}")
            return out

        fn = call
        for _ in loop:
            fn = vmap(fn)
        return fn(*arrays)

    # as JAX 0.10.2's vectorize: functools.wraps (pyfunc's names, module,
    # docstring, attributes; __wrapped__ gives inspect.signature pyfunc's)
    return functools.update_wrapper(wrapped, pyfunc)


def apply_along_axis(
    func1d: Callable[..., Any], axis: int, arr: ArrayLike, *args: Any, **kwargs: Any
):
    """``func1d`` applied to every 1-d slice of ``arr`` along ``axis``.

    By ``vmap`` over the other axes; the function's output dims take the
    place of ``axis``. A 1-d ``arr`` is passed to ``func1d`` as given.

    Args:
        func1d: A function of a 1-d array (and ``args``, ``kwargs``).
        axis: The axis whose slices ``func1d`` receives.
        arr: The input array.
        *args: More positional arguments for ``func1d``.
        **kwargs: Keyword arguments for ``func1d``.

    Returns:
        An array: ``arr``'s other axes around ``func1d``'s output axes.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.apply_along_axis(lambda v: v[0] + v[-1], 1, rnp.array([[1, 2, 3], [4, 5, 6]]))
        Array([ 4, 10], dtype=int32)
    """

    given = arr
    arr = checked_array("apply_along_axis", arr, 2)
    ndim = _aval(arr).ndim
    axis = normalize_axis("apply_along_axis", axis, ndim)
    if ndim == 1:
        # No slice to map over: as JAX 0.10.2, func1d sees the input as given,
        # so a NumPy array in gives func1d's own (NumPy) result back.
        return func1d(given, *args, **kwargs)

    def one(x: Any) -> Any:
        return func1d(x, *args, **kwargs)

    fn = one
    for _ in range(ndim - 1):
        fn = vmap(fn)
    out = fn(moveaxis(arr, axis, -1))
    out_dims = _aval(out).ndim - (ndim - 1)
    return (
        moveaxis(
            out, tuple(range(ndim - 1, ndim - 1 + out_dims)), tuple(range(axis, axis + out_dims))
        )
        if out_dims
        else out
    )


def apply_over_axes(func: Callable[[Any, int], Any], a: ArrayLike, axes: Any) -> Array:
    """``func(a, axis)`` applied for each axis in turn, keeping the rank.

    A reduced axis comes back with size 1, so the next call sees the same
    number of dimensions.

    Args:
        func: A function of an array and an axis (a reduction such as
            :func:`sum`), returning an array of the same rank or one less.
        a: The input array.
        axes: The axes, in order.

    Returns:
        An array of ``a``'s rank.

    Examples:
        >>> import refimpl.numpy as rnp
        >>> rnp.apply_over_axes(rnp.sum, rnp.arange(6).reshape(2, 3), [0, 1])
        Array([[15]], dtype=int32)
    """
    a = checked_array("apply_over_axes", a, 1)
    for axis in axes:
        out = func(a, axis)
        if _aval(out).ndim == _aval(a).ndim - 1:
            out = lax.expand_dims(out, (normalize_axis("apply_over_axes", axis, _aval(a).ndim),))
        a = out
    return a


__all__ = [
    "vectorize",
    "apply_along_axis",
    "apply_over_axes",
]
