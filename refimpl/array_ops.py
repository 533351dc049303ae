"""Operators and methods shared by every array-like (Tracer, ref Array, ...).

Each one forwards to the ``refimpl.numpy`` function of the same meaning, so
operators get exactly NumPy-style broadcasting and JAX's type promotion.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

# What the methods forward to, installed by the user surface above this module
# (refimpl/numpy/__init__.py: "numpy", "lax", "dlpack" modules and the "at"
# helper), so that the array types import none of it.
_numpy_module: Any = None
_installed: dict[str, Any] = {}


def install(name: str, implementation: Any) -> None:
    """Make the array methods forward to ``implementation`` (see above)."""
    global _numpy_module
    _installed[name] = implementation
    if name == "numpy":
        _numpy_module = implementation


def _rnp() -> Any:
    if _numpy_module is None:
        raise RuntimeError("array operators used before refimpl.numpy installed them")
    return _numpy_module


# Operands without asking ``is_operand`` (the common ``x + 1``, ``x * y``).
_NUMBERS = frozenset({int, float, complex, bool})


# Python containers an operator refuses outright (a TypeError, as JAX 0.10.2's,
# rather than NotImplemented): `x == [1, 2]` would otherwise be False, and
# `x + [1]`, `x * (2,)` would read as concatenation or repetition. By exact
# type, so a NamedTuple or other subclass still gets to define the operator.
_SEQUENCES = frozenset({list, tuple})
_REJECTED = {
    "equal": ("==", frozenset({list, tuple, set, dict})),
    "not_equal": ("==", frozenset({list, tuple, set, dict})),  # JAX's message says ==
    "add": ("+", _SEQUENCES),
    "multiply": ("*", _SEQUENCES),
}


def _binary(name: str, reflected: bool = False) -> Callable[[Any, Any], Any]:
    def method(self: Any, other: Any) -> Any:
        rnp = _rnp()
        kind = type(other)
        if kind not in _NUMBERS and hasattr(other, "__jax_array__"):
            # JAX's operators convert such an object (elsewhere it is a ValueError)
            other = other.__jax_array__()
            kind = type(other)
        if kind not in _NUMBERS and kind is not type(self) and not rnp.is_operand(other):
            symbol, rejected = _REJECTED.get(name, ("", frozenset()))
            if kind in rejected:
                # JAX's words name its array class, ArrayImpl; refimpl's arrays
                # (RefArray, PjrtArray) stand for it, so the message says that
                array, other_name = "ArrayImpl", kind.__name__
                first, second = (other_name, array) if reflected else (array, other_name)
                raise TypeError(
                    f"unsupported operand type(s) for {symbol}: {first!r} and {second!r}"
                )
            return NotImplemented
        fn = getattr(rnp, name)
        return fn(other, self) if reflected else fn(self, other)

    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    return method


def _unary(name: str) -> Callable[[Any], Any]:
    def method(self: Any) -> Any:
        return getattr(_rnp(), name)(self)

    return method


# Rows per chunk when an array is iterated (JAX's _chunk_iter size)
_ITER_CHUNK = 100


def _rows(x: Any) -> Any:
    """The rows of ``x``, as JAX 0.10.2 iterates an array: on one device (an
    array over several is gathered to its first device once, as JAX yields
    single-device arrays), in chunks of up to 100 rows, each split into rows
    by one operation; so iterating compiles per chunk and row shape, not per
    row index (``list(x)`` of a 40-element pjrt array compiled 40 indexings)."""
    rnp, lax = _rnp(), _installed["lax"]
    sharding = getattr(x, "sharding", None)
    devices = getattr(sharding, "device_set", ())
    if len(devices) > 1:
        x = rnp.asarray(x, device=min(devices, key=lambda d: d.id))
    n = x.shape[0]
    if n == 0:
        return
    sizes = [_ITER_CHUNK] * (n // _ITER_CHUNK) + ([n % _ITER_CHUNK] if n % _ITER_CHUNK else [])
    row_shape = tuple(x.shape[1:])
    for chunk in lax.split(x, sizes) if len(sizes) > 1 else [x]:
        for row in lax.split(chunk, [1] * chunk.shape[0]):
            yield row.reshape(row_shape)


class ArrayOps:
    __slots__ = ()

    def __iter__(self) -> Any:
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return _rows(self)

    if TYPE_CHECKING:
        # every array type given these methods has them
        dtype: Any
        size: Any
        ndim: Any

    __add__ = _binary("add")
    __radd__ = _binary("add", reflected=True)
    __sub__ = _binary("subtract")
    __rsub__ = _binary("subtract", reflected=True)
    __mul__ = _binary("multiply")
    __rmul__ = _binary("multiply", reflected=True)
    __truediv__ = _binary("true_divide")
    __rtruediv__ = _binary("true_divide", reflected=True)
    __floordiv__ = _binary("floor_divide")
    __rfloordiv__ = _binary("floor_divide", reflected=True)
    __mod__ = _binary("remainder")
    __rmod__ = _binary("remainder", reflected=True)
    __pow__ = _binary("power")
    __rpow__ = _binary("power", reflected=True)
    __matmul__ = _binary("matmul")
    __rmatmul__ = _binary("matmul", reflected=True)
    __and__ = _binary("bitwise_and")
    __rand__ = _binary("bitwise_and", reflected=True)
    __or__ = _binary("bitwise_or")
    __ror__ = _binary("bitwise_or", reflected=True)
    __xor__ = _binary("bitwise_xor")
    __rxor__ = _binary("bitwise_xor", reflected=True)
    __lshift__ = _binary("left_shift")
    __rlshift__ = _binary("left_shift", reflected=True)
    __rshift__ = _binary("right_shift")
    __rrshift__ = _binary("right_shift", reflected=True)
    __lt__ = _binary("less")
    __le__ = _binary("less_equal")
    __gt__ = _binary("greater")
    __ge__ = _binary("greater_equal")
    __eq__ = _binary("equal")
    __ne__ = _binary("not_equal")
    __neg__ = _unary("negative")
    __pos__ = _unary("positive")
    __abs__ = _unary("abs")
    __invert__ = _unary("invert")
    __hash__ = None  # type: ignore[assignment]

    def __getitem__(self, index: Any) -> Any:
        return _rnp().getitem(self, index)

    @property
    def at(self) -> Any:
        """Functional indexed updates: ``x.at[idx].set(v)`` (see refimpl/numpy/_at.py)."""
        return _installed["at"](self)

    @property
    def T(self) -> Any:
        return _rnp().transpose(self)

    def astype(self, dtype: Any, copy: bool = False, device: Any = None) -> Any:
        return _rnp().astype(self, dtype, copy=copy, device=device)

    def reshape(self, *shape: Any, order: str = "C") -> Any:
        # one argument is the shape, unless it is one size: an int or, as
        # jax.Array.reshape takes it, a 0-d array (x.reshape(np.array(6)))
        if len(shape) == 1 and not isinstance(shape[0], int) and getattr(shape[0], "ndim", 1) != 0:
            shape = tuple(shape[0])
        return _rnp().reshape(self, shape, order=order)

    def transpose(self, *axes: Any) -> Any:
        if len(axes) == 1 and not hasattr(axes[0], "__index__"):
            # one argument: None or a sequence of axes; an int-like (a NumPy
            # integer too) is the 1-d permutation, as jax.Array.transpose
            axes = tuple(axes[0]) if axes[0] is not None else ()
        return _rnp().transpose(self, axes or None)

    def sum(self, *args: Any, **kwargs: Any) -> Any:
        return _rnp().sum(self, *args, **kwargs)

    def prod(self, *args: Any, **kwargs: Any) -> Any:
        return _rnp().prod(self, *args, **kwargs)

    def mean(self, *args: Any, **kwargs: Any) -> Any:
        return _rnp().mean(self, *args, **kwargs)

    def max(self, *args: Any, **kwargs: Any) -> Any:
        return _rnp().max(self, *args, **kwargs)

    def min(self, *args: Any, **kwargs: Any) -> Any:
        return _rnp().min(self, *args, **kwargs)

    def all(self, *args: Any, **kwargs: Any) -> Any:
        return _rnp().all(self, *args, **kwargs)

    def any(self, *args: Any, **kwargs: Any) -> Any:
        return _rnp().any(self, *args, **kwargs)

    def argmax(self, *args: Any, **kwargs: Any) -> Any:
        return _rnp().argmax(self, *args, **kwargs)

    def argmin(self, *args: Any, **kwargs: Any) -> Any:
        return _rnp().argmin(self, *args, **kwargs)

    def cumsum(self, *args: Any, **kwargs: Any) -> Any:
        return _rnp().cumsum(self, *args, **kwargs)

    def squeeze(self, axis: Any = None) -> Any:
        return _rnp().squeeze(self, axis=axis)

    def swapaxes(self, axis1: int, axis2: int) -> Any:
        return _rnp().swapaxes(self, axis1, axis2)

    def flatten(self, order: str = "C") -> Any:
        return _rnp().ravel(self, order=order)

    def ravel(self, order: str = "C") -> Any:
        return _rnp().ravel(self, order=order)

    def clip(self, min: Any = None, max: Any = None) -> Any:
        return _rnp().clip(self, min, max)

    def dot(self, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
        return _rnp().dot(
            self, b, precision=precision, preferred_element_type=preferred_element_type
        )

    def conj(self) -> Any:
        return _rnp().conj(self)

    def conjugate(self) -> Any:
        return _rnp().conjugate(self)

    def cumprod(self, *args: Any, **kwargs: Any) -> Any:
        return _rnp().cumprod(self, *args, **kwargs)

    def std(self, *args: Any, **kwargs: Any) -> Any:
        return _rnp().std(self, *args, **kwargs)

    def var(self, *args: Any, **kwargs: Any) -> Any:
        return _rnp().var(self, *args, **kwargs)

    def ptp(self, *args: Any, **kwargs: Any) -> Any:
        return _rnp().ptp(self, *args, **kwargs)

    def round(self, decimals: int = 0, out: None = None) -> Any:
        return _rnp().round(self, decimals, out=out)  # (out: NumPy's protocol, None only)

    def __round__(self, ndigits: int | None = None) -> Any:
        out = _rnp().round(self, ndigits or 0)
        # round(x) without ndigits is an integer, as round(7.5) of a float (JAX: the default int)
        return out.astype(int) if ndigits is None else out

    def sort(self, axis: int | None = -1, **kwargs: Any) -> Any:
        """The sorted array (``jax.Array.sort``: returns it, does not sort in place)."""
        return _rnp().sort(self, axis=axis, **kwargs)

    def argsort(self, axis: int | None = -1, **kwargs: Any) -> Any:
        return _rnp().argsort(self, axis=axis, **kwargs)

    def searchsorted(self, v: Any, side: str = "left", sorter: Any = None, **kwargs: Any) -> Any:
        return _rnp().searchsorted(self, v, side=side, sorter=sorter, **kwargs)

    def nonzero(self, **kwargs: Any) -> Any:
        return _rnp().nonzero(self, **kwargs)

    def take(self, indices: Any, axis: int | None = None, **kwargs: Any) -> Any:
        return _rnp().take(self, indices, axis=axis, **kwargs)

    def repeat(self, repeats: Any, axis: int | None = None, **kwargs: Any) -> Any:
        return _rnp().repeat(self, repeats, axis=axis, **kwargs)

    def choose(self, choices: Any, out: None = None, mode: str = "raise") -> Any:
        return _rnp().choose(self, choices, out=out, mode=mode)

    def argpartition(self, kth: int, axis: int = -1) -> Any:
        return _rnp().argpartition(self, kth, axis=axis)

    def view(self, dtype: Any = None, type: Any = None) -> Any:  # noqa: A002
        """The bits read as ``dtype`` (``jax.Array.view``)."""
        return _rnp()._bits.array_view(self, dtype, type)

    def __divmod__(self, other: Any) -> Any:
        return _rnp().divmod(self, other)

    def __rdivmod__(self, other: Any) -> Any:
        return _rnp().divmod(other, self)

    def __array_namespace__(self, *, api_version: str | None = None) -> Any:
        """``refimpl.numpy`` (the array API namespace, as ``jax.numpy`` for
        ``jax.Array``); only the version JAX 0.10.2 names is available."""
        if api_version not in (None, "2024.12"):
            raise ValueError(
                f"__array_namespace__: api_version={api_version!r} is not available; "
                "available versions are: ['2024.12']"
            )
        return _rnp()

    def compress(self, condition: Any, axis: int | None = None, **kwargs: Any) -> Any:
        return _rnp().compress(condition, self, axis=axis, **kwargs)

    def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
        return _rnp().diagonal(self, offset, axis1, axis2)

    def trace(
        self, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None, out: None = None
    ) -> Any:
        return _rnp().trace(self, offset, axis1, axis2, dtype, out=out)

    @property
    def mT(self) -> Any:  # noqa: N802 - the array API's name
        """The matrix transpose: the last two axes swapped."""
        return _rnp().swapaxes(self, -1, -2)

    @property
    def itemsize(self) -> int:
        import numpy as np

        size: int = np.dtype(self.dtype).itemsize
        return size

    @property
    def nbytes(self) -> int:
        import numpy as np

        nbytes: int = int(self.size) * np.dtype(self.dtype).itemsize
        return nbytes

    def copy(self) -> Any:
        """A new array with the same value (its own buffer, on the same backend)."""
        return _installed["lax"].copy(self)

    # copy.copy and copy.deepcopy: a new array with the same value, as JAX
    # (traced: a copy in the trace, never a second tracer object of the same
    # value that no trace knows).
    def __copy__(self) -> Any:
        return self.copy()

    def __deepcopy__(self, memo: Any) -> Any:
        return self.copy()

    # -- DLPack (refimpl.dlpack) --

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: Any = None) -> Any:  # fmt: skip
        return _installed["dlpack"].to_dlpack(
            self, stream=stream, max_version=max_version, dl_device=dl_device, copy=copy
        )

    def __dlpack_device__(self) -> tuple[int, int]:
        device: tuple[int, int] = _installed["dlpack"].dlpack_device(self)
        return device

    @property
    def real(self) -> Any:
        return _rnp().real(self)

    @property
    def imag(self) -> Any:
        return _rnp().imag(self)
